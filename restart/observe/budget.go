package observe

import (
	"sync"
	"time"
)

// Reads of sources the cache does not hold (SourceCache.Fetch) are charged to the namespace
// of the workload that named them: each namespace has its own token bucket. A tenant whose
// workloads name thousands of sources, or rename them in a loop, waits for its own tokens;
// its requests go back to the queue (RequeueAfter) without holding a worker, so the other
// namespaces' sources are still observed at once.
//
// The requests sent back are spread out: each gets the next free slot of its namespace, one
// every 1/rate seconds, so a namespace's deferred requests come back to the shared queue at
// its rate, not all at once. (Given only the time until the next token, 3,000 deferred reads
// came back together every 20 ms, each to be judged and deferred again: a busy loop that took
// the manager's CPU and stood in the queue before every other namespace's sources.)
const (
	// DefaultFetchRate is the default of SourceReconciler.FetchRate.
	DefaultFetchRate = 50
	// DefaultFetchBurst is the default of SourceReconciler.FetchBurst.
	DefaultFetchBurst = 200
	// maxBudgets bounds the namespaces with a bucket; past it, full (idle) buckets are dropped.
	maxBudgets = 10_000
	// maxDeferral bounds how far ahead a deferred read is sent: a namespace with more
	// deferred reads than its rate serves in this time sees them come back together, at most
	// once per maxDeferral each (the observer's queue takes turns between namespaces, so such
	// a batch waits behind the others). It also bounds what waits in the queue: a tenant's
	// names for at most this long (the soak's renames, 1,500 names a second, would keep
	// 90,000 of them waiting with a minute).
	maxDeferral = 10 * time.Second
)

// namespaceBudget is a token bucket per namespace. Pure: the caller passes the time.
type namespaceBudget struct {
	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time
	// next is the slot the next deferred read gets; zero or past when none is waiting.
	next time.Time
}

// take spends one token of namespace and returns 0, or returns when to ask again: the
// namespace's next free slot (slots are 1/rate apart, from when the next token is there),
// at most maxDeferral ahead. A namespace starts with burst tokens and gains rate per second,
// up to burst.
func (b *namespaceBudget) take(namespace string, now time.Time, rate float64, burst int) time.Duration {
	return b.ask(namespace, now, rate, burst, true)
}

// wait is take without spending: 0 when namespace has a token now (which it keeps), else when
// to ask again, a slot reserved as take reserves it.
func (b *namespaceBudget) wait(namespace string, now time.Time, rate float64, burst int) time.Duration {
	return b.ask(namespace, now, rate, burst, false)
}

func (b *namespaceBudget) ask(namespace string, now time.Time, rate float64, burst int, spend bool) time.Duration {
	if rate <= 0 {
		rate = DefaultFetchRate
	}
	if burst <= 0 {
		burst = DefaultFetchBurst
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buckets == nil {
		b.buckets = map[string]*bucket{}
	}
	k := b.buckets[namespace]
	if k == nil {
		if len(b.buckets) >= maxBudgets {
			b.dropIdleLocked(now, rate, burst)
		}
		k = &bucket{tokens: float64(burst), at: now}
		b.buckets[namespace] = k
	}
	if now.After(k.at) {
		k.tokens = min(float64(burst), k.tokens+now.Sub(k.at).Seconds()*rate)
		k.at = now
	}
	if k.tokens >= 1 {
		if spend {
			k.tokens--
		}
		return 0
	}
	slot := now.Add(time.Duration((1 - k.tokens) / rate * float64(time.Second)))
	if k.next.After(slot) {
		slot = k.next
	}
	if limit := now.Add(maxDeferral); slot.After(limit) {
		return maxDeferral
	}
	k.next = slot.Add(time.Duration(float64(time.Second) / rate))
	return slot.Sub(now)
}

// dropIdleLocked forgets the buckets that are full again: a new one would be the same. If
// none is, it forgets them all (more than maxBudgets namespaces fetching at once).
func (b *namespaceBudget) dropIdleLocked(now time.Time, rate float64, burst int) {
	for ns, k := range b.buckets {
		if k.tokens+now.Sub(k.at).Seconds()*rate >= float64(burst) && !k.next.After(now) {
			delete(b.buckets, ns)
		}
	}
	if len(b.buckets) >= maxBudgets {
		clear(b.buckets)
	}
}
