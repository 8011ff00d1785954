// Package observe tests the source observer (restart/observe) against the local control plane:
// records and events for consumed Secrets and ConfigMaps, quiet handling of metadata-only
// writes, garbage collection, a cache without content, and correctness across manager restarts.
package observe

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/restart/discovery"
	"github.com/kick-operator/kick/restart/observe"
	"github.com/kick-operator/kick/router"
)

const (
	eventTimeout = 30 * time.Second
	gcTimeout    = 2 * time.Minute
)

func TestMain(m *testing.M) {
	// Managers log to their test (cluster.TestLogger); this catches the rest.
	log.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.UseDevMode(true)))
	cluster.Main(m, cluster.TestOptions{
		KickCRDs:    true,
		AddToScheme: []func(*runtime.Scheme) error{kickv1alpha1.AddToScheme},
	})
}

// observer is one in-process manager running the source controllers, restricted to one
// namespace so that other tests' objects cannot disturb its counters.
type observer struct {
	t    *testing.T
	mgr  manager.Manager
	keys *observe.Fingerprinter
	rec  *observe.SourceReconciler
	sub  *router.Subscription
	reg  *prometheus.Registry

	cancel context.CancelFunc
	done   chan error
	once   sync.Once

	mu        sync.Mutex
	pending   []router.SourceChanged // received, not yet claimed by a test assertion
	informers []string               // every informer the manager's cache started, see informer
	liveReads map[string]int         // reads of a source past the cache, by "Kind/name"
}

// informer names an informer by the object it holds: "metadata:Secret" for a metadata-only
// informer, the Go type (as "*v1.Secret") for a typed one.
func informer(obj runtime.Object) string {
	if m, ok := obj.(*metav1.PartialObjectMetadata); ok {
		return "metadata:" + m.GroupVersionKind().Kind
	}
	return fmt.Sprintf("%T", obj)
}

// startedInformers returns the informers the manager's cache started so far.
func (o *observer) startedInformers() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.informers)
}

// liveReadsOf returns how often the reconciler read a source past the cache.
func (o *observer) liveReadsOf(kind, name string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.liveReads[kind+"/"+name]
}

// countingReader counts the reconciler's reads past the cache.
type countingReader struct {
	client.Reader
	o *observer
}

func (r countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	kind := fmt.Sprintf("%T", obj)
	switch obj.(type) {
	case *corev1.Secret:
		kind = "Secret"
	case *corev1.ConfigMap:
		kind = "ConfigMap"
	}
	r.o.mu.Lock()
	r.o.liveReads[kind+"/"+key.Name]++
	r.o.mu.Unlock()
	return r.Reader.Get(ctx, key, obj, opts...)
}

// startObserver ensures the fingerprint key in keyNS and starts a fresh manager watching ns,
// under which every workload is managed.
func startObserver(t *testing.T, ns, keyNS string) *observer {
	t.Helper()
	return startObserverWith(t, ns, keyNS, observe.ManageAll)
}

func startObserverWith(t *testing.T, ns, keyNS string, isManaged observe.ManagedFunc) *observer {
	t.Helper()
	env := cluster.Get(t)
	ctx := context.Background()
	key, err := observe.EnsureKey(ctx, env.Client, keyNS)
	if err != nil {
		t.Fatal(err)
	}
	keys := observe.NewFingerprinter(key)

	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, kickv1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	o := &observer{t: t, keys: keys, reg: prometheus.NewRegistry(), done: make(chan error, 1), liveReads: map[string]int{}}
	// As in kick-manager: only the sources the observer follows are cached.
	sources := observe.NewSourceCache()
	mgr, err := manager.New(env.Config, manager.Options{
		Logger:  cluster.TestLogger(t),
		Scheme:  scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
		Cache: cache.Options{
			ByObject:          observe.NewCacheOptions(),
			DefaultNamespaces: map[string]cache.Config{ns: {}},
			NewInformer: func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, idx toolscache.Indexers) toolscache.SharedIndexInformer {
				o.mu.Lock()
				o.informers = append(o.informers, informer(obj))
				o.mu.Unlock()
				return sources.NewInformer(lw, obj, resync, idx)
			},
		},
		// Several managers run one after another in this process.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := discovery.RegisterIndexes(ctx, mgr.GetFieldIndexer()); err != nil {
		t.Fatal(err)
	}
	rt := router.New(router.Options{Registerer: prometheus.NewRegistry()})
	sub, err := rt.Subscribe("test", router.Block, 1024, nil)
	if err != nil {
		t.Fatal(err)
	}
	o.mgr, o.sub = mgr, sub
	rec := &observe.SourceReconciler{Client: mgr.GetClient(), Live: countingReader{Reader: mgr.GetAPIReader(), o: o}, Router: rt, Keys: keys, IsManaged: isManaged}
	o.rec = rec
	if err := rec.SetupWithManager(mgr, observe.Options{MaxConcurrentReconciles: 2, Registerer: o.reg, SourceCache: sources}); err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	o.cancel = cancel
	go func() { o.done <- mgr.Start(runCtx) }()
	t.Cleanup(func() { o.stop(); rt.Close() })

	syncCtx, cancelSync := context.WithTimeout(ctx, eventTimeout)
	defer cancelSync()
	if !mgr.GetCache().WaitForCacheSync(syncCtx) {
		t.Fatal("the manager's cache did not sync")
	}
	return o
}

// stop stops the manager and waits for it to return.
func (o *observer) stop() {
	o.t.Helper()
	o.once.Do(func() {
		o.cancel()
		select {
		case err := <-o.done:
			if err != nil && !errors.Is(err, context.Canceled) {
				o.t.Errorf("manager: %v", err)
			}
		case <-time.After(eventTimeout):
			o.t.Error("the manager did not stop")
		}
	})
}

// drain moves every queued event into pending without waiting.
func (o *observer) drain() {
	for o.sub.Len() > 0 {
		o.receive(time.Second)
	}
}

func (o *observer) receive(timeout time.Duration) bool {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	ev, err := o.sub.Next(ctx)
	if err != nil {
		return false
	}
	sc, ok := ev.(router.SourceChanged)
	if !ok {
		o.t.Fatalf("unexpected event %T", ev)
	}
	o.mu.Lock()
	o.pending = append(o.pending, sc)
	o.mu.Unlock()
	return true
}

// take removes and returns the pending events about one source.
func (o *observer) take(kind, name string) []router.SourceChanged {
	o.mu.Lock()
	defer o.mu.Unlock()
	var mine, rest []router.SourceChanged
	for _, ev := range o.pending {
		if ev.Source.Kind == kind && ev.Source.Name == name {
			mine = append(mine, ev)
		} else {
			rest = append(rest, ev)
		}
	}
	o.pending = rest
	return mine
}

// expect waits for the next event about one source and checks its class; events about other
// sources stay pending.
func (o *observer) expect(kind, name string, class router.SourceClass) router.SourceChanged {
	o.t.Helper()
	deadline := time.Now().Add(eventTimeout)
	for {
		if evs := o.take(kind, name); len(evs) > 0 {
			if len(evs) > 1 || evs[0].Class != class {
				o.t.Fatalf("events for %s %s: %+v, want one %s", kind, name, evs, class)
			}
			return evs[0]
		}
		left := time.Until(deadline)
		if left <= 0 {
			o.t.Fatalf("no %s event for %s %s within %s", class, kind, name, eventTimeout)
		}
		o.receive(left)
	}
}

// expectNone fails if any event about the source was published so far. Call it after a
// barrier (waitObserved) that proves the controller has processed the write in question.
func (o *observer) expectNone(kind, name, why string) {
	o.t.Helper()
	o.drain()
	if evs := o.take(kind, name); len(evs) > 0 {
		o.t.Fatalf("%s: unexpected events for %s %s: %+v", why, kind, name, evs)
	}
}

// observed reads kick_observe_observations_total for a kind and class.
func (o *observer) observed(kind, class string) float64 {
	o.t.Helper()
	mfs, err := o.reg.Gather()
	if err != nil {
		o.t.Fatal(err)
	}
	var n float64
	for _, mf := range mfs {
		if mf.GetName() != "kick_observe_observations_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["kind"] == kind && labels["class"] == class {
				n += m.GetCounter().GetValue()
			}
		}
	}
	return n
}

// waitObserved waits until at least n reconciles of kind ended with class. A reconcile counts
// itself only after its write and its event, so this is a barrier for both.
func (o *observer) waitObserved(kind, class string, n float64) {
	o.t.Helper()
	cluster.Eventually(o.t, eventTimeout, "observation "+kind+"/"+class, func() (bool, error) {
		return o.observed(kind, class) >= n, nil
	})
}

// --- objects ---------------------------------------------------------------------------------

func create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := cluster.Get(t).Client.Create(context.Background(), obj); err != nil {
		t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
	}
}

// update reads obj fresh, applies change and writes it back.
func update[T client.Object](t *testing.T, obj T, change func(T)) T {
	t.Helper()
	c := cluster.Get(t).Client
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatal(err)
	}
	change(obj)
	if err := c.Update(context.Background(), obj); err != nil {
		t.Fatalf("update %s: %v", obj.GetName(), err)
	}
	return obj
}

func newSecret(ns, name string, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

// deployment returns a Deployment of one container whose pod spec is adjusted by tune.
func deployment(ns, name string, tune func(*corev1.PodSpec)) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}},
			},
		},
	}
	if tune != nil {
		tune(&d.Spec.Template.Spec)
	}
	return d
}

// secretEnv makes the pod read key of a Secret into an environment variable.
func secretEnv(secret, key string) func(*corev1.PodSpec) {
	return func(p *corev1.PodSpec) {
		p.Containers[0].Env = append(p.Containers[0].Env, corev1.EnvVar{Name: "V_" + key, ValueFrom: &corev1.EnvVarSource{
			SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key}}})
	}
}

// record reads a source's observation record straight from the API server; nil if absent.
func record(t *testing.T, ns, kind, name string) *kickv1alpha1.SourceObservation {
	t.Helper()
	var rec kickv1alpha1.SourceObservation
	err := cluster.Get(t).Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: kickv1alpha1.ObservationName(kind, name)}, &rec)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return &rec
}

// lastWrite is λ of the object as the API server holds it now.
func lastWrite(t *testing.T, obj client.Object) time.Time {
	t.Helper()
	if err := cluster.Get(t).Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatal(err)
	}
	var m *metav1.ObjectMeta
	switch o := obj.(type) {
	case *corev1.Secret:
		m = &o.ObjectMeta
	case *corev1.ConfigMap:
		m = &o.ObjectMeta
	default:
		t.Fatalf("lastWrite of %T", obj)
	}
	lw, ok := observe.LastWrite(m)
	if !ok {
		t.Fatal("no timestamps on an API object")
	}
	return lw
}
