package fairqueue

import (
	"container/heap"
	"container/list"
	"math/rand/v2"
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/handler"
)

// Options configure NewPriority.
type Options[T comparable] struct {
	// Name names the queue's workqueue_* metrics (the controller's name).
	Name string
	// RateLimiter sets the delay of AddRateLimited; nil means
	// controller-runtime's default for priority queues.
	RateLimiter workqueue.TypedRateLimiter[T]
	// NamespaceOf gives the namespace an item is charged to.
	NamespaceOf func(T) string
	// Limit bounds the items one namespace may have queued, ready or
	// waiting (plus, briefly, the few re-added while a worker has them);
	// 0 means no bound. A new item of a namespace at its limit is dropped
	// and the namespace marked: once its backlog has drained, Refill is
	// asked for its items again.
	Limit int
	// Refill lists a namespace's items again (a level-driven controller's
	// every object of that namespace); they queue at low priority. Nil
	// drops what is over the limit for good.
	Refill func(namespace string) []T
	// Dropped, when set, is told of every item dropped over the limit,
	// with its namespace; first is set for the first drop since the
	// namespace last drained. It must not call into the queue.
	Dropped func(namespace string, first bool)
}

// NewPriority returns a controller-runtime priority queue
// (priorityqueue.PriorityQueue, so handlers may add with priorities) that
// takes turns between namespaces within each priority: among the ready
// items of the highest priority, the next one handed out is the first of
// the namespace after the last one served. Like controller-runtime's own
// queue it keeps one entry per item, with the highest priority and the
// earliest time it was added with, never hands out an item a worker still
// has (one added meanwhile comes back after Done), and rate-limits through
// RateLimiter. It fits controller.Options.NewQueue.
func NewPriority[T comparable](o Options[T]) *Priority[T] {
	if o.RateLimiter == nil {
		o.RateLimiter = workqueue.NewTypedItemExponentialFailureRateLimiter[T](5*time.Millisecond, 1000*time.Second)
	}
	q := &Priority[T]{
		opts:       o,
		pending:    map[T]*entry[T]{},
		perNS:      map[string]int{},
		overflowed: map[string]bool{},
		handed:     map[T]int{},
		wake:       make(chan struct{}, 1),
		stop:       make(chan struct{}),
		now:        time.Now,
	}
	// client-go's queue keeps the rules (no duplicates, nothing handed
	// out twice at once, the metrics); q is its storage.
	q.ready = workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[T]{Name: o.Name, Queue: (*storage[T])(q)})
	go q.waitLoop()
	return q
}

// Priority is the queue NewPriority returns.
type Priority[T comparable] struct {
	opts  Options[T]
	ready *workqueue.Typed[T]
	now   func() time.Time

	// mu guards what follows. client-go calls the storage methods under
	// its own lock, which is therefore always taken before mu, never
	// after: nothing calls into ready while holding mu.
	mu         sync.Mutex
	pending    map[T]*entry[T] // added and not yet handed out
	perNS      map[string]int  // len(pending) per namespace
	overflowed map[string]bool // namespaces that dropped an item since they last drained
	waiting    waitHeap[T]
	levels     []*level[T] // ready items by priority, highest first
	queued     int         // items in levels
	handed     map[T]int   // priorities of items handed out, until GetWithPriority reads them

	wake chan struct{}
	stop chan struct{}
	once sync.Once
}

var _ priorityqueue.PriorityQueue[int] = (*Priority[int])(nil)

// entry is what the queue knows of one pending item.
type entry[T comparable] struct {
	item     T
	ns       string
	priority int
	at       time.Time     // when it is due, while waiting
	index    int           // in waiting; -1 when not waiting
	lvl      *level[T]     // the level holding it, nil when none does
	elem     *list.Element // its place in lvl
}

// level is the ready items of one priority: a FIFO per namespace, and the
// namespaces in the order of their turns. A namespace is in order exactly
// when it has a list (which may have been emptied by a priority raise).
type level[T comparable] struct {
	priority int
	lists    map[string]*list.List
	order    []string
	n        int
}

// AddWithOpts implements priorityqueue.PriorityQueue.
func (q *Priority[T]) AddWithOpts(o priorityqueue.AddOpts, items ...T) {
	priority := 0
	if o.Priority != nil {
		priority = *o.Priority
	}
	for _, item := range items {
		after := o.After
		if o.RateLimited {
			if rl := q.opts.RateLimiter.When(item); after <= 0 || rl < after {
				after = rl
			}
		}
		if q.add(item, priority, after) {
			q.ready.Add(item)
		}
	}
}

// add records item as pending and says whether it is to go to the ready
// queue now.
func (q *Priority[T]) add(item T, priority int, after time.Duration) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	e := q.pending[item]
	if e == nil {
		ns := q.opts.NamespaceOf(item)
		if q.opts.Limit > 0 && q.perNS[ns] >= q.opts.Limit {
			first := !q.overflowed[ns]
			q.overflowed[ns] = true
			if q.opts.Dropped != nil {
				q.opts.Dropped(ns, first)
			}
			return false
		}
		e = &entry[T]{item: item, ns: ns, priority: priority, index: -1}
		q.pending[item] = e
		q.perNS[ns]++
		if after <= 0 {
			return true
		}
		e.at = q.now().Add(after)
		heap.Push(&q.waiting, e)
		q.poke()
		return false
	}
	if priority > e.priority {
		e.priority = priority
	}
	if e.index < 0 {
		// Ready already, or re-added while a worker has it: client-go
		// keeps one entry, and Touch (or Push after Done) raises its
		// priority.
		return true
	}
	if after <= 0 {
		heap.Remove(&q.waiting, e.index)
		return true
	}
	if at := q.now().Add(after); at.Before(e.at) {
		e.at = at
		heap.Fix(&q.waiting, e.index)
		q.poke()
	}
	return false
}

// poke wakes the wait loop to look at the earliest waiting item again.
func (q *Priority[T]) poke() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// waitLoop moves the waiting items that are due to the ready queue.
func (q *Priority[T]) waitLoop() {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		select {
		case <-q.stop:
			return
		case <-q.wake:
		case <-timer.C:
		}
		q.mu.Lock()
		now := q.now()
		var due []T
		for len(q.waiting) > 0 && !q.waiting[0].at.After(now) {
			due = append(due, heap.Pop(&q.waiting).(*entry[T]).item)
		}
		next := time.Hour
		if len(q.waiting) > 0 {
			next = q.waiting[0].at.Sub(now)
		}
		q.mu.Unlock()
		for _, item := range due {
			q.ready.Add(item)
		}
		timer.Reset(next)
	}
}

// Add implements workqueue.Interface.
func (q *Priority[T]) Add(item T) { q.AddWithOpts(priorityqueue.AddOpts{}, item) }

// AddAfter implements workqueue.DelayingInterface.
func (q *Priority[T]) AddAfter(item T, after time.Duration) {
	q.AddWithOpts(priorityqueue.AddOpts{After: after}, item)
}

// AddRateLimited implements workqueue.RateLimitingInterface.
func (q *Priority[T]) AddRateLimited(item T) {
	q.AddWithOpts(priorityqueue.AddOpts{RateLimited: true}, item)
}

// GetWithPriority implements priorityqueue.PriorityQueue.
func (q *Priority[T]) GetWithPriority() (T, int, bool) {
	item, shutdown := q.ready.Get()
	if shutdown {
		return item, 0, true
	}
	q.mu.Lock()
	priority := q.handed[item]
	delete(q.handed, item)
	q.mu.Unlock()
	return item, priority, false
}

// Get implements workqueue.Interface.
func (q *Priority[T]) Get() (T, bool) {
	item, _, shutdown := q.GetWithPriority()
	return item, shutdown
}

// Done implements workqueue.Interface.
func (q *Priority[T]) Done(item T) { q.ready.Done(item) }

// Forget implements workqueue.RateLimitingInterface.
func (q *Priority[T]) Forget(item T) { q.opts.RateLimiter.Forget(item) }

// NumRequeues implements workqueue.RateLimitingInterface.
func (q *Priority[T]) NumRequeues(item T) int { return q.opts.RateLimiter.NumRequeues(item) }

// Len implements workqueue.Interface: the items ready to be handed out.
func (q *Priority[T]) Len() int { return q.ready.Len() }

// ShutDown implements workqueue.Interface.
func (q *Priority[T]) ShutDown() {
	q.once.Do(func() { close(q.stop) })
	q.ready.ShutDown()
}

// ShutDownWithDrain implements workqueue.Interface; like
// controller-runtime's priority queue it does not drain.
func (q *Priority[T]) ShutDownWithDrain() { q.ShutDown() }

// ShuttingDown implements workqueue.Interface.
func (q *Priority[T]) ShuttingDown() bool { return q.ready.ShuttingDown() }

// storage is the ready order client-go's queue keeps its items in
// (workqueue.Queue); its methods run under client-go's lock.
type storage[T comparable] Priority[T]

// Push implements workqueue.Queue: the item goes last in its namespace's
// list of its priority; a namespace with no list there gets the last turn.
func (s *storage[T]) Push(item T) {
	q := (*Priority[T])(s)
	q.mu.Lock()
	defer q.mu.Unlock()
	e := q.pending[item]
	if e == nil {
		// Added in the moment between a worker taking it and add seeing
		// that: it counts again.
		ns := q.opts.NamespaceOf(item)
		e = &entry[T]{item: item, ns: ns, index: -1}
		q.pending[item] = e
		q.perNS[ns]++
	}
	q.place(e)
}

// Touch implements workqueue.Queue: an item added again keeps its place,
// unless it was added with a higher priority, where it goes last.
func (s *storage[T]) Touch(item T) {
	q := (*Priority[T])(s)
	q.mu.Lock()
	defer q.mu.Unlock()
	if e := q.pending[item]; e != nil && e.lvl != nil && e.priority > e.lvl.priority {
		e.lvl.lists[e.ns].Remove(e.elem)
		e.lvl.n--
		q.queued--
		q.place(e)
	}
}

// place puts e last in its namespace's list at its priority.
func (q *Priority[T]) place(e *entry[T]) {
	lvl := q.level(e.priority)
	l := lvl.lists[e.ns]
	if l == nil {
		l = list.New()
		lvl.lists[e.ns] = l
		lvl.order = append(lvl.order, e.ns)
	}
	e.lvl, e.elem = lvl, l.PushBack(e)
	lvl.n++
	q.queued++
}

// level returns the level of priority, adding it in order.
func (q *Priority[T]) level(priority int) *level[T] {
	i := 0
	for ; i < len(q.levels) && q.levels[i].priority >= priority; i++ {
		if q.levels[i].priority == priority {
			return q.levels[i]
		}
	}
	lvl := &level[T]{priority: priority, lists: map[string]*list.List{}}
	q.levels = append(q.levels, nil)
	copy(q.levels[i+1:], q.levels[i:])
	q.levels[i] = lvl
	return lvl
}

// Len implements workqueue.Queue.
func (s *storage[T]) Len() int {
	q := (*Priority[T])(s)
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.queued
}

// Pop implements workqueue.Queue: the first item of the namespace whose
// turn it is at the highest priority; that namespace, if it has more
// there, goes to the back.
func (s *storage[T]) Pop() T {
	q := (*Priority[T])(s)
	q.mu.Lock()
	i := 0
	for q.levels[i].n == 0 {
		i++
	}
	lvl := q.levels[i]
	var e *entry[T]
	for e == nil {
		ns := lvl.order[0]
		lvl.order[0] = ""
		lvl.order = lvl.order[1:]
		l := lvl.lists[ns]
		if front := l.Front(); front != nil {
			e = l.Remove(front).(*entry[T])
		}
		if l.Len() > 0 {
			lvl.order = append(lvl.order, ns)
		} else {
			delete(lvl.lists, ns)
		}
	}
	lvl.n--
	q.queued--
	if lvl.n == 0 {
		q.levels = append(q.levels[:i], q.levels[i+1:]...)
	}
	delete(q.pending, e.item)
	q.handed[e.item] = e.priority
	refill := q.drained(e.ns)
	q.mu.Unlock()
	if refill {
		go q.refill(e.ns)
	}
	return e.item
}

// drained counts one item of ns less and says whether ns dropped items
// and has now drained, so its items are to be listed again.
func (q *Priority[T]) drained(ns string) bool {
	if q.perNS[ns]--; q.perNS[ns] > 0 {
		return false
	}
	delete(q.perNS, ns)
	if !q.overflowed[ns] {
		return false
	}
	delete(q.overflowed, ns)
	return q.opts.Refill != nil
}

// refill queues a drained namespace's items again, at low priority, in a
// random order, so that when there are more than the limit the ones left
// out differ from one refill to the next.
func (q *Priority[T]) refill(ns string) {
	items := q.opts.Refill(ns)
	rand.Shuffle(len(items), func(i, j int) { items[i], items[j] = items[j], items[i] })
	q.AddWithOpts(priorityqueue.AddOpts{Priority: &lowPriority}, items...)
}

var lowPriority = handler.LowPriority

// waitHeap orders the waiting entries by when they are due.
type waitHeap[T comparable] []*entry[T]

func (h waitHeap[T]) Len() int           { return len(h) }
func (h waitHeap[T]) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h waitHeap[T]) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *waitHeap[T]) Push(x any) {
	e := x.(*entry[T])
	e.index = len(*h)
	*h = append(*h, e)
}
func (h *waitHeap[T]) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	e.index = -1
	return e
}
