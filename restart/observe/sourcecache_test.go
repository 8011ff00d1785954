package observe

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// fakeListWatch serves a fixed list and a watch the test drives.
type fakeListWatch struct {
	items []metav1.PartialObjectMetadata
	w     *watch.FakeWatcher
}

func (f *fakeListWatch) List(metav1.ListOptions) (runtime.Object, error) {
	list := &metav1.PartialObjectMetadataList{Items: append([]metav1.PartialObjectMetadata(nil), f.items...)}
	list.ResourceVersion = "100"
	return list, nil
}

func (f *fakeListWatch) Watch(metav1.ListOptions) (watch.Interface, error) { return f.w, nil }

func secretMeta(name, rv string) *metav1.PartialObjectMetadata {
	m := SourceMetadata("Secret")
	m.Namespace, m.Name, m.ResourceVersion, m.UID = "ns", name, rv, types.UID("uid-"+name)
	return m
}

// filterFor builds a SourceCache whose observer follows the named Secrets, and the list-watch of
// its Secret informer over lw.
func filterFor(t *testing.T, lw toolscache.ListerWatcher, consumed *sync.Map) (*SourceCache, *filteredListWatch, toolscache.SharedIndexInformer) {
	t.Helper()
	c := NewSourceCache()
	c.adopt(func(kind string, src client.Object) bool {
		_, ok := consumed.Load(kind + "/" + src.GetName())
		return ok
	}, nil, nil)
	inf := c.NewInformer(lw, SourceMetadata("Secret"), 0, toolscache.Indexers{})
	return c, &filteredListWatch{cache: c, feed: c.feeds["Secret"], lw: toolscache.ToListerWatcherWithContext(lw)}, inf
}

func names(list runtime.Object) []string {
	var out []string
	for _, it := range list.(*metav1.PartialObjectMetadataList).Items {
		out = append(out, it.Name)
	}
	return out
}

func TestSourceCacheListKeepsFollowedSources(t *testing.T) {
	lw := &fakeListWatch{items: []metav1.PartialObjectMetadata{*secretMeta("db", "1"), *secretMeta("token", "2"), *secretMeta("cert", "3"), *secretMeta("argocd-cm", "4")}}
	var consumed sync.Map
	consumed.Store("Secret/db", true)
	c, flw, _ := filterFor(t, lw, &consumed)
	c.Follow("Secret", "ns", "argocd-cm")
	c.Keep(func(kind string, src client.Object) bool { return kind == "Secret" && src.GetName() == "cert" })
	list, err := flw.ListWithContext(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(list); !slices.Equal(got, []string{"db", "cert", "argocd-cm"}) {
		t.Errorf("listed %v, want the consumed db, the kept cert and the followed argocd-cm", got)
	}
	if rv := list.(*metav1.PartialObjectMetadataList).ResourceVersion; rv != "100" {
		t.Errorf("the list's resourceVersion became %q", rv)
	}
}

func TestSourceCacheWithoutObserverKeepsEverything(t *testing.T) {
	lw := &fakeListWatch{items: []metav1.PartialObjectMetadata{*secretMeta("db", "1"), *secretMeta("token", "2")}}
	c := NewSourceCache()
	c.NewInformer(lw, SourceMetadata("Secret"), 0, toolscache.Indexers{})
	flw := &filteredListWatch{cache: c, feed: c.feeds["Secret"], lw: toolscache.ToListerWatcherWithContext(lw)}
	list, err := flw.ListWithContext(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(list); len(got) != 2 {
		t.Errorf("listed %v, want every Secret while no observer adopted the cache", got)
	}
	if n := len(c.feeds["Secret"].followed); n != 0 {
		t.Errorf("%d sources remembered as followed while nothing is filtered", n)
	}
}

func TestSourceCacheOnlyFiltersSourceMetadata(t *testing.T) {
	c := NewSourceCache()
	for _, obj := range []runtime.Object{&corev1.Secret{}, &metav1.PartialObjectMetadata{}, &corev1.Pod{}} {
		c.NewInformer(&fakeListWatch{w: watch.NewFake()}, obj, 0, toolscache.Indexers{})
	}
	if len(c.feeds) != 0 {
		t.Errorf("feeds %v for objects that are not metadata-only sources", c.feeds)
	}
}

// next reads the next event the filtered watch passes on.
func next(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev := <-w.ResultChan():
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no event passed")
		return watch.Event{}
	}
}

func TestSourceCacheWatchPassesFollowedAndBookmarksTheRest(t *testing.T) {
	lw := &fakeListWatch{w: watch.NewFakeWithChanSize(16, false)}
	var consumed sync.Map
	consumed.Store("Secret/db", true)
	c, flw, _ := filterFor(t, lw, &consumed)
	w, err := flw.WatchWithContext(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	lw.w.Add(secretMeta("token", "5"))    // unfollowed, created: dropped
	lw.w.Modify(secretMeta("token", "6")) // unfollowed, changed: a bookmark at 6
	lw.w.Modify(secretMeta("db", "7"))    // followed
	if ev := next(t, w); ev.Type != watch.Bookmark || ev.Object.(*metav1.PartialObjectMetadata).ResourceVersion != "6" ||
		ev.Object.(*metav1.PartialObjectMetadata).Name != "" {
		t.Errorf("first event %s %+v, want a bookmark at 6 naming nothing", ev.Type, ev.Object)
	}
	if ev := next(t, w); ev.Type != watch.Modified || ev.Object.(*metav1.PartialObjectMetadata).Name != "db" {
		t.Errorf("second event %s %+v, want db's change", ev.Type, ev.Object)
	}

	// Once passed, a source stays followed when its consumers go: its cached copy must not
	// go stale.
	consumed.Delete("Secret/db")
	lw.w.Modify(secretMeta("db", "8"))
	if ev := next(t, w); ev.Type != watch.Modified || ev.Object.(*metav1.PartialObjectMetadata).ResourceVersion != "8" {
		t.Errorf("event %s %+v, want db's change at 8", ev.Type, ev.Object)
	}
	// Deleted without a consumer: the deletion passes, then db is forgotten.
	lw.w.Delete(secretMeta("db", "9"))
	if ev := next(t, w); ev.Type != watch.Deleted {
		t.Errorf("event %s, want db's deletion", ev.Type)
	}
	lw.w.Add(secretMeta("db", "10"))
	lw.w.Modify(secretMeta("db", "11"))
	if ev := next(t, w); ev.Type != watch.Bookmark || ev.Object.(*metav1.PartialObjectMetadata).ResourceVersion != "11" {
		t.Errorf("event %s %+v, want a bookmark at 11: a deleted, unconsumed db is no longer followed", ev.Type, ev.Object)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.feeds["Secret"].followed) != 0 {
		t.Errorf("followed %v, want none", c.feeds["Secret"].followed)
	}
}

// metaReader answers Get from a map and runs during before returning.
type metaReader struct {
	client.Reader
	objs   map[string]*metav1.PartialObjectMetadata
	during func()
	gets   int
	loud   int // reads whose context carries a logger that writes
}

func (r *metaReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	r.gets++
	if l, err := logr.FromContext(ctx); err != nil || l.GetSink() != nil {
		r.loud++
	}
	if r.during != nil {
		r.during()
	}
	src, ok := r.objs[key.Name]
	if !ok {
		return apierrors.NewNotFound(corev1.Resource("secrets"), key.Name)
	}
	src.DeepCopyInto(obj.(*metav1.PartialObjectMetadata))
	return nil
}

func TestSourceCacheFetchPutsANewlyConsumedSourceIntoTheStore(t *testing.T) {
	lw := &fakeListWatch{w: watch.NewFake()}
	var consumed sync.Map
	c, _, inf := filterFor(t, lw, &consumed)
	live := &metaReader{objs: map[string]*metav1.PartialObjectMetadata{"db": secretMeta("db", "7")}}
	live.objs["db"].Annotations = map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{}"}
	key := types.NamespacedName{Namespace: "ns", Name: "db"}

	before := time.Now()
	found, err := c.Fetch(context.Background(), live, "Secret", key)
	if err != nil || !found {
		t.Fatalf("Fetch = %v, %v; want found", found, err)
	}
	obj, held, _ := inf.GetIndexer().GetByKey(key.String())
	if !held {
		t.Fatal("the fetched source is not in the informer's store")
	}
	m := obj.(*metav1.PartialObjectMetadata)
	if m.ResourceVersion != "7" || len(m.Annotations) != 0 || SeenAt(m).Before(before) {
		t.Errorf("stored %+v: want resourceVersion 7, no annotations, seen at the fetch", m.ObjectMeta)
	}
	if _, followed := c.feeds["Secret"].followed[key]; !followed {
		t.Error("a fetched source is not followed: its next change would be dropped")
	}
	if live.loud != 0 {
		t.Error("Fetch read the Secret's metadata with a logger that writes: client-go logs response bodies at high verbosity")
	}
	// Held now: a second Fetch does not read it again.
	if found, _ := c.Fetch(context.Background(), live, "Secret", key); !found || live.gets != 1 {
		t.Errorf("second Fetch: found %v after %d reads, want found after 1", found, live.gets)
	}
	// Gone at the API server: not found, nothing stored.
	if found, err := c.Fetch(context.Background(), live, "Secret", types.NamespacedName{Namespace: "ns", Name: "gone"}); found || err != nil {
		t.Errorf("Fetch of a missing Secret = %v, %v", found, err)
	}
	if _, held, _ := inf.GetIndexer().GetByKey("ns/gone"); held {
		t.Error("a missing Secret was stored")
	}
}

// An event of the source that reaches the informer while Fetch reads it wins: Fetch must not
// put its read (maybe older) into the store after it.
func TestSourceCacheFetchYieldsToAnEventOnItsWay(t *testing.T) {
	lw := &fakeListWatch{w: watch.NewFake()}
	var consumed sync.Map
	c, _, inf := filterFor(t, lw, &consumed)
	feed := c.feeds["Secret"]
	live := &metaReader{objs: map[string]*metav1.PartialObjectMetadata{"db": secretMeta("db", "7")}}
	live.during = func() { c.passes(feed, secretMeta("db", "8")) }

	found, err := c.Fetch(context.Background(), live, "Secret", types.NamespacedName{Namespace: "ns", Name: "db"})
	if err != nil || !found {
		t.Fatalf("Fetch = %v, %v; want found", found, err)
	}
	if _, held, _ := inf.GetIndexer().GetByKey("ns/db"); held {
		t.Error("Fetch stored its read although an event of the Secret passed meanwhile")
	}
	if len(feed.fetching) != 0 {
		t.Errorf("fetch state left behind: %v", feed.fetching)
	}
}

// gatedInformers blocks GetInformer until released, as the manager's cache does until an
// informer is synced.
type gatedInformers struct {
	asked   chan client.Object
	release chan struct{}
}

func (g *gatedInformers) GetInformer(ctx context.Context, obj client.Object, _ ...cache.InformerGetOption) (cache.Informer, error) {
	g.asked <- obj
	select {
	case <-g.release:
		return nil, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// countingListWatch counts the lists that reached the API server.
type countingListWatch struct {
	fakeListWatch
	lists atomic.Int32
}

func (c *countingListWatch) List(opts metav1.ListOptions) (runtime.Object, error) {
	c.lists.Add(1)
	return c.fakeListWatch.List(opts)
}

// The first list waits until the informers the filter reads are synced: judged against a
// half-listed workload index, consumed sources would be dropped.
func TestSourceCacheListsOnlyOnceWhatItReadsIsSynced(t *testing.T) {
	lw := &countingListWatch{fakeListWatch: fakeListWatch{items: []metav1.PartialObjectMetadata{*secretMeta("db", "1")}}}
	g := &gatedInformers{asked: make(chan client.Object, 4), release: make(chan struct{})}
	c := NewSourceCache()
	c.adopt(func(string, client.Object) bool { return true }, g, []client.Object{&corev1.Pod{}})
	c.NewInformer(lw, SourceMetadata("Secret"), 0, toolscache.Indexers{})
	flw := &filteredListWatch{cache: c, feed: c.feeds["Secret"], lw: toolscache.ToListerWatcherWithContext(lw)}

	listed := make(chan runtime.Object, 1)
	go func() {
		list, err := flw.ListWithContext(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Error(err)
		}
		listed <- list
	}()
	if _, ok := (<-g.asked).(*corev1.Pod); !ok {
		t.Fatal("the list did not wait for the informer the filter reads")
	}
	if n := lw.lists.Load(); n != 0 {
		t.Fatalf("listed %d times before the informers were synced", n)
	}
	close(g.release)
	if got := names(<-listed); !slices.Equal(got, []string{"db"}) {
		t.Errorf("listed %v", got)
	}
	// Synced once is enough: the next list does not ask again.
	if _, err := flw.ListWithContext(context.Background(), metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if len(g.asked) != 0 {
		t.Error("a later list waited for the informers again")
	}
}

// TestUpdatesOfFollowedSourcesAreNotAskedAgain: an update of a source the cache follows is
// reconciled without the predicate looking up its consumers (the reconcile does); any other
// source, and every source without the cache, is still asked.
func TestUpdatesOfFollowedSourcesAreNotAskedAgain(t *testing.T) {
	f := newFixture(t, testKey, deployment("web", "db"), deployment("batch", "batch-db"))
	f.scope["batch"] = false
	asked := 0
	isManaged := f.r.IsManaged
	f.r.IsManaged = func(ctx context.Context, w client.Object) (bool, func(map[string]string) bool) {
		asked++
		return isManaged(ctx, w)
	}

	if !f.r.updatePasses("Secret", secretMeta("db", "1")) || asked == 0 {
		t.Fatalf("without a source cache: passed %v after %d questions, want passed after asking", f.r.updatePasses("Secret", secretMeta("db", "1")), asked)
	}

	c := f.withSourceCache()
	if !c.passes(c.feeds["Secret"], secretMeta("db", "1")) {
		t.Fatal("the cache does not follow a Secret a managed workload consumes")
	}
	asked = 0
	if !f.r.updatePasses("Secret", secretMeta("db", "2")) {
		t.Error("an update of a followed source did not pass")
	}
	if asked != 0 {
		t.Errorf("an update of a followed source asked IsManaged %d times, want 0", asked)
	}

	if f.r.updatePasses("Secret", secretMeta("batch-db", "2")) {
		t.Error("an update of a source only an unmanaged workload consumes passed")
	}
	if asked == 0 {
		t.Error("a source the cache does not follow passed without being asked")
	}
}

// TestUpdatesTheShortcutLetsThroughCostNoRead plays a tenant whose Secret the cache still
// follows after its only consumer stopped being managed, and who then rewrites it again and
// again. Each update now reaches the reconcile (the predicate no longer asks), which must read
// only the cache: no read of the Secret past it, no record, nothing announced.
func TestUpdatesTheShortcutLetsThroughCostNoRead(t *testing.T) {
	f := newFixture(t, testKey, deployment("web", "db"), secret(map[string]string{"password": "hunter2"}))
	c := f.withSourceCache()
	if !c.passes(c.feeds["Secret"], secretMeta("db", "7")) {
		t.Fatal("the cache does not follow a Secret a managed workload consumes")
	}
	f.scope["web"] = false // the policy no longer selects the only consumer

	for i := range 50 {
		if !f.r.updatePasses("Secret", secretMeta("db", "7")) {
			t.Fatalf("update %d of a followed source did not pass", i)
		}
		if out := f.reconcile("Secret", "db"); out.skipped != "Unconsumed" {
			t.Fatalf("update %d: reconcile %+v, want skipped as Unconsumed", i, out)
		}
	}
	f.expectLive("updates of a source nobody managed consumes", "")
	if f.record("Secret", "db") != nil {
		t.Error("a record was written for a source nobody managed consumes")
	}
	if evs := f.pub.take(); len(evs) != 0 {
		t.Errorf("announced %d changes of a source nobody managed consumes", len(evs))
	}
}
