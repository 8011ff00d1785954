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
const (
	// DefaultFetchRate is the default of SourceReconciler.FetchRate.
	DefaultFetchRate = 50
	// DefaultFetchBurst is the default of SourceReconciler.FetchBurst.
	DefaultFetchBurst = 200
	// maxBudgets bounds the namespaces with a bucket; past it, full (idle) buckets are dropped.
	maxBudgets = 10_000
)

// namespaceBudget is a token bucket per namespace. Pure: the caller passes the time.
type namespaceBudget struct {
	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time
}

// take spends one token of namespace and returns 0, or returns how long until one is there.
// A namespace starts with burst tokens and gains rate per second, up to burst.
func (b *namespaceBudget) take(namespace string, now time.Time, rate float64, burst int) time.Duration {
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
		k.tokens--
		return 0
	}
	return time.Duration((1 - k.tokens) / rate * float64(time.Second))
}

// dropIdleLocked forgets the buckets that are full again: a new one would be the same. If
// none is, it forgets them all (more than maxBudgets namespaces fetching at once).
func (b *namespaceBudget) dropIdleLocked(now time.Time, rate float64, burst int) {
	for ns, k := range b.buckets {
		if k.tokens+now.Sub(k.at).Seconds()*rate >= float64(burst) {
			delete(b.buckets, ns)
		}
	}
	if len(b.buckets) >= maxBudgets {
		clear(b.buckets)
	}
}
