package observe

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	k8sworkqueue "k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/prometheus/client_golang/prometheus"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/discovery"
	"github.com/kick-operator/kick/restart/fairqueue"
	"github.com/kick-operator/kick/restart/indexed"
	"github.com/kick-operator/kick/restart/inflight"
)

var errNotSetUp = errors.New("observe: SourceReconciler.SetupWithManager was not called")

// Options configure SetupWithManager.
type Options struct {
	// MaxConcurrentReconciles per source kind (default 1).
	MaxConcurrentReconciles int
	// Registerer receives the kick_observe_* metrics; nil means controller-runtime's registry.
	Registerer prometheus.Registerer
	// SourceCache, when the manager's cache was built with its NewInformer, is told which
	// sources to keep: those the reconciler follows (see followed). Nil: the cache holds
	// every Secret and ConfigMap.
	SourceCache *SourceCache
}

// NewCacheOptions returns the manager cache settings for Secrets and ConfigMaps, which the
// manager watches metadata-only (see SourceMetadata): their data never reaches the manager
// through a watch, and the cache keeps only the metadata TransformSourceMetadata leaves.
// Merge it into cache.Options.ByObject. Nothing is fingerprinted here: sources are
// fingerprinted when the reconciler reads them in full.
func NewCacheOptions() map[client.Object]cache.ByObject {
	return map[client.Object]cache.ByObject{
		SourceMetadata(discovery.KindSecret):    {Transform: TransformSourceMetadata},
		SourceMetadata(discovery.KindConfigMap): {Transform: TransformSourceMetadata},
	}
}

// SetupWithManager registers one controller per source kind ("observe-secret",
// "observe-configmap"). Each reconciles its sources on their own events, on the creation of a
// workload (of every kind in r.Kinds) or a change of its Pod template or labels (so a source that just gained a consumer
// gets its baseline), on the deletion of a record, and on EnqueueSourcesOf. The manager's field
// indexer must have discovery.RegisterIndexesFor every kind of r.Kinds, and its cache
// NewCacheOptions. r.Live defaults to mgr.GetAPIReader().
func (r *SourceReconciler) SetupWithManager(mgr manager.Manager, opts Options) error {
	switch {
	case r.Client == nil || r.Router == nil || r.Keys == nil:
		return errors.New("observe: SourceReconciler needs Client, Router and Keys")
	case r.IsManaged == nil:
		return errors.New("observe: SourceReconciler needs IsManaged (observe.ManageAll manages everything)")
	}
	if r.Live == nil {
		r.Live = mgr.GetAPIReader()
	}
	r.consumerIndex = &consumerIndex{indexes: indexed.NewIndexes(mgr.GetCache())}
	if opts.SourceCache != nil {
		r.sourceCache = opts.SourceCache
		// followed reads the workload indexes, the policies (through IsManaged) and the
		// records: all must be complete before the first source is judged by it.
		waitFor := append(r.Kinds.Objects(), &kickv1alpha1.SourceObservation{}, &kickv1alpha1.KickPolicy{})
		r.sourceCache.adopt(r.followed, mgr.GetCache(), waitFor)
		if err := registerCachedSources(opts.Registerer, r.sourceCache); err != nil {
			return err
		}
	}
	r.metrics = newMetrics(opts.Registerer)
	r.triggers = make(map[string]chan event.GenericEvent, len(sourceKinds))
	workers := max(opts.MaxConcurrentReconciles, 1)
	for _, kind := range sourceKinds {
		trigger := make(chan event.GenericEvent)
		r.triggers[kind.name] = trigger
		b := builder.ControllerManagedBy(mgr).
			Named("observe-"+strings.ToLower(kind.name)).
			// Metadata only: a source's content is read from the API server when needed.
			For(SourceMetadata(kind.name), builder.WithPredicates(predicate.Funcs{
				CreateFunc:  func(e event.CreateEvent) bool { return r.followed(kind.name, e.Object) },
				UpdateFunc:  func(e event.UpdateEvent) bool { return r.updatePasses(kind.name, e.ObjectNew) },
				GenericFunc: func(e event.GenericEvent) bool { return r.followed(kind.name, e.Object) },
				// A deleted source's record is garbage-collected with it.
				DeleteFunc: func(event.DeleteEvent) bool { return false },
			})).
			Watches(&kickv1alpha1.SourceObservation{}, r.recordHandler(kind.name)).
			WatchesRawSource(source.Channel(trigger, handler.Funcs{
				GenericFunc: func(_ context.Context, e event.GenericEvent, q workqueue) {
					add(q, SourcesOf(kind.name, e.Object))
				},
			})).
			// One queue for every namespace's sources, taking turns between namespaces: a
			// tenant's thousands of names wait behind each other, not before the others'.
			WithOptions(controller.Options{MaxConcurrentReconciles: workers, NewQueue: namespaceTurns})
		for _, w := range r.Kinds.Objects() {
			b = b.Watches(w, workloadHandler(kind.name, r.managed))
		}
		if err := b.Complete(kindReconciler{r: r, kind: kind}); err != nil {
			return err
		}
	}
	return nil
}

// EnqueueSourcesOf asks the controllers to observe every Secret and ConfigMap the workloads
// consume, e.g. after a KickPolicy started managing them, so their sources get records. It
// blocks until the controllers took the requests (they run once the manager is started and,
// with leader election, leading) or ctx ends.
func (r *SourceReconciler) EnqueueSourcesOf(ctx context.Context, workloads ...client.Object) error {
	if r.triggers == nil {
		return errNotSetUp
	}
	for _, w := range workloads {
		for _, kind := range sourceKinds {
			if len(SourcesOf(kind.name, w)) == 0 {
				continue
			}
			select {
			case r.triggers[kind.name] <- event.GenericEvent{Object: w}:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	return nil
}

// SourcesOf returns one reconcile request per source of the given kind ("Secret", "ConfigMap")
// that the workload consumes; nil for an unsupported object.
func SourcesOf(kind string, workload client.Object) []reconcile.Request {
	return requestsFor(kind, workload.GetNamespace(), discovery.FromWorkload(workload))
}

func requestsFor(kind, namespace string, deps []discovery.Dependency) []reconcile.Request {
	var reqs []reconcile.Request
	for _, d := range deps {
		if d.Kind == kind {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: namespace, Name: d.Name}})
		}
	}
	return reqs
}

// workloadHandler enqueues the sources of kind that a managed workload consumes when it
// appears, and when its dependencies or labels change (its labels decide whether a policy
// manages it). The names an unmanaged workload references do not reach the queue: however
// many there are, they cost one decision per workload event.
func workloadHandler(kind string, managed func(client.Object) bool) handler.EventHandler {
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue) {
			if managed(e.Object) {
				add(q, SourcesOf(kind, e.Object))
			}
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue) {
			sameLabels := maps.Equal(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels())
			if g := e.ObjectNew.GetGeneration(); sameLabels && g != 0 && g == e.ObjectOld.GetGeneration() {
				// The spec, and so the pod template, is unchanged: a status
				// update, of which a rollout makes several.
				return
			}
			deps := discovery.FromWorkload(e.ObjectNew)
			if sameLabels && slices.Equal(discovery.FromWorkload(e.ObjectOld), deps) {
				return
			}
			if managed(e.ObjectNew) || managed(e.ObjectOld) {
				add(q, requestsFor(kind, e.ObjectNew.GetNamespace(), deps))
			}
		},
	}
}

// managed reports whether IsManaged manages the workload.
func (r *SourceReconciler) managed(w client.Object) bool {
	managed, _ := r.IsManaged(context.Background(), w)
	return managed
}

// recordHandler re-observes the source of a deleted record, so a record removed by hand is
// rebuilt (as a baseline) while its source is still consumed; and it forgets this process's
// own writes of records once the cache shows them.
func (r *SourceReconciler) recordHandler(kind string) handler.EventHandler {
	return handler.Funcs{
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, _ workqueue) {
			if rec, ok := e.ObjectNew.(*kickv1alpha1.SourceObservation); ok {
				r.own.cacheSaw(rec)
			}
		},
		CreateFunc: func(_ context.Context, e event.CreateEvent, _ workqueue) {
			if rec, ok := e.Object.(*kickv1alpha1.SourceObservation); ok {
				r.own.cacheSaw(rec)
			}
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue) {
			rec, ok := e.Object.(*kickv1alpha1.SourceObservation)
			if !ok {
				return
			}
			r.own.forget(types.NamespacedName{Namespace: rec.Namespace, Name: rec.Name})
			if string(rec.Spec.Source.Kind) == kind && rec.Spec.Source.Name != "" {
				q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: rec.Namespace, Name: rec.Spec.Source.Name}})
			}
		},
	}
}

func add(q workqueue, reqs []reconcile.Request) {
	for _, req := range reqs {
		q.Add(req)
	}
}

type workqueue = k8sworkqueue.TypedRateLimitingInterface[reconcile.Request]

// namespaceTurns is the observe controllers' queue (see package fairqueue).
func namespaceTurns(name string, rl k8sworkqueue.TypedRateLimiter[reconcile.Request]) workqueue {
	return fairqueue.New(name, rl, func(r reconcile.Request) string { return r.Namespace })
}

// kindReconciler is the reconcile.Reconciler of one source kind.
type kindReconciler struct {
	r    *SourceReconciler
	kind sourceKind
}

func (k kindReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	out, err := k.r.reconcileSource(ctx, k.kind, req.NamespacedName)
	if err == nil && out.retryAfter > 0 {
		// Not observed yet: its namespace waits for its own budget, not holding a worker.
		k.r.metrics.observed(k.kind.name, out)
		return reconcile.Result{RequeueAfter: out.retryAfter}, nil
	}
	if err == nil {
		// The record now matches the source (written, unchanged, or the source is gone):
		// a failed earlier write no longer holds restarts back.
		k.r.Records.Forget(inflight.Source{Namespace: req.Namespace, Kind: k.kind.name, Name: req.Name})
	}
	if out.skipped == "NotFound" || out.skipped == "Deleting" {
		k.r.own.forget(types.NamespacedName{Namespace: req.Namespace, Name: kickv1alpha1.ObservationName(k.kind.name, req.Name)})
	}
	if apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err) || errors.Is(err, errCacheBehind) {
		// The cache had not seen our own last write of the record (or the source's
		// latest incarnation) yet; classify again shortly instead of logging an error
		// and backing off.
		return reconcile.Result{RequeueAfter: 50 * time.Millisecond}, nil
	}
	if err == nil {
		logOutcome(ctx, out)
		k.r.metrics.observed(k.kind.name, out)
	}
	return reconcile.Result{}, err
}

// updatePasses decides whether a source's update is reconciled. A source the source cache
// follows passes at once: the cache asked followed when it took the source in, and the
// reconcile looks up the consumers again anyway, so asking here too cost each change those
// lookups twice on its way to the restart. What it lets through that followed would not (a
// source no managed workload consumes any more and without a record, still followed by the
// cache) reads only the cache in its reconcile and stops there (Unconsumed), in its own
// namespace's turn of the queue. Any other source is asked.
func (r *SourceReconciler) updatePasses(kind string, src client.Object) bool {
	if r.sourceCache.isFollowed(kind, src) {
		return true
	}
	return r.followed(kind, src)
}

// followed reports whether an event of a source can matter: a managed
// workload (IsManaged) consumes the source, or it has an observation record.
// Events of every other Secret and ConfigMap (most of a cluster's, and every
// name an unmanaged workload references) stop here, before the queue; the
// cache does not hold them and Fetch does not read them. A workload that
// starts consuming a source, or becomes managed, enqueues it itself (see
// workloadHandler, EnqueueSourcesOf). When the cache cannot answer, the
// event goes through.
func (r *SourceReconciler) followed(kind string, src client.Object) bool {
	ctx := context.Background()
	indexKey := discovery.IndexKey(kind, src.GetName())
	for _, wk := range r.Kinds.Kinds() {
		consumers, err := r.consumersOf(ctx, wk, src.GetNamespace(), indexKey)
		if err != nil {
			return true
		}
		for _, w := range consumers {
			if w.GetDeletionTimestamp() == nil {
				if managed, _ := r.IsManaged(ctx, w); managed {
					return true
				}
			}
		}
	}
	var rec kickv1alpha1.SourceObservation
	key := types.NamespacedName{Namespace: src.GetNamespace(), Name: kickv1alpha1.ObservationName(kind, src.GetName())}
	return !apierrors.IsNotFound(r.Client.Get(ctx, key, &rec))
}
