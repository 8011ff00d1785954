package fairqueue

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func newQueue() workqueue.TypedRateLimitingInterface[reconcile.Request] {
	return New("test", workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](time.Millisecond, time.Second),
		func(r reconcile.Request) string { return r.Namespace })
}

func req(ns, name string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}
}

// TestFloodingNamespaceTakesTurns plays the attacker of issue 32: a managed workload names
// 3,000 Secrets, each queued for the observer, just before a bystander's Secret changes. The
// bystander's item is the second one handed out, not the 3,001st; with a second bystander
// namespace both come before the attacker's third item.
func TestFloodingNamespaceTakesTurns(t *testing.T) {
	q := newQueue()
	defer q.ShutDown()
	for i := range 3000 {
		q.Add(req("attacker", fmt.Sprintf("missing-%04d", i)))
	}
	q.Add(req("bystander", "db"))
	q.Add(req("other", "cfg"))
	var got []reconcile.Request
	for range 5 {
		item, shutdown := q.Get()
		if shutdown {
			t.Fatal("queue shut down")
		}
		got = append(got, item)
		q.Done(item)
	}
	want := []reconcile.Request{req("attacker", "missing-0000"), req("bystander", "db"), req("other", "cfg"),
		req("attacker", "missing-0001"), req("attacker", "missing-0002")}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("handed out %v, want %v", got, want)
	}
	if n := q.Len(); n != 2997 {
		t.Errorf("%d items left, want 2997", n)
	}
}

// TestWorkQueueRules: the queue keeps client-go's rules: an item queued twice is handed out
// once, an item added while processed comes back after Done, delayed items come when due.
func TestWorkQueueRules(t *testing.T) {
	q := newQueue()
	defer q.ShutDown()
	q.Add(req("a", "x"))
	q.Add(req("a", "x"))
	if n := q.Len(); n != 1 {
		t.Fatalf("an item added twice is queued %d times", n)
	}
	item, _ := q.Get()
	q.Add(item)
	if n := q.Len(); n != 0 {
		t.Fatalf("an item being processed was queued again at once (%d)", n)
	}
	q.Done(item)
	if again, _ := q.Get(); again != item {
		t.Fatalf("after Done got %v, want %v again", again, item)
	}
	q.Done(item)
	q.AddAfter(req("b", "y"), 10*time.Millisecond)
	q.AddRateLimited(req("c", "z"))
	seen := map[reconcile.Request]bool{}
	for range 2 {
		it, _ := q.Get() // blocks until the delays pass
		seen[it] = true
		q.Done(it)
	}
	if !seen[req("b", "y")] || !seen[req("c", "z")] {
		t.Errorf("delayed items: got %v", seen)
	}
	if n := q.NumRequeues(req("c", "z")); n != 1 {
		t.Errorf("NumRequeues %d, want 1", n)
	}
}

// BenchmarkFlood is a shared queue holding 3,000 of an attacker's items when a bystander's
// item comes: how many items are handed out before it, with client-go's FIFO ("fifo") and
// with turns ("turns").
func BenchmarkFlood(b *testing.B) {
	for _, c := range []struct {
		name string
		new  func() workqueue.TypedRateLimitingInterface[reconcile.Request]
	}{
		{"fifo", func() workqueue.TypedRateLimitingInterface[reconcile.Request] {
			return workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](time.Millisecond, time.Second))
		}},
		{"turns", newQueue},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			var ahead int
			for b.Loop() {
				q := c.new()
				for i := range 3000 {
					q.Add(req("attacker", fmt.Sprintf("missing-%04d", i)))
				}
				q.Add(req("bystander", "db"))
				for ahead = 0; ; ahead++ {
					item, _ := q.Get()
					q.Done(item)
					if item.Namespace == "bystander" {
						break
					}
				}
				q.ShutDown()
			}
			b.ReportMetric(float64(ahead), "ahead-of-bystander")
		})
	}
}
