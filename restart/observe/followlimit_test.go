package observe

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	k8sworkqueue "k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/discovery"
	"github.com/kick-operator/kick/restart/indexed"
	"github.com/kick-operator/kick/restart/workload"
)

// manyRefs is a Deployment in ns naming n optional Secrets that do not exist.
func manyRefs(ns, name, prefix string, n int) *appsv1.Deployment {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	c := corev1.Container{Name: "app"}
	for i := range n {
		c.EnvFrom = append(c.EnvFrom, corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: fmt.Sprintf("%s-%05d", prefix, i)}, Optional: new(true)}})
	}
	d.Spec.Template.Spec.Containers = []corev1.Container{c}
	return d
}

// withIndex answers the fixture's consumer lookups from an informer-style index holding
// workloads (the fake client's List decodes every matching workload per call).
func (f *fixture) withIndex(workloads ...client.Object) {
	byKind := kindInformers{}
	for _, wk := range f.r.Kinds.Kinds() {
		byKind[wk.Target] = toolscache.NewSharedIndexInformer(&toolscache.ListWatch{}, wk.New(), 0, toolscache.Indexers{
			indexed.IndexName(discovery.SourceIndex): func(obj any) ([]string, error) {
				o := obj.(client.Object)
				var keys []string
				for _, k := range discovery.IndexFunc(o) {
					keys = append(keys, indexed.Key(o.GetNamespace(), k))
				}
				return keys, nil
			}})
	}
	for _, w := range workloads {
		if err := byKind[kickv1alpha1.TargetKind("Deployment")].GetIndexer().Add(w); err != nil {
			f.t.Fatal(err)
		}
	}
	f.r.consumerIndex = &consumerIndex{indexes: indexed.NewIndexes(byKind)}
}

// kindInformers hands out one never-started informer per workload kind.
type kindInformers map[kickv1alpha1.TargetKind]toolscache.SharedIndexInformer

func (k kindInformers) GetInformer(_ context.Context, obj client.Object, _ ...cache.InformerGetOption) (cache.Informer, error) {
	if inf, ok := k[workload.KindOf(obj)]; ok {
		return inf, nil
	}
	return nil, errors.New("no informer")
}

// withSourceCache gives the fixture's reconciler a SourceCache whose Secret store starts empty.
func (f *fixture) withSourceCache() *SourceCache {
	c := NewSourceCache()
	c.adopt(f.r.followed, nil, nil)
	c.NewInformer(&fakeListWatch{w: watch.NewFake()}, SourceMetadata("Secret"), 0, toolscache.Indexers{})
	f.r.sourceCache = c
	return c
}

func (f *fixture) reconcileIn(ns, name string) outcome {
	f.t.Helper()
	out, err := f.r.reconcileSource(context.Background(), sourceKinds[0], types.NamespacedName{Namespace: ns, Name: name})
	if err != nil {
		f.t.Fatalf("reconcile Secret %s/%s: %v", ns, name, err)
	}
	return out
}

func followedCount(c *SourceCache) int {
	followed, _ := c.followStats()
	return followed["Secret"]
}

// TestNamesNobodyCreatedAreNotFollowed plays a tenant whose workloads name thousands of Secrets
// that do not exist: one workload no policy manages, one a policy does (the tenant's own). The
// unmanaged one's names are never read; the managed one's are read within the namespace's
// budget, the rest wait for it without holding a worker, and no missing name stays followed.
// Another namespace's source is read at once meanwhile.
func TestNamesNobodyCreatedAreNotFollowed(t *testing.T) {
	const refs = 5000
	workloads := []client.Object{manyRefs("ns", "unmanaged", "u", refs), manyRefs("ns", "flood", "r", refs), manyRefs("other", "victim", "db", 1)}
	f := newFixture(t, testKey)
	f.withIndex(workloads...)
	f.scope["unmanaged"] = false
	c := f.withSourceCache()

	for i := range refs {
		if out := f.reconcileIn("ns", fmt.Sprintf("u-%05d", i)); out.skipped != "Unconsumed" {
			t.Fatalf("a name only an unmanaged workload references: skipped %q, want Unconsumed", out.skipped)
		}
	}
	if got := f.live.take(); len(got) != 0 {
		t.Errorf("%d reads past the cache for names only an unmanaged workload references, want none", len(got))
	}

	deferred := 0
	for i := range refs {
		out := f.reconcileIn("ns", fmt.Sprintf("r-%05d", i))
		switch {
		case out.skipped == "Deferred" && out.retryAfter > 0:
			deferred++
		case out.skipped != "NotFound":
			t.Fatalf("a missing name: skipped %q", out.skipped)
		}
	}
	if reads := len(f.live.take()); reads != DefaultFetchBurst || deferred != refs-DefaultFetchBurst {
		t.Errorf("the flooding namespace read %d names past the cache and deferred %d, want %d and %d", reads, deferred, DefaultFetchBurst, refs-DefaultFetchBurst)
	}
	if n := followedCount(c); n != 0 {
		t.Errorf("%d names that do not exist stay followed, want none", n)
	}
	if out := f.reconcileIn("other", "db-00000"); out.skipped != "NotFound" || len(f.live.take()) != 1 {
		t.Errorf("another namespace's source waited for the flooding one's budget (skipped %q)", out.skipped)
	}
	// The flooding namespace gets its budget back with time, not before.
	f.now = f.now.Add(time.Second)
	for i := range refs {
		f.reconcileIn("ns", fmt.Sprintf("r-%05d", i))
	}
	if reads := len(f.live.take()); reads != DefaultFetchRate {
		t.Errorf("a second later the flooding namespace read %d names, want %d", reads, DefaultFetchRate)
	}
}

// TestFollowLimits: one namespace filling its bound of followed sources is refused (and
// counted) past it; another namespace still follows its own, up to the total bound; a deletion
// makes room again.
func TestFollowLimits(t *testing.T) {
	lw := &fakeListWatch{w: watch.NewFakeWithChanSize(64, false)}
	var consumed sync.Map
	c, flw, _ := filterFor(t, lw, &consumed)
	c.SetFollowLimits(3, 5)
	feed := c.feeds["Secret"]
	meta := func(ns, name string) *metav1.PartialObjectMetadata {
		m := secretMeta(name, "1")
		m.Namespace = ns
		consumed.Store("Secret/"+name, true)
		return m
	}
	for i := range 10 {
		c.passes(feed, meta("evil", fmt.Sprintf("e%d", i)))
	}
	live := &metaReader{objs: map[string]*metav1.PartialObjectMetadata{"x": meta("evil", "x")}}
	if _, err := c.Fetch(context.Background(), live, "Secret", types.NamespacedName{Namespace: "evil", Name: "x"}); !errors.Is(err, errFollowLimit) || live.gets != 0 {
		t.Errorf("Fetch past the namespace's bound = %v after %d reads, want errFollowLimit without a read", err, live.gets)
	}
	for _, name := range []string{"g0", "g1"} {
		if !c.passes(feed, meta("good", name)) {
			t.Errorf("another namespace's %s was refused", name)
		}
	}
	if c.passes(feed, meta("third", "t0")) {
		t.Error("a source past the total bound passed")
	}
	followed, refused := c.followStats()
	if followed["Secret"] != 5 || refused["Secret"] != 9 {
		t.Errorf("followed %d, refused %d; want 5 and 9 (7 + the Fetch of evil, 1 of third)", followed["Secret"], refused["Secret"])
	}

	w, err := flw.WatchWithContext(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	lw.w.Delete(meta("evil", "e0"))
	if ev := next(t, w); ev.Type != watch.Deleted {
		t.Fatalf("event %s, want the deletion", ev.Type)
	}
	if !c.passes(feed, meta("evil", "e5")) {
		t.Error("after a deletion the namespace is still refused")
	}
}

// TestNamespaceBudgetIsBounded: the budgets of more namespaces than maxBudgets do not pile up,
// and a namespace's budget refills at its rate.
func TestNamespaceBudgetIsBounded(t *testing.T) {
	var b namespaceBudget
	now := time.Unix(1_700_000_000, 0)
	for i := range 3 * maxBudgets {
		if wait := b.take(fmt.Sprintf("ns-%d", i), now, 10, 2); wait != 0 {
			t.Fatalf("a new namespace waits %s for its first read", wait)
		}
	}
	if n := len(b.buckets); n > maxBudgets {
		t.Errorf("%d budgets kept, want at most %d", n, maxBudgets)
	}
	b.take("x", now, 10, 2)
	b.take("x", now, 10, 2)
	if wait := b.take("x", now, 10, 2); wait != 100*time.Millisecond {
		t.Errorf("an empty budget at 10/s waits %s, want 100ms", wait)
	}
	if wait := b.take("x", now.Add(100*time.Millisecond), 10, 2); wait != 0 {
		t.Errorf("after 100ms at 10/s the budget still waits %s", wait)
	}
}

// TestUnmanagedWorkloadsNamesStayOutOfTheQueue: a workload no policy manages naming thousands
// of sources puts none of them in the observer's queue; a managed one puts each.
func TestUnmanagedWorkloadsNamesStayOutOfTheQueue(t *testing.T) {
	managed := func(w client.Object) bool { return w.GetLabels()["kick"] == "managed" }
	h := workloadHandler("Secret", managed)
	q := k8sworkqueue.NewTypedRateLimitingQueue(k8sworkqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()

	flood := manyRefs("ns", "flood", "r", 5000)
	h.Create(context.Background(), event.CreateEvent{Object: flood}, q)
	renamed := manyRefs("ns", "flood", "s", 5000)
	h.Update(context.Background(), event.UpdateEvent{ObjectOld: flood, ObjectNew: renamed}, q)
	if n := q.Len(); n != 0 {
		t.Errorf("an unmanaged workload put %d names in the queue, want none", n)
	}
	renamed.Labels = map[string]string{"kick": "managed"}
	h.Update(context.Background(), event.UpdateEvent{ObjectOld: flood, ObjectNew: renamed}, q)
	if n := q.Len(); n != 5000 {
		t.Errorf("a workload that became managed put %d names in the queue, want 5000", n)
	}
}

// TestStatusUpdatesAreNotReadForSources: a rollout updates its workload's
// status several times; an update that keeps the generation (the spec and
// so the pod template) and the labels asks nothing, not even whether the
// workload is managed. A new generation that names another source is
// followed.
func TestStatusUpdatesAreNotReadForSources(t *testing.T) {
	asked := 0
	h := workloadHandler("Secret", func(client.Object) bool { asked++; return true })
	q := k8sworkqueue.NewTypedRateLimitingQueue(k8sworkqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()

	old := manyRefs("ns", "web", "r", 3)
	old.Generation = 4
	status := old.DeepCopy()
	status.Status.UpdatedReplicas = 1
	// Even a template that differs (which a real status update cannot
	// carry) is not read while the generation says the spec is the same.
	status.Spec.Template.Spec.Containers[0].EnvFrom = nil
	h.Update(context.Background(), event.UpdateEvent{ObjectOld: old, ObjectNew: status}, q)
	if q.Len() != 0 || asked != 0 {
		t.Fatalf("a status update queued %d names and asked %d times, want none", q.Len(), asked)
	}
	respecced := manyRefs("ns", "web", "s", 3)
	respecced.Generation = 5
	h.Update(context.Background(), event.UpdateEvent{ObjectOld: old, ObjectNew: respecced}, q)
	if q.Len() != 3 {
		t.Errorf("a new generation naming 3 other Secrets queued %d names, want 3", q.Len())
	}
}

// TestRenamedNamesAreJudgedOnce plays the soak's rename attack: a managed workload names 1,000
// Secrets nobody created, more than its namespace may read at once, so most reads are sent back
// (some more than once: at most 10 s ahead). Each name is judged for being followed once, when
// its read can be made, not also on each arrival before it.
func TestRenamedNamesAreJudgedOnce(t *testing.T) {
	const refs = 1000
	if checks := renamedNames(t, refs); checks != refs {
		t.Errorf("%d names were judged %d times, want once each", refs, checks)
	}
}

// BenchmarkRenamedNames: the attack of TestRenamedNamesAreJudgedOnce with the soak's 3,000
// names; checks/name is how many times each name was judged.
func BenchmarkRenamedNames(b *testing.B) {
	const refs = 3000
	var checks int
	for b.Loop() {
		checks = renamedNames(b, refs)
	}
	b.ReportMetric(float64(checks)/refs, "checks/name")
}

// renamedNames reconciles the refs names a managed workload references, none of which exists,
// each when it arrives and again whenever its deferred read comes back (at the time it was
// sent back to, in simulated time), until all were read; it returns how many times a name was
// judged for being followed (each judgement asks IsManaged of the workload).
func renamedNames(tb testing.TB, refs int) (checks int) {
	f := newFixture(tb, testKey)
	f.withIndex(manyRefs("ns", "flood", "r", refs))
	isManaged := f.r.IsManaged
	f.r.IsManaged = func(ctx context.Context, w client.Object) (bool, func(map[string]string) bool) {
		checks++
		return isManaged(ctx, w)
	}
	f.withSourceCache()
	type due struct {
		at   time.Time
		name string
	}
	var queue []due
	for i := range refs {
		queue = append(queue, due{f.now, fmt.Sprintf("r-%05d", i)})
	}
	for len(queue) > 0 {
		next := queue[0]
		queue = queue[1:]
		if next.at.After(f.now) {
			f.now = next.at
		}
		out := f.reconcileIn("ns", next.name)
		if out.skipped != "Deferred" {
			continue
		}
		at := f.now.Add(out.retryAfter)
		i, _ := slices.BinarySearchFunc(queue, at, func(d due, t time.Time) int { return d.at.Compare(t) })
		for i < len(queue) && !queue[i].at.After(at) {
			i++
		}
		queue = slices.Insert(queue, i, due{at, next.name})
	}
	if reads := len(f.live.take()); reads != refs {
		tb.Errorf("%d of the %d names were read", reads, refs)
	}
	return checks
}
