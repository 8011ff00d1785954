package observe

import (
	"container/heap"
	"testing"
	"time"
)

// simItem is a request in a simulated shared observe queue.
type simItem struct {
	namespace string
	ready     time.Time
	seq       int
}

type simQueue []simItem

func (q simQueue) Len() int { return len(q) }
func (q simQueue) Less(i, j int) bool {
	if !q[i].ready.Equal(q[j].ready) {
		return q[i].ready.Before(q[j].ready)
	}
	return q[i].seq < q[j].seq
}
func (q simQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *simQueue) Push(x any)   { *q = append(*q, x.(simItem)) }
func (q *simQueue) Pop() any {
	old := *q
	it := old[len(old)-1]
	*q = old[:len(old)-1]
	return it
}

// budgetSim plays a namespace that names n sources the cache does not hold, all at once, into
// a queue it shares with a bystander, served by one worker that spends cost on each request
// (a request whose namespace has no token is sent back with take's wait, as reconcileSource
// does). The bystander's one request arrives at bystanderAt. It returns how many of the
// attacker's requests the worker handled between the bystander's arrival and its turn, and
// how many it handled in all up to end.
func budgetSim(take func(b *namespaceBudget, ns string, now time.Time) time.Duration, n int, cost, bystanderAt, end time.Duration) (ahead, handled int) {
	var b namespaceBudget
	start := time.Unix(1_700_000_000, 0)
	now, seq := start, 0
	q := &simQueue{}
	for range n {
		seq++
		heap.Push(q, simItem{namespace: "attacker", ready: start, seq: seq})
	}
	bystanderIn, bystanderDone := false, false
	for now.Before(start.Add(end)) {
		if !bystanderIn && !now.Before(start.Add(bystanderAt)) {
			seq++
			heap.Push(q, simItem{namespace: "bystander", ready: now, seq: seq})
			bystanderIn = true
		}
		if q.Len() == 0 {
			break
		}
		it := heap.Pop(q).(simItem)
		if it.ready.After(now) {
			next := it.ready
			if !bystanderIn && start.Add(bystanderAt).Before(next) {
				next = start.Add(bystanderAt)
			}
			heap.Push(q, it)
			now = next
			continue
		}
		now = now.Add(cost)
		if it.namespace == "bystander" {
			bystanderDone = true
			continue
		}
		handled++
		if bystanderIn && !bystanderDone {
			ahead++
		}
		if wait := take(&b, it.namespace, now); wait > 0 {
			seq++
			heap.Push(q, simItem{namespace: it.namespace, ready: now.Add(wait), seq: seq})
		}
	}
	return ahead, handled
}

// TestDeferredReadsDoNotQueueBeforeOthers plays the attacker of issue 32: a managed workload
// names 3,000 Secrets nobody created, so 3,000 reads are charged to its namespace at once. The
// reads past its budget are sent back spread at its rate: the attacker's requests judged in
// the shared queue stay near its budget (burst, then rate a second), and a bystander's request
// arriving later waits behind a handful of them, not behind all 2,800 deferred ones coming
// back together.
func TestDeferredReadsDoNotQueueBeforeOthers(t *testing.T) {
	const n, rate, burst = 3000, DefaultFetchRate, DefaultFetchBurst
	end := 10 * time.Second
	take := func(b *namespaceBudget, ns string, now time.Time) time.Duration { return b.take(ns, now, rate, burst) }
	ahead, handled := budgetSim(take, n, 100*time.Microsecond, 5*time.Second, end)
	// Each of the 3,000 is judged once on arrival and once more when its slot comes.
	if limit := n + rate*int(end/time.Second) + burst; handled > limit {
		t.Errorf("the worker judged the attacker's requests %d times in %s, want at most %d (its budget)", handled, end, limit)
	}
	if ahead > 3 {
		t.Errorf("the bystander's request waited behind %d of the attacker's, want at most 3", ahead)
	}
}

// BenchmarkDeferredReads compares, in simulated time (10 s, one worker spending 100 µs per
// request), the attacker's requests the worker judges and how many of them a bystander's
// request waits behind: "next-token" sends a deferred read back when the next token is there
// (as before), "slot" at its namespace's next free slot.
func BenchmarkDeferredReads(b *testing.B) {
	nextToken := func(b *namespaceBudget, ns string, now time.Time) time.Duration {
		b.mu.Lock()
		k := b.buckets[ns]
		b.mu.Unlock()
		if k != nil {
			// The former answer: only the time until the next token.
			k.next = time.Time{}
		}
		return b.take(ns, now, DefaultFetchRate, DefaultFetchBurst)
	}
	slot := func(b *namespaceBudget, ns string, now time.Time) time.Duration {
		return b.take(ns, now, DefaultFetchRate, DefaultFetchBurst)
	}
	for _, c := range []struct {
		name string
		take func(*namespaceBudget, string, time.Time) time.Duration
	}{{"next-token", nextToken}, {"slot", slot}} {
		b.Run(c.name, func(b *testing.B) {
			var ahead, handled int
			for b.Loop() {
				ahead, handled = budgetSim(c.take, 3000, 100*time.Microsecond, 5*time.Second, 10*time.Second)
			}
			b.ReportMetric(float64(handled), "judged/10s")
			b.ReportMetric(float64(ahead), "ahead-of-bystander")
		})
	}
}
