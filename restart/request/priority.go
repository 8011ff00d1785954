package request

import (
	"context"
	"time"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
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
