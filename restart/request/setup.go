package request

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/gitops"
	"github.com/kick-operator/kick/restart/budget"
	"github.com/kick-operator/kick/restart/discovery"
	"github.com/kick-operator/kick/restart/fairqueue"
	"github.com/kick-operator/kick/restart/indexed"
	"github.com/kick-operator/kick/restart/inflight"
	"github.com/kick-operator/kick/restart/tracing"
	"github.com/kick-operator/kick/restart/workload"
	"github.com/kick-operator/kick/router"
)

// +kubebuilder:rbac:groups=kick.corewire.io,resources=kickrequests,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=kick.corewire.io,resources=kickrequests/status,verbs=get;patch;update
// +kubebuilder:rbac:groups=kick.corewire.io,resources=kickpolicies;kickholds;sourceobservations,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=deployments;statefulsets;daemonsets,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=apps,resources=replicasets,verbs=get;list;watch
// (Rollouts and the CSI kinds, when those integrations run, are covered by
// their own roles.)
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// Options configure the request controller and driver.
type Options struct {
	Router *router.Router
	GitOps gitops.Gate
	// Wakes are the provider object kinds whose changes re-evaluate the
	// open requests they concern (through WakeIndex).
	Wakes                   []gitops.Wake
	Metrics                 *Metrics
	MaxConcurrentReconciles int
	RolloutTimeout          time.Duration
	Retention               time.Duration
	Now                     func() time.Time
	// EnqueueSources asks the source observer to (re)observe the sources of
	// workloads; used when a KickPolicy starts selecting workloads.
	EnqueueSources func(ctx context.Context, workloads ...client.Object) error
	// Kinds are the workload kinds this manager restarts; nil means
	// workload.Builtin().
	Kinds *workload.Registry
	// CSI makes Secrets Store CSI classes count as dependencies.
	CSI bool
	// KeyNames names keys as the observation records do; nil counts every
	// change of a source for every consumer.
	KeyNames KeyNamer
	// Recorder receives the requests' Events; nil means the manager's.
	Recorder events.EventRecorder
	// Tracer records one trace per restart cycle; nil records nothing.
	Tracer *tracing.Tracer
	// Records are the observation records being written; every restart
	// waits for its workload's before it patches. The source observer must
	// share them.
	Records *inflight.Records
	// MaxConcurrentRestarts caps the restarts in progress across the
	// cluster (--max-concurrent-restarts); 0 means no cap.
	MaxConcurrentRestarts int
	// WavePoll is how often a restart an earlier wave holds looks again
	// when nothing wakes it (--wave-poll); 0 means DefaultWavePoll.
	WavePoll time.Duration
	// NoHolds is set when the API server does not serve KickHolds (the
	// CRDs of an older release): they are then neither watched nor read.
	NoHolds bool
}

// SetupWithManager registers the indexes, the KickRequest controller and
// the driver, which subscribes to source changes on the router with a
// blocking queue so no change is ever dropped.
func SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts Options) error {
	if err := RegisterIndexes(ctx, mgr.GetFieldIndexer()); err != nil {
		return err
	}
	if err := budget.RegisterIndexes(ctx, mgr.GetFieldIndexer()); err != nil {
		return err
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.GitOps == nil {
		opts.GitOps = gitops.NewRegistry()
	}
	if opts.Recorder == nil {
		opts.Recorder = mgr.GetEventRecorder("kick-request")
	}
	holdsServed.Store(!opts.NoHolds)
	wake := make(chan event.GenericEvent, 1024)
	r := &Reconciler{
		Client:         mgr.GetClient(),
		APIReader:      mgr.GetAPIReader(),
		Recorder:       opts.Recorder,
		Router:         opts.Router,
		GitOps:         opts.GitOps,
		Metrics:        opts.Metrics,
		Now:            opts.Now,
		RolloutTimeout: opts.RolloutTimeout,
		Retention:      opts.Retention,
		Kinds:          opts.Kinds,
		CSI:            opts.CSI,
		KeyNames:       opts.KeyNames,
		Tracer:         opts.Tracer,
		Records:        opts.Records,
		WavePoll:       opts.WavePoll,
		mem:            newMemory(),
	}
	r.wake = func(req types.NamespacedName) {
		obj := &kickv1alpha1.KickRequest{ObjectMeta: metav1.ObjectMeta{Namespace: req.Namespace, Name: req.Name}}
		select {
		case wake <- event.GenericEvent{Object: obj}:
		default: // full: the request looks again by itself (budget.WaitPoll, haltMemoryTTL)
		}
	}
	r.Budget = &budget.Budget{
		Client:         mgr.GetClient(),
		APIReader:      mgr.GetAPIReader(),
		Kinds:          opts.Kinds,
		ClusterLimit:   opts.MaxConcurrentRestarts,
		RolloutTimeout: opts.RolloutTimeout,
		Now:            opts.Now,
		Seen: func(requests []kickv1alpha1.KickRequest) {
			r.mem.halts.remember(requests, opts.Now().Add(haltMemoryTTL))
		},
		Wake: func(req types.NamespacedName) { r.wake(req) },
	}

	toRequests := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, obj client.Object) []reconcile.Request {
		return requestsFor(ctx, mgr.GetClient(), opts.Kinds, obj)
	})
	// A record change reaches the cache after the driver's wake may have
	// been handled; following records keeps the latest change level-driven.
	toConsumerRequests := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, obj client.Object) []reconcile.Request {
		return requestsOfConsumers(ctx, mgr.GetClient(), opts.Kinds, obj)
	})
	toNamespaceRequests := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, obj client.Object) []reconcile.Request {
		return openRequestsIn(ctx, mgr.GetClient(), obj.GetNamespace())
	})
	// A Deployment's (or a Rollout's) rollout is judged from its ReplicaSets
	// too, which come through an informer of their own: a ReplicaSet the
	// cache shows only after its owner's last event (a watch that
	// reconnected late after an API server outage) must wake the request
	// waiting for that rollout.
	toOwnerRequests := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, obj client.Object) []reconcile.Request {
		return requestsOfController(ctx, mgr.GetClient(), opts.Kinds, obj)
	})
	b := ctrl.NewControllerManagedBy(mgr).
		Named("kickrequest").
		For(&kickv1alpha1.KickRequest{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Watches(&kickv1alpha1.KickPolicy{}, toNamespaceRequests).
		// A halt that starts holds the open requests of its namespace; one
		// that is released or ends lets them go.
		Watches(&kickv1alpha1.KickRequest{}, toNamespaceRequests, builder.WithPredicates(haltChanged())).
		// A request that finishes may end the wave the requests of a later
		// wave wait for (see wavewake.go).
		Watches(&kickv1alpha1.KickRequest{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, obj client.Object) []reconcile.Request {
			kr, ok := obj.(*kickv1alpha1.KickRequest)
			if !ok {
				return nil
			}
			return r.waveCompleted(kr)
		}), builder.WithPredicates(finished())).
		Watches(&kickv1alpha1.SourceObservation{}, toConsumerRequests).
		WatchesRawSource(source.Channel(wake, &handler.EnqueueRequestForObject{})).
		WithOptions(controller.Options{
			MaxConcurrentReconciles: max(opts.MaxConcurrentReconciles, 1),
			NewQueue:                namespaceTurns(mgr.GetClient(), opts.Metrics, mgr.GetLogger().WithName("kickrequest-queue")),
		})
	if !opts.NoHolds {
		// A hold that starts, changes or ends concerns the open requests
		// of its namespace.
		b = b.Watches(&kickv1alpha1.KickHold{}, toNamespaceRequests, builder.WithPredicates(predicate.GenerationChangedPredicate{}))
	}
	for _, kind := range opts.Kinds.Objects() {
		b = b.Watches(kind, lowPriority(toRequests))
	}
	// A rollout is judged by which ReplicaSets exist (the one running the
	// current template, or labelled with the current revision), never by
	// their status: creations and deletions are the events that matter.
	b = b.Watches(&appsv1.ReplicaSet{}, lowPriority(toOwnerRequests), builder.WithPredicates(predicate.Funcs{
		UpdateFunc: func(event.UpdateEvent) bool { return false },
	}))
	for _, w := range opts.Wakes {
		b = b.Watches(w.Object, wakeHandler(mgr.GetClient(), w))
	}
	// A wave's bake starts again when a StatefulSet or DaemonSet of it
	// comes back from unavailability; they record no such moment
	// themselves (availability.go).
	if available := r.mem.waveCache().availability(); available != nil {
		for _, kind := range opts.Kinds.Objects() {
			if _, ok := availabilityKey(kind); ok {
				b = b.Watches(kind, availabilityHandler(available, opts.Now))
			}
		}
	}
	if err := b.Complete(r); err != nil {
		return err
	}
	if opts.Router == nil {
		return nil
	}
	sub, err := opts.Router.Subscribe("restart-driver", router.Block, 4096, func(ev router.Event) bool {
		_, ok := ev.(router.SourceChanged)
		return ok
	})
	if err != nil {
		return err
	}
	driver := &Driver{
		Client:    mgr.GetClient(),
		Wake:      wake,
		Metrics:   opts.Metrics,
		Kinds:     opts.Kinds,
		CSI:       opts.CSI,
		KeyNames:  opts.KeyNames,
		Now:       opts.Now,
		Tracer:    opts.Tracer,
		Records:   opts.Records,
		Retention: opts.Retention,
		Budget:    r.Budget,
		mem:       r.mem,
	}
	driver.identifying.gauge = opts.Metrics.undatedRollouts
	dc, err := controller.NewTyped[WorkloadKey]("kick-driver", mgr, controller.TypedOptions[WorkloadKey]{
		Reconciler:              driver,
		MaxConcurrentReconciles: max(opts.MaxConcurrentReconciles, 1),
		RateLimiter:             driverRateLimiter(),
		// Turns between namespaces: a Secret that 500 workloads of one
		// namespace consume queues 500 looks at once, and another
		// namespace's change waits behind one of them, not all.
		NewQueue: func(name string, rl workqueue.TypedRateLimiter[WorkloadKey]) workqueue.TypedRateLimitingInterface[WorkloadKey] {
			return fairqueue.New(name, rl, func(k WorkloadKey) string { return k.Namespace })
		},
	})
	if err != nil {
		return err
	}
	r.driverHanded = &driver.handed
	if err := dc.Watch(&routerSource{sub: sub, handed: &driver.handed, now: driver.Now}); err != nil {
		return err
	}
	// Every version of a workload the cache receives tells the driver
	// whether a restart it applied has reached the API server's watchers.
	for _, obj := range opts.Kinds.Objects() {
		shown := handler.TypedFuncs[client.Object, WorkloadKey]{
			UpdateFunc: func(_ context.Context, e event.TypedUpdateEvent[client.Object], _ workqueue.TypedRateLimitingInterface[WorkloadKey]) {
				driver.restartShown(e.ObjectNew)
			},
		}
		if err := dc.Watch(source.TypedKind(mgr.GetCache(), obj, shown)); err != nil {
			return err
		}
	}
	driver.watchesRestarts = true
	return ctrl.NewControllerManagedBy(mgr).
		Named("kickpolicy-adopt").
		For(&kickv1alpha1.KickPolicy{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Complete(&adopter{client: mgr.GetClient(), driver: driver, enqueueSources: opts.EnqueueSources})
}

// The event mappers below only read names and phases of what they list:
// they list the cache's own objects (client.UnsafeDisableDeepCopy), which
// they must never modify, instead of copying every KickRequest of a
// workload for each of its events.

// requestsFor maps a workload event to the open KickRequests of that
// workload, and of the workloads whose requests follow it (a Deployment run
// by a Rollout through workloadRef).
func requestsFor(ctx context.Context, c client.Reader, kinds *workload.Registry, obj client.Object) []reconcile.Request {
	out := targetRequests(ctx, c, workload.RefOf(obj), false)
	for _, ref := range kinds.Follows(obj) {
		out = append(out, targetRequests(ctx, c, ref, false)...)
	}
	return out
}

// requestsOf returns the KickRequests in namespace whose target is key
// (TargetIndex): the cache's own objects, read them, never modify them.
func requestsOf(ctx context.Context, c client.Reader, namespace, key string) ([]*kickv1alpha1.KickRequest, error) {
	return indexed.ByField[kickv1alpha1.KickRequest](ctx, c, newRequestList, namespace, TargetIndex, key)
}

func newRequestList() client.ObjectList { return &kickv1alpha1.KickRequestList{} }

func targetRequests(ctx context.Context, c client.Reader, ref workload.Ref, finishedToo bool) []reconcile.Request {
	if ref.Kind == "" {
		return nil
	}
	requests, err := requestsOf(ctx, c, ref.Namespace, ref.Key())
	if err != nil {
		return nil
	}
	// Only open requests follow their workload; finished ones are reopened
	// by the driver, so a busy rollout does not flood the queue with them.
	// A finished one that names a restart of the driver it has not recorded
	// is open in all but its status (see deferStatus): it follows that
	// rollout, so it records the rollout's end when it happens.
	var out []reconcile.Request
	for _, kr := range requests {
		if _, following := driverRestart(kr); finishedToo || following || !kr.Status.Phase.IsTerminal() {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(kr)})
		}
	}
	return out
}

// requestsOfController maps a ReplicaSet to the open requests of the
// workload that controls it, when that workload is of a kind KICK restarts.
func requestsOfController(ctx context.Context, c client.Reader, kinds *workload.Registry, obj client.Object) []reconcile.Request {
	ref, ok := controllingWorkload(kinds, obj)
	if !ok {
		return nil
	}
	return targetRequests(ctx, c, ref, false)
}

// controllingWorkload names the workload whose controller reference obj
// carries, when its kind and API version are a kind KICK restarts: a
// same-named kind of another API group is not a Deployment.
func controllingWorkload(kinds *workload.Registry, obj client.Object) (workload.Ref, bool) {
	owner := metav1.GetControllerOf(obj)
	if owner == nil {
		return workload.Ref{}, false
	}
	k, ok := kinds.Lookup(kickv1alpha1.TargetKind(owner.Kind))
	if !ok || k.APIVersion != owner.APIVersion {
		return workload.Ref{}, false
	}
	return workload.Ref{Kind: k.Target, Namespace: obj.GetNamespace(), Name: owner.Name}, true
}

// requestsOfConsumers maps an observation record to the requests, open or
// finished, of the workloads that consume its source (through the discovery
// index): a finished one may have to reopen for the recorded change.
func requestsOfConsumers(ctx context.Context, c client.Reader, kinds *workload.Registry, obj client.Object) []reconcile.Request {
	rec, ok := obj.(*kickv1alpha1.SourceObservation)
	if !ok {
		return nil
	}
	var out []reconcile.Request
	for _, list := range kinds.Lists() {
		if err := c.List(ctx, list, client.InNamespace(rec.Namespace),
			client.MatchingFields{discovery.SourceIndex: discovery.IndexKey(string(rec.Spec.Source.Kind), rec.Spec.Source.Name)},
			client.UnsafeDisableDeepCopy); err != nil {
			continue
		}
		for _, w := range workload.Items(list) {
			out = append(out, targetRequests(ctx, c, workload.RefOf(w), true)...)
		}
	}
	return out
}

// openRequestsIn maps a KickPolicy event to the open requests of its
// namespace, whose gate or scope it may change.
func openRequestsIn(ctx context.Context, c client.Reader, namespace string) []reconcile.Request {
	var list kickv1alpha1.KickRequestList
	if err := c.List(ctx, &list, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, kr := range list.Items {
		if !kr.Status.Phase.IsTerminal() {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&kr)})
		}
	}
	return out
}

// wakeHandler maps a provider object change to the open requests indexed
// under the wake keys it names.
func wakeHandler(c client.Reader, w gitops.Wake) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, obj client.Object) []reconcile.Request {
		var out []reconcile.Request
		for _, key := range w.Keys(ctx, obj) {
			var list kickv1alpha1.KickRequestList
			if err := c.List(ctx, &list, client.MatchingFields{WakeIndex: key}, client.UnsafeDisableDeepCopy); err != nil {
				continue
			}
			for i := range list.Items {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
			}
		}
		return out
	})
}
