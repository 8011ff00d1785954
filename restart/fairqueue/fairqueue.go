// Package fairqueue is a controller work queue that takes turns between
// namespaces: the next item handed to a worker comes from the namespace
// after the last one served, so a namespace that queued thousands of items
// delays another namespace's item by at most one of its own (per worker
// busy). New is a plain rate-limited queue (the observer's); NewPriority
// is a controller-runtime priority queue that takes turns within each
// priority and bounds what one namespace may queue (the KickRequest
// controller's). In both, no duplicates, an item added while it is being
// processed coming back after Done, and the workqueue_* metrics are
// client-go's work queue, with the turns as its storage.
package fairqueue

import (
	"k8s.io/client-go/util/workqueue"
)

// New returns a rate-limited work queue named name (the name of its
// metrics) that takes turns between the namespaces namespaceOf gives its
// items. It fits controller.Options.NewQueue:
//
//	NewQueue: func(name string, rl workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
//		return fairqueue.New(name, rl, func(r reconcile.Request) string { return r.Namespace })
//	}
func New[T comparable](name string, rateLimiter workqueue.TypedRateLimiter[T], namespaceOf func(T) string) workqueue.TypedRateLimitingInterface[T] {
	q := workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[T]{Name: name, Queue: newTurns(namespaceOf)})
	delaying := workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[T]{Name: name, Queue: q})
	return workqueue.NewTypedRateLimitingQueueWithConfig(rateLimiter, workqueue.TypedRateLimitingQueueConfig[T]{Name: name, DelayingQueue: delaying})
}

// turns is the queue's storage (workqueue.Queue): one FIFO per namespace,
// and the namespaces with items in the order of their turns. client-go
// calls it under the queue's lock and pushes an item only when it is not
// queued already.
type turns[T comparable] struct {
	namespaceOf func(T) string
	items       map[string][]T
	order       []string // namespaces with items; the first one's turn is next
	n           int
}

func newTurns[T comparable](namespaceOf func(T) string) *turns[T] {
	return &turns[T]{namespaceOf: namespaceOf, items: map[string][]T{}}
}

var _ workqueue.Queue[int] = (*turns[int])(nil)

// Touch implements workqueue.Queue: an item added again keeps its place.
func (t *turns[T]) Touch(T) {}

// Push implements workqueue.Queue: the item goes last in its namespace; a
// namespace without items gets the last turn.
func (t *turns[T]) Push(item T) {
	ns := t.namespaceOf(item)
	if len(t.items[ns]) == 0 {
		t.order = append(t.order, ns)
	}
	t.items[ns] = append(t.items[ns], item)
	t.n++
}

// Len implements workqueue.Queue.
func (t *turns[T]) Len() int { return t.n }

// Pop implements workqueue.Queue: the first item of the namespace whose
// turn it is; that namespace, if it has more, goes to the back.
func (t *turns[T]) Pop() T {
	ns := t.order[0]
	var zero T
	t.order[0] = ""
	t.order = t.order[1:]
	q := t.items[ns]
	item := q[0]
	q[0] = zero
	if q = q[1:]; len(q) > 0 {
		t.items[ns] = q
		t.order = append(t.order, ns)
	} else {
		delete(t.items, ns)
	}
	t.n--
	return item
}
