package request

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
)

// memory remembers this process's own recent writes until the informer
// cache shows them, so a reconcile never acts on a cache that lags behind
// them: the status it last wrote per request (by resourceVersion) and the
// restart stamp it last wrote per workload. Without it, a reconcile right
// after a restart could read the workload's old template and restart again.
//
// It also holds the restarts the driver is applying right now (claims), so
// the request reconciler waits for the driver's patch instead of racing it.
type memory struct {
	mu      sync.Mutex
	written map[types.NamespacedName]string
	stamps  map[string]time.Time
	claims  map[string]time.Time
	// debts are the driver's restarts whose requests are not written yet.
	debts map[string]owedRequest
	// young are the requests following a restart of the driver whose
	// status does not record it yet (see deferStatus).
	young map[types.NamespacedName]bool
	// halts are halts the cache may not show yet.
	halts haltMemory
	// waves are the wave members read lately, shared by the looks of a
	// fan-out's waiting requests.
	waves waveCache
	// waiters are the requests earlier waves hold, grouped by what they
	// wait for (see wavewake.go).
	waiters waveWaiters
}

// waveCache is the memory's cache of wave members; nil without a memory.
func (m *memory) waveCache() *waveCache {
	if m == nil {
		return nil
	}
	return &m.waves
}

func newMemory() *memory {
	return &memory{written: map[types.NamespacedName]string{}, stamps: map[string]time.Time{}, claims: map[string]time.Time{},
		debts: map[string]owedRequest{}, young: map[types.NamespacedName]bool{}}
}

// putOff notes whether the request puts off recording the young rollout it
// follows. It returns how many requests do, and whether this one is part
// of a burst: it put off its write while busyRollouts or more did, which
// it stays until it writes.
func (m *memory) putOff(key types.NamespacedName, putOff bool) (young int, burst bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !putOff {
		delete(m.young, key)
		return len(m.young), false
	}
	burst, counted := m.young[key]
	young = len(m.young)
	if !counted {
		young++
	}
	burst = burst || young >= busyRollouts
	m.young[key] = burst
	return young, burst
}

// owe records that the driver restarted the workload and still has to
// write the request naming the restart.
func (m *memory) owe(target string, o owedRequest) {
	m.mu.Lock()
	m.debts[target] = o
	m.mu.Unlock()
}

// owed returns the request the driver still has to write for the workload.
func (m *memory) owed(target string) (owedRequest, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.debts[target]
	return o, ok
}

// forgetDebt drops the debt of a workload that no longer exists, and the
// claim the debt held.
func (m *memory) forgetDebt(target string) {
	m.mu.Lock()
	if d, ok := m.debts[target]; ok && !d.claim.IsZero() {
		delete(m.claims, target)
	}
	delete(m.debts, target)
	m.mu.Unlock()
}

// paid forgets the debt of the restart with value once a request names it,
// ending the claim it held as applied.
func (m *memory) paid(target, value string) {
	m.mu.Lock()
	if d, ok := m.debts[target]; ok && d.value == value {
		m.settleLocked(target, d)
		delete(m.debts, target)
	}
	m.mu.Unlock()
}

// settleClaim ends the claim o held, as applied: the restart reached the
// workload. The debt stays until paid.
func (m *memory) settleClaim(target string, o owedRequest) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.settleLocked(target, o)
	if d, ok := m.debts[target]; ok && d.value == o.value {
		d.claim = time.Time{}
		m.debts[target] = d
	}
}

func (m *memory) settleLocked(target string, o owedRequest) {
	if o.claim.IsZero() {
		return
	}
	if held, ok := m.claims[target]; ok && held.Equal(o.claim) {
		delete(m.claims, target)
		m.stamps[target] = o.claim
	}
}

// claim marks that the driver is about to restart the workload with stamp;
// false when a claim is already held.
func (m *memory) claim(target string, stamp time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, held := m.claims[target]; held {
		return false
	}
	m.claims[target] = stamp
	return true
}

// settle ends a claim: applied says whether the stamp reached the workload.
func (m *memory) settle(target string, stamp time.Time, applied bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.claims, target)
	if applied {
		m.stamps[target] = stamp
	}
}

// claimed returns the stamp the driver is applying to the workload now.
func (m *memory) claimed(target string) (time.Time, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	stamp, ok := m.claims[target]
	return stamp, ok
}

// read returns the request from the cache, or from the API server when the
// cache does not yet hold the status this process last wrote.
func (m *memory) read(ctx context.Context, cached, live client.Reader, key types.NamespacedName, kr *kickv1alpha1.KickRequest) error {
	if err := cached.Get(ctx, key, kr); err != nil {
		return err
	}
	m.mu.Lock()
	want, ok := m.written[key]
	if ok && want == kr.ResourceVersion {
		delete(m.written, key)
		ok = false
	}
	m.mu.Unlock()
	if !ok {
		return nil
	}
	return live.Get(ctx, key, kr)
}

func (m *memory) wroteStatus(key types.NamespacedName, resourceVersion string) {
	m.mu.Lock()
	m.written[key] = resourceVersion
	m.mu.Unlock()
}

func (m *memory) forget(key types.NamespacedName) {
	m.mu.Lock()
	delete(m.written, key)
	m.mu.Unlock()
}

// forgetStamp drops what is remembered of a workload that no longer exists,
// so the memory does not grow with workloads deleted before the cache
// caught up with their last restart.
func (m *memory) forgetStamp(target string) {
	m.mu.Lock()
	delete(m.stamps, target)
	m.mu.Unlock()
}

// wroteStamp records a restart stamp written to a workload.
func (m *memory) wroteStamp(target string, stamp time.Time) {
	m.mu.Lock()
	m.stamps[target] = stamp
	m.mu.Unlock()
}

// pendingStamp returns a stamp this process wrote to the workload that the
// cached workload does not show yet; zero when the cache has caught up.
func (m *memory) pendingStamp(target string, cached time.Time) time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	stamp, ok := m.stamps[target]
	if !ok {
		return time.Time{}
	}
	if !cached.Before(stamp) {
		delete(m.stamps, target)
		return time.Time{}
	}
	return stamp
}

// memoryKey names a request's workload for the stamp memory.
func memoryKey(kr *kickv1alpha1.KickRequest) string {
	return requestWorkload(kr).memoryKey()
}

// memoryKey names the workload for the stamp memory.
func (k WorkloadKey) memoryKey() string { return k.Namespace + "/" + string(k.Kind) + "/" + k.Name }

// requestWorkload names a request's target workload.
func requestWorkload(kr *kickv1alpha1.KickRequest) WorkloadKey {
	return WorkloadKey{Kind: kr.Spec.TargetRef.Kind, Namespace: kr.Namespace, Name: kr.Spec.TargetRef.Name}
}
