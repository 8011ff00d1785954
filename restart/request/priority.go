package request

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/fairqueue"
)

// lowPriority wraps a handler so its requests queue behind everything else:
// following a workload's rollout is less urgent than acting on a new
// change, so a burst of rollouts never delays the next restart.
func lowPriority(h handler.EventHandler) handler.EventHandler {
	return lowPriorityHandler{h}
}

type lowPriorityHandler struct{ inner handler.EventHandler }

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

func (h lowPriorityHandler) Create(ctx context.Context, e event.CreateEvent, q queue) {
	h.inner.Create(ctx, e, demote(q))
}

func (h lowPriorityHandler) Update(ctx context.Context, e event.UpdateEvent, q queue) {
	h.inner.Update(ctx, e, demote(q))
}

func (h lowPriorityHandler) Delete(ctx context.Context, e event.DeleteEvent, q queue) {
	h.inner.Delete(ctx, e, demote(q))
}

func (h lowPriorityHandler) Generic(ctx context.Context, e event.GenericEvent, q queue) {
	h.inner.Generic(ctx, e, demote(q))
}

// demote returns a queue that adds with handler.LowPriority when q is a
// priority queue (the default), and q itself otherwise.
func demote(q queue) queue {
	pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request])
	if !ok {
		return q
	}
	return lowPriorityQueue{pq}
}

type lowPriorityQueue struct {
	priorityqueue.PriorityQueue[reconcile.Request]
}

var low = ptr.To(handler.LowPriority)

func (q lowPriorityQueue) Add(item reconcile.Request) {
	q.AddWithOpts(priorityqueue.AddOpts{Priority: low}, item)
}

func (q lowPriorityQueue) AddAfter(item reconcile.Request, after time.Duration) {
	q.AddWithOpts(priorityqueue.AddOpts{Priority: low, After: after}, item)
}

func (q lowPriorityQueue) AddRateLimited(item reconcile.Request) {
	q.AddWithOpts(priorityqueue.AddOpts{Priority: low, RateLimited: true}, item)
}

func (q lowPriorityQueue) AddWithOpts(o priorityqueue.AddOpts, items ...reconcile.Request) {
	if o.Priority == nil {
		o.Priority = low
	}
	q.PriorityQueue.AddWithOpts(o, items...)
}

// QueueLimitPerNamespace is the most KickRequests one namespace may have
// in the request controller's queue (see namespaceTurns).
const QueueLimitPerNamespace = 4096

// namespaceTurns returns the KickRequest controller's queue: a priority
// queue (lowPriority still works) that takes turns between namespaces
// within each priority, so a namespace that queued thousands of requests
// (created, or woken by edits of its workloads and sources) delays
// another namespace's request by about one of its own per worker, not by
// its whole backlog. A namespace holds at most QueueLimitPerNamespace
// items; what comes over that is dropped, and once the namespace's backlog
// has drained, every KickRequest of the namespace is queued again from the
// cache (at low priority), so a dropped look is late, never lost.
func namespaceTurns(c client.Reader, m *Metrics, logger logr.Logger) func(string, workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	return func(name string, rl workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
		return fairqueue.NewPriority(fairqueue.Options[reconcile.Request]{
			Name:        name,
			RateLimiter: rl,
			NamespaceOf: func(r reconcile.Request) string { return r.Namespace },
			Limit:       QueueLimitPerNamespace,
			Refill:      func(ns string) []reconcile.Request { return requestsIn(context.Background(), c, ns) },
			Dropped: func(ns string, first bool) {
				m.requestQueueDropped()
				if first {
					logger.Info("a namespace has more KickRequests queued than its bound; the rest are looked at once its backlog drained",
						"namespace", ns, "bound", QueueLimitPerNamespace)
				}
			},
		})
	}
}

// requestsIn names every KickRequest of namespace in the cache.
func requestsIn(ctx context.Context, c client.Reader, namespace string) []reconcile.Request {
	var list kickv1alpha1.KickRequestList
	if err := c.List(ctx, &list, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	out := make([]reconcile.Request, len(list.Items))
	for i := range list.Items {
		out[i] = reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])}
	}
	return out
}
