package fairqueue

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func namespaceOf(r reconcile.Request) string { return r.Namespace }

func newPriority(limit int, refill func(string) []reconcile.Request) *Priority[reconcile.Request] {
	return NewPriority(Options[reconcile.Request]{
		Name:        "test",
		RateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](time.Millisecond, time.Second),
		NamespaceOf: namespaceOf,
		Limit:       limit,
		Refill:      refill,
	})
}

// get takes the next item and gives it back at once.
func get(t *testing.T, q priorityqueue.PriorityQueue[reconcile.Request]) (reconcile.Request, int) {
	t.Helper()
	item, priority, shutdown := q.GetWithPriority()
	if shutdown {
		t.Fatal("queue shut down")
	}
	q.Done(item)
	return item, priority
}

// TestFloodOfRequestsTakesTurns plays the tenant of issue 32 who creates 5,000 KickRequests just
// before a bystander namespace's Secret changes: the bystander's request, added last, is the
// second one handed out, not the 5,001st.
func TestFloodOfRequestsTakesTurns(t *testing.T) {
	q := newPriority(0, nil)
	defer q.ShutDown()
	for i := range 5000 {
		q.Add(req("attacker", fmt.Sprintf("kr-%04d", i)))
	}
	q.Add(req("bystander", "deployment-web"))
	var got []string
	for range 3 {
		item, _ := get(t, q)
		got = append(got, item.String())
	}
	want := "[attacker/kr-0000 bystander/deployment-web attacker/kr-0001]"
	if fmt.Sprint(got) != want {
		t.Errorf("handed out %v, want %s", got, want)
	}
	if n := q.Len(); n != 4998 {
		t.Errorf("%d items left, want 4998", n)
	}
}

// TestPriorityComesBeforeTurns: a higher priority is handed out first, and turns are taken
// within a priority; an item queued again with a higher priority moves up (last there), one
// queued again with a lower one keeps its place and priority.
func TestPriorityComesBeforeTurns(t *testing.T) {
	q := newPriority(0, nil)
	defer q.ShutDown()
	low := handler.LowPriority
	for _, r := range []reconcile.Request{req("a", "1"), req("a", "2"), req("b", "1")} {
		q.AddWithOpts(priorityqueue.AddOpts{Priority: &low}, r)
	}
	q.Add(req("a", "3"))
	q.Add(req("a", "4"))
	q.Add(req("c", "1"))
	q.Add(req("a", "2")) // raised: last at priority 0
	q.AddWithOpts(priorityqueue.AddOpts{Priority: &low}, req("c", "1"))
	var got []string
	for range 6 {
		item, priority := get(t, q)
		got = append(got, fmt.Sprintf("%s@%d", item, priority))
	}
	want := "[a/3@0 c/1@0 a/4@0 a/2@0 a/1@-100 b/1@-100]"
	if fmt.Sprint(got) != want {
		t.Errorf("handed out %v, want %s", got, want)
	}
}

// TestWorkQueueRulesWithPriorities: the rules controller-runtime relies on hold: one entry per
// item, an item added while a worker has it comes back after Done (with the priority it was
// added with), delayed and rate-limited items come when due, the earliest time wins, Forget
// resets the rate limiter.
func TestWorkQueueRulesWithPriorities(t *testing.T) {
	q := newPriority(0, nil)
	defer q.ShutDown()
	x := req("a", "x")
	q.Add(x)
	q.Add(x)
	if n := q.Len(); n != 1 {
		t.Fatalf("an item added twice is queued %d times", n)
	}
	item, _, _ := q.GetWithPriority()
	low := handler.LowPriority
	q.AddWithOpts(priorityqueue.AddOpts{Priority: &low}, item)
	if n := q.Len(); n != 0 {
		t.Fatalf("an item a worker has was queued again at once (%d)", n)
	}
	q.Done(item)
	if again, priority := get(t, q); again != item || priority != low {
		t.Fatalf("after Done got %v at %d, want %v at %d", again, priority, item, low)
	}

	// A long delay and a short one: the short one wins; a delayed item
	// added without delay is ready at once.
	q.AddAfter(req("b", "y"), time.Hour)
	q.AddAfter(req("b", "y"), 5*time.Millisecond)
	q.AddAfter(req("b", "z"), time.Hour)
	q.Add(req("b", "z"))
	if got, _ := get(t, q); got != req("b", "z") {
		t.Fatalf("got %v, want b/z added without delay", got)
	}
	if got, _ := get(t, q); got != req("b", "y") { // blocks until its 5 ms pass
		t.Fatalf("got %v, want b/y", got)
	}

	c := req("c", "z")
	q.AddRateLimited(c)
	q.AddRateLimited(c)
	if got, _ := get(t, q); got != c {
		t.Fatalf("got %v, want %v", got, c)
	}
	if n := q.NumRequeues(c); n != 2 {
		t.Errorf("NumRequeues %d, want 2", n)
	}
	q.Forget(c)
	if n := q.NumRequeues(c); n != 0 {
		t.Errorf("NumRequeues %d after Forget, want 0", n)
	}
	if n := q.Len(); n != 0 {
		t.Errorf("%d items left, want none", n)
	}
}

// TestNamespaceOverItsLimit plays a tenant that queues more than its namespace may hold: what
// is over the limit is dropped, a bystander is still queued, and once
// the tenant's backlog has drained its items are listed again, at low priority, so nothing
// the controller was asked to look at is lost.
func TestNamespaceOverItsLimit(t *testing.T) {
	var mu sync.Mutex
	var refills []string
	refilled := make(chan struct{})
	q := newPriority(10, func(ns string) []reconcile.Request {
		mu.Lock()
		refills = append(refills, ns)
		mu.Unlock()
		defer close(refilled)
		return []reconcile.Request{req(ns, "late-00"), req(ns, "late-01")}
	})
	defer q.ShutDown()
	var drops []string
	q.opts.Dropped = func(ns string, first bool) {
		drops = append(drops, fmt.Sprintf("%s:%t", ns, first))
	}
	for i := range 15 {
		q.Add(req("attacker", fmt.Sprintf("kr-%02d", i)))
	}
	q.AddAfter(req("attacker", "kr-99"), time.Millisecond) // waiting items count too
	q.Add(req("bystander", "web"))
	if n := q.Len(); n != 11 {
		t.Fatalf("%d items queued, want the attacker's 10 and the bystander's 1", n)
	}
	q.opts.Dropped = nil
	if want := "[attacker:true attacker:false attacker:false attacker:false attacker:false attacker:false]"; fmt.Sprint(drops) != want {
		t.Errorf("drops reported %v, want %s", drops, want)
	}
	for range 11 {
		get(t, q)
	}
	<-refilled
	got := map[string]int{}
	for range 2 {
		item, priority := get(t, q)
		got[item.String()] = priority
	}
	want := map[string]int{"attacker/late-00": handler.LowPriority, "attacker/late-01": handler.LowPriority}
	if fmt.Sprint(got) != fmt.Sprint(want) || fmt.Sprint(refills) != "[attacker]" {
		t.Errorf("refilled %v with %v, want [attacker] with %v", refills, got, want)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.pending) != 0 || len(q.perNS) != 0 || len(q.handed) != 0 || len(q.overflowed) != 0 {
		t.Errorf("state left behind: %d pending, %v per namespace, %d handed, %v overflowed",
			len(q.pending), q.perNS, len(q.handed), q.overflowed)
	}
}

// BenchmarkQueue adds 1,000 items over 10 namespaces and takes them all (Get and Done), with
// client-go's rate-limiting queue ("client-go"), controller-runtime's priority queue
// ("priorityqueue", the controllers' default) and this one ("fair"); ns/op is for the 1,000.
func BenchmarkQueue(b *testing.B) {
	rl := func() workqueue.TypedRateLimiter[reconcile.Request] {
		return workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](time.Millisecond, time.Second)
	}
	items := make([]reconcile.Request, 1000)
	for i := range items {
		items[i] = req(fmt.Sprintf("ns-%d", i%10), fmt.Sprintf("kr-%04d", i))
	}
	for _, c := range []struct {
		name string
		new  func() workqueue.TypedRateLimitingInterface[reconcile.Request]
	}{
		{"client-go", func() workqueue.TypedRateLimitingInterface[reconcile.Request] {
			return workqueue.NewTypedRateLimitingQueue(rl())
		}},
		{"priorityqueue", func() workqueue.TypedRateLimitingInterface[reconcile.Request] {
			return priorityqueue.New("bench", func(o *priorityqueue.Opts[reconcile.Request]) { o.RateLimiter = rl() })
		}},
		{"fair", func() workqueue.TypedRateLimitingInterface[reconcile.Request] {
			return NewPriority(Options[reconcile.Request]{Name: "bench", RateLimiter: rl(), NamespaceOf: namespaceOf, Limit: 10000})
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			q := c.new()
			defer q.ShutDown()
			for b.Loop() {
				for _, it := range items {
					q.Add(it)
				}
				for range items {
					it, _ := q.Get()
					q.Done(it)
				}
			}
		})
	}
}

// TestConcurrentUse adds items from several goroutines (now, delayed, rate-limited, at two
// priorities, some again while a worker has them) while several workers take them: every item
// is handed out, and never to two workers at once.
func TestConcurrentUse(t *testing.T) {
	q := newPriority(0, nil)
	defer q.ShutDown()
	const producers, perProducer, workers = 4, 500, 4
	var mu sync.Mutex
	busy := map[reconcile.Request]bool{}
	seen := map[reconcile.Request]bool{}
	all := make(chan struct{})
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				item, _, shutdown := q.GetWithPriority()
				if shutdown {
					return
				}
				mu.Lock()
				if busy[item] {
					t.Errorf("%v handed to two workers at once", item)
				}
				busy[item] = true
				first := !seen[item]
				again := first && item.Name[len(item.Name)-1] == '7'
				seen[item] = true
				if first && len(seen) == producers*perProducer {
					close(all)
				}
				mu.Unlock()
				if again {
					q.Add(item) // comes back after Done
				}
				mu.Lock()
				busy[item] = false
				mu.Unlock()
				q.Done(item)
			}
		})
	}
	low := handler.LowPriority
	for p := range producers {
		wg.Go(func() {
			for i := range perProducer {
				item := req(fmt.Sprintf("ns-%d", i%7), fmt.Sprintf("p%d-%04d", p, i))
				switch i % 4 {
				case 0:
					q.Add(item)
				case 1:
					q.AddWithOpts(priorityqueue.AddOpts{Priority: &low}, item)
				case 2:
					q.AddAfter(item, time.Duration(i%5)*time.Millisecond)
				default:
					q.AddRateLimited(item)
				}
			}
		})
	}
	select {
	case <-all:
	case <-time.After(time.Minute):
		mu.Lock()
		t.Errorf("only %d of %d items handed out", len(seen), producers*perProducer)
		byKind := map[int]int{}
		for p := range producers {
			for i := range perProducer {
				if !seen[req(fmt.Sprintf("ns-%d", i%7), fmt.Sprintf("p%d-%04d", p, i))] {
					byKind[i%4]++
				}
			}
		}
		q.mu.Lock()
		t.Errorf("missing by kind %v; pending %d, waiting %d, queued %d", byKind, len(q.pending), len(q.waiting), q.queued)
		q.mu.Unlock()
		mu.Unlock()
	}
	q.ShutDown()
	wg.Wait()
}
