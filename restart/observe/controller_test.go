package observe

import (
	"context"
	"errors"
	"github.com/go-logr/logr"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/discovery"
	"github.com/kick-operator/kick/router"
)

// These tests drive one reconcile at a time against a fake client; the controller's wiring
// (watches, cache transform, garbage collection) is tested in integration/observe.

type recorder struct {
	mu     sync.Mutex
	events []router.SourceChanged
	check  func(router.SourceChanged)
}

func (p *recorder) Publish(_ context.Context, ev router.Event) error {
	sc := ev.(router.SourceChanged)
	if p.check != nil {
		p.check(sc)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.events = append(p.events, sc)
	return nil
}

func (p *recorder) take() []router.SourceChanged {
	p.mu.Lock()
	defer p.mu.Unlock()
	ev := p.events
	p.events = nil
	return ev
}

// cachedClient is the manager's cached client as the reconciler may use it: a typed Secret or
// ConfigMap read through it would start a typed informer holding every one of them.
type cachedClient struct {
	client.Client
	t testing.TB
	// seen is when the cache received a source's current version (the real cache's
	// TransformSourceMetadata stamps it).
	seen func() time.Time
}

func (c cachedClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	switch obj.(type) {
	case *corev1.Secret, *corev1.ConfigMap:
		c.t.Errorf("%T %s read through the cached client", obj, key)
	}
	if err := c.Client.Get(ctx, key, obj, opts...); err != nil {
		return err
	}
	if m, ok := obj.(*metav1.PartialObjectMetadata); ok && c.seen != nil {
		m.CreationTimestamp = metav1.NewTime(c.seen())
	}
	return nil
}

// liveReader counts the reads past the cache and the resourceVersion each asked for.
type liveReader struct {
	client.Reader
	rvs  []string
	loud []string // reads made with a logger that could print the body
}

func (l *liveReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if logger, err := logr.FromContext(ctx); err != nil || logger.GetSink() != nil {
		// client-go logs response bodies through this logger at high verbosity.
		l.loud = append(l.loud, key.String())
	}
	o := (&client.GetOptions{}).ApplyOptions(opts)
	l.rvs = append(l.rvs, o.AsGetOptions().ResourceVersion)
	return l.Reader.Get(ctx, key, obj, opts...)
}

func (l *liveReader) take() []string {
	rvs := l.rvs
	l.rvs = nil
	return rvs
}

type fixture struct {
	t    testing.TB
	c    client.Client
	live *liveReader
	pub  *recorder
	r    *SourceReconciler
	now  time.Time
	// seen is when the cache received the sources' current versions; zero means now.
	seen  time.Time
	scope map[string]bool // workload name -> managed
}

func newFixture(t testing.TB, key []byte, objs ...client.Object) *fixture {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, kickv1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	b := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...)
	for _, w := range []client.Object{&appsv1.Deployment{}, &appsv1.StatefulSet{}, &appsv1.DaemonSet{}} {
		b = b.WithIndex(w, discovery.SourceIndex, discovery.IndexFunc)
	}
	f := &fixture{t: t, c: b.Build(), pub: &recorder{}, now: time.Date(2026, 5, 1, 12, 0, 0, 987654321, time.UTC), scope: map[string]bool{}}
	f.live = &liveReader{Reader: f.c}
	f.r = &SourceReconciler{
		Client: cachedClient{Client: f.c, t: t, seen: func() time.Time {
			if f.seen.IsZero() {
				return f.now
			}
			return f.seen
		}}, Live: f.live, Router: f.pub, Keys: NewFingerprinter(key),
		Now: func() time.Time { return f.now },
		IsManaged: func(_ context.Context, w client.Object) (bool, func(map[string]string) bool) {
			if managed, known := f.scope[w.GetName()]; known && !managed {
				return false, nil
			}
			return true, func(l map[string]string) bool { return l["kick"] != "ignore" }
		},
	}
	// A published event must find its record already written.
	f.pub.check = func(ev router.SourceChanged) {
		rec := f.record(ev.Source.Kind, ev.Source.Name)
		if rec == nil || !rec.Spec.LastRelevantChangeTime.Equal(ev.ChangeTime) {
			t.Errorf("event for %s published before its record was written (record %v)", ev.Key(), rec)
		}
	}
	return f
}

func (f *fixture) reconcile(kind, name string) outcome {
	f.t.Helper()
	sk := sourceKinds[0]
	if kind == discovery.KindConfigMap {
		sk = sourceKinds[1]
	}
	out, err := f.r.reconcileSource(context.Background(), sk, types.NamespacedName{Namespace: "ns", Name: name})
	if err != nil {
		f.t.Fatalf("reconcile %s/%s: %v", kind, name, err)
	}
	return out
}

func (f *fixture) record(kind, name string) *kickv1alpha1.SourceObservation {
	f.t.Helper()
	var rec kickv1alpha1.SourceObservation
	err := f.c.Get(context.Background(), types.NamespacedName{Namespace: "ns", Name: kickv1alpha1.ObservationName(kind, name)}, &rec)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		f.t.Fatal(err)
	}
	return &rec
}

func (f *fixture) update(obj client.Object, change func()) {
	f.t.Helper()
	if err := f.c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
		f.t.Fatal(err)
	}
	change()
	if err := f.c.Update(context.Background(), obj); err != nil {
		f.t.Fatal(err)
	}
}

var created = metav1.Unix(1_700_000_000, 0)

func testSecret(name string, data string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), CreationTimestamp: created},
		Data:       map[string][]byte{"password": []byte(data)},
	}
}

func deployment(name string, secrets ...string) *appsv1.Deployment {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
	for _, s := range secrets {
		d.Spec.Template.Spec.Volumes = append(d.Spec.Template.Spec.Volumes, corev1.Volume{
			Name: s, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: s}}})
	}
	return d
}

// rv is the resourceVersion of obj in the fake API server.
func (f *fixture) rv(obj client.Object) string {
	f.t.Helper()
	if err := f.c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
		f.t.Fatal(err)
	}
	return obj.GetResourceVersion()
}

// expectLive checks that the last reconcile read the source past the cache exactly once, at
// (not older than) its resourceVersion, or not at all (rv "").
func (f *fixture) expectLive(what, rv string) {
	f.t.Helper()
	got := f.live.take()
	switch {
	case rv == "" && len(got) != 0:
		f.t.Errorf("%s: read the source past the cache (%v)", what, got)
	case rv != "" && (len(got) != 1 || got[0] != rv):
		f.t.Errorf("%s: reads past the cache at %v, want one at resourceVersion %s", what, got, rv)
	}
}

func TestReconcileLifecycle(t *testing.T) {
	s := testSecret("db", "v1")
	f := newFixture(t, testKey, s, deployment("web", "db"), deployment("api", "db"), testSecret("lonely", "x"))
	lambda := created.Time // λ from managedFields is covered by transform_test.go

	// First sighting: a baseline dated λ, published with its consumers.
	if out := f.reconcile("Secret", "db"); out.class != Baseline || !out.written || !out.published {
		t.Fatalf("first reconcile: %+v", out)
	}
	f.expectLive("baseline", f.rv(s))
	rec := f.record("Secret", "db")
	if rec == nil || !rec.Spec.LastRelevantChangeTime.Equal(lambda) || rec.Spec.Class != kickv1alpha1.ObservationBaseline {
		t.Fatalf("baseline record: %+v", rec)
	}
	if len(rec.OwnerReferences) != 1 || rec.OwnerReferences[0].UID != s.UID || rec.OwnerReferences[0].Kind != "Secret" ||
		*rec.OwnerReferences[0].Controller || *rec.OwnerReferences[0].BlockOwnerDeletion {
		t.Errorf("owner references: %+v", rec.OwnerReferences)
	}
	evs := f.pub.take()
	if len(evs) != 1 || evs[0].Class != router.ClassBaseline || !evs[0].ChangeTime.Equal(lambda) || len(evs[0].Consumers) != 2 ||
		evs[0].Consumers[0].Name != "api" || evs[0].Consumers[1].Name != "web" || evs[0].Consumers[0].APIVersion != "apps/v1" {
		t.Fatalf("baseline events: %+v", evs)
	}

	// Nothing new: no write, no event.
	rv := f.record("Secret", "db").ResourceVersion
	if out := f.reconcile("Secret", "db"); out.class != NoChange || out.written || out.published {
		t.Errorf("repeat: %+v", out)
	}
	f.expectLive("same resourceVersion as the record", "")
	f.update(s, func() { s.Labels = map[string]string{"x": "y"} })
	if out := f.reconcile("Secret", "db"); out.class != MetaOnly || out.written || out.published {
		t.Errorf("label change: %+v", out)
	}
	f.expectLive("label change", f.rv(s))
	if f.record("Secret", "db").ResourceVersion != rv || len(f.pub.take()) != 0 {
		t.Error("a metadata-only change wrote the record or published")
	}

	// Content change: θ = now, at full precision.
	f.update(s, func() { s.Data["password"] = []byte("v2") })
	if out := f.reconcile("Secret", "db"); out.class != Relevant || !out.written || !out.published {
		t.Fatalf("data change: %+v", out)
	}
	f.expectLive("data change", f.rv(s))
	if rec := f.record("Secret", "db"); rec.Spec.LastSeenResourceVersion != s.ResourceVersion || rec.Spec.RelevantFingerprint != f.r.Keys.Secret(s) {
		t.Errorf("record after the data change: %+v", rec.Spec)
	}
	if out := f.reconcile("Secret", "db"); out.class != NoChange {
		t.Errorf("after the data change: %+v", out)
	}
	f.expectLive("after the data change", "")
	rec = f.record("Secret", "db")
	if !rec.Spec.LastRelevantChangeTime.Equal(f.now) || rec.Spec.Class != kickv1alpha1.ObservationRelevant {
		t.Errorf("relevant record: %+v", rec.Spec)
	}
	if evs := f.pub.take(); len(evs) != 1 || evs[0].Class != router.ClassRelevant || !evs[0].ChangeTime.Equal(f.now) {
		t.Errorf("relevant events: %+v", evs)
	}

	// The cache received the next content 400 ms before the reconcile: the change is dated by
	// that receipt, so a restart made in between counts as carrying it.
	f.seen = f.now.Add(-400 * time.Millisecond)
	f.update(s, func() { s.Data["password"] = []byte("v3") })
	if out := f.reconcile("Secret", "db"); out.class != Relevant || !out.theta.Equal(f.seen) {
		t.Errorf("change received before the reconcile: %+v, want θ = the receipt %v", out, f.seen)
	}
	f.live.take()
	f.pub.take()
	f.seen = time.Time{}

	if len(f.live.loud) != 0 {
		t.Errorf("sources read in full with a logger that could print them: %v", f.live.loud)
	}

	// Nobody consumes "lonely": no record at all.
	if out := f.reconcile("Secret", "lonely"); out.skipped != "Unconsumed" || f.record("Secret", "lonely") != nil {
		t.Errorf("unconsumed source: %+v", out)
	}
	f.expectLive("unconsumed source", "")
	// A missing source: nothing.
	if out := f.reconcile("Secret", "missing"); out.skipped != "NotFound" {
		t.Errorf("missing source: %+v", out)
	}
	f.expectLive("missing source", "")
}

// TestReconcileSourceGoneFromTheAPIServer: the cache still has the source, the API server
// no longer does.
func TestReconcileSourceGoneFromTheAPIServer(t *testing.T) {
	f := newFixture(t, testKey, testSecret("db", "v1"), deployment("web", "db"))
	f.live.Reader = fake.NewClientBuilder().WithScheme(f.c.Scheme()).Build()
	if out := f.reconcile("Secret", "db"); out.skipped != "NotFound" || out.class != "" || f.record("Secret", "db") != nil {
		t.Errorf("a source gone from the API server: %+v", out)
	}
	if evs := f.pub.take(); len(evs) != 0 {
		t.Errorf("published %+v", evs)
	}
}

// TestReconcileCacheBehind: the API server holds another object of the same name than the
// cache (deleted and created again): nothing is decided on the mix, the reconcile is retried.
func TestReconcileCacheBehind(t *testing.T) {
	f := newFixture(t, testKey, testSecret("db", "v1"), deployment("web", "db"))
	again := testSecret("db", "v2")
	again.UID = "uid-db-2"
	f.live.Reader = fake.NewClientBuilder().WithScheme(f.c.Scheme()).WithObjects(again).Build()
	_, err := f.r.reconcileSource(context.Background(), sourceKinds[0], types.NamespacedName{Namespace: "ns", Name: "db"})
	if !errors.Is(err, errCacheBehind) || f.record("Secret", "db") != nil {
		t.Errorf("err = %v, record %v", err, f.record("Secret", "db"))
	}
	res, err := (kindReconciler{r: f.r, kind: sourceKinds[0]}).Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "db"}})
	if err != nil || res.RequeueAfter == 0 {
		t.Errorf("Reconcile = %+v, %v; want a quiet requeue", res, err)
	}
}

func TestReconcileScope(t *testing.T) {
	ignored := testSecret("ignored", "x")
	ignored.Labels = map[string]string{"kick": "ignore"}
	f := newFixture(t, testKey, testSecret("db", "v1"), deployment("legacy", "db"), ignored, deployment("web", "ignored"))
	f.scope["legacy"] = false
	if out := f.reconcile("Secret", "db"); out.skipped != "Unconsumed" || f.record("Secret", "db") != nil {
		t.Errorf("a source consumed only by an unmanaged workload got a record: %+v", out)
	}
	if out := f.reconcile("Secret", "ignored"); out.skipped != "Unconsumed" || f.record("Secret", "ignored") != nil {
		t.Errorf("an out-of-scope source got a record: %+v", out)
	}
}

func TestReconcileWithoutConsumersKeepsRecordQuietly(t *testing.T) {
	s := testSecret("db", "v1")
	d := deployment("web", "db")
	f := newFixture(t, testKey, s, d)
	f.reconcile("Secret", "db")
	f.pub.take()
	if err := f.c.Delete(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	// Changed while nobody consumes it: the record follows, dated like a baseline, silently.
	f.update(s, func() { s.Data["password"] = []byte("v2") })
	out := f.reconcile("Secret", "db")
	if out.class != Relevant || !out.written || out.published {
		t.Fatalf("change without consumers: %+v", out)
	}
	rec := f.record("Secret", "db")
	if rec.Spec.Class != kickv1alpha1.ObservationBaseline || rec.Spec.LastRelevantChangeTime.Equal(f.now) {
		t.Errorf("record after a change nobody consumes: %+v", rec.Spec)
	}
	if evs := f.pub.take(); len(evs) != 0 {
		t.Errorf("published without consumers: %+v", evs)
	}
	// A new consumer starts from the current content: no change to report.
	if err := f.c.Create(context.Background(), deployment("web2", "db")); err != nil {
		t.Fatal(err)
	}
	if out := f.reconcile("Secret", "db"); out.class != NoChange {
		t.Errorf("after a new consumer appeared: %+v", out)
	}
}

func TestReconcileRebaselinesOnNewKey(t *testing.T) {
	s := testSecret("db", "v1")
	f := newFixture(t, testKey, s, deployment("web", "db"))
	f.reconcile("Secret", "db")
	f.pub.take()
	before := f.record("Secret", "db").Spec

	f.live.take()
	f.r.Keys = NewFingerprinter([]byte("a completely different 32b key!!"))
	f.now = f.now.Add(time.Hour)
	if out := f.reconcile("Secret", "db"); out.class != Rebaseline || !out.written || out.published {
		t.Fatalf("after a key change: %+v", out)
	}
	f.expectLive("key change at the same resourceVersion", f.rv(s))
	after := f.record("Secret", "db").Spec
	if after.FingerprintKeyID == before.FingerprintKeyID || after.RelevantFingerprint == before.RelevantFingerprint ||
		!after.LastRelevantChangeTime.Equal(before.LastRelevantChangeTime.Time) || after.Class != before.Class {
		t.Errorf("rebaseline: before %+v after %+v", before, after)
	}
	if evs := f.pub.take(); len(evs) != 0 {
		t.Errorf("a key change published %+v", evs)
	}
	if out := f.reconcile("Secret", "db"); out.class != NoChange {
		t.Errorf("after the rebaseline: %+v", out)
	}
}

func TestReconcileRecreatedSourceStartsOver(t *testing.T) {
	s := testSecret("db", "v1")
	f := newFixture(t, testKey, s, deployment("web", "db"))
	f.reconcile("Secret", "db")
	f.pub.take()
	// The Secret is deleted and created again before the garbage collector removed the record.
	if err := f.c.Delete(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	again := testSecret("db", "v1")
	again.UID, again.ResourceVersion = "uid-db-2", ""
	if err := f.c.Create(context.Background(), again); err != nil {
		t.Fatal(err)
	}
	if out := f.reconcile("Secret", "db"); out.class != Baseline || !out.published {
		t.Fatalf("recreated source: %+v", out)
	}
	rec := f.record("Secret", "db")
	if len(rec.OwnerReferences) != 1 || rec.OwnerReferences[0].UID != "uid-db-2" {
		t.Errorf("the record must move to the new object: %+v", rec.OwnerReferences)
	}
}

func TestReconcileConfigMap(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cfg", UID: "uid-cfg", CreationTimestamp: created},
		Data: map[string]string{"a": "1"}}
	d := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db"}}
	d.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "p", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}}}}}}
	f := newFixture(t, testKey, cm, d)
	if out := f.reconcile("ConfigMap", "cfg"); out.class != Baseline || !out.published {
		t.Fatalf("%+v", out)
	}
	evs := f.pub.take()
	if len(evs) != 1 || evs[0].Source.Kind != "ConfigMap" || evs[0].Consumers[0].Kind != "StatefulSet" || !evs[0].ChangeTime.Equal(created.Time) {
		t.Errorf("%+v", evs)
	}
	if rec := f.record("ConfigMap", "cfg"); rec.Spec.Source.Kind != kickv1alpha1.SourceConfigMap {
		t.Errorf("%+v", rec.Spec.Source)
	}
}

func TestSourcesOf(t *testing.T) {
	d := deployment("web", "a", "b")
	d.Namespace = "shop"
	d.Spec.Template.Spec.Containers = []corev1.Container{{EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "c"}}}}}}
	secrets, cms := SourcesOf("Secret", d), SourcesOf("ConfigMap", d)
	if len(secrets) != 2 || secrets[0].Name != "a" || secrets[0].Namespace != "shop" || len(cms) != 1 || cms[0].Name != "c" {
		t.Errorf("secrets %v, configmaps %v", secrets, cms)
	}
	if SourcesOf("Secret", &corev1.Pod{}) != nil {
		t.Error("a Pod is not a supported workload")
	}
	var r SourceReconciler
	if err := r.EnqueueSourcesOf(context.Background(), d); err == nil {
		t.Error("EnqueueSourcesOf before SetupWithManager must fail")
	}
}

func TestOnlyFollowedSourcesReachTheQueue(t *testing.T) {
	f := newFixture(t, testKey, testSecret("db", "v1"), testSecret("unused", "v1"), deployment("web", "db", "not-yet-created"))
	meta := func(name string) client.Object {
		m := SourceMetadata(discovery.KindSecret)
		m.SetNamespace("ns")
		m.SetName(name)
		return m
	}
	if !f.r.followed(discovery.KindSecret, meta("db")) {
		t.Error("a consumed Secret was not followed")
	}
	if f.r.followed(discovery.KindSecret, meta("unused")) {
		t.Error("a Secret nobody consumes and without a record reached the queue")
	}
	if !f.r.followed(discovery.KindSecret, meta("not-yet-created")) {
		t.Error("an optional Secret a workload consumes before it exists was not followed")
	}
	// A record keeps a source followed after its last consumer is gone.
	f.reconcile("Secret", "db")
	if err := f.c.Delete(context.Background(), deployment("web", "db")); err != nil {
		t.Fatal(err)
	}
	if !f.r.followed(discovery.KindSecret, meta("db")) {
		t.Error("a recorded Secret without consumers was not followed")
	}
}

// TestFullReadsAreBounded: however many workers reconcile, at most n
// sources are read in full at once.
func TestFullReadsAreBounded(t *testing.T) {
	var l limiter
	const n, workers = 3, 12
	var mu sync.Mutex
	inside, most := 0, 0
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			release, err := l.acquire(context.Background(), n)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			inside++
			most = max(most, inside)
			mu.Unlock()
			time.Sleep(5 * time.Millisecond) // hold the slot while others try
			mu.Lock()
			inside--
			mu.Unlock()
			release()
		}()
	}
	wg.Wait()
	if most > n || most == 0 {
		t.Fatalf("%d full reads at once, want at most %d", most, n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var full limiter
	for range 2 {
		if _, err := full.acquire(ctx, 2); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	if _, err := full.acquire(ctx, 2); err == nil {
		t.Fatal("acquire on a full limiter returned without a slot after ctx ended")
	}
}
