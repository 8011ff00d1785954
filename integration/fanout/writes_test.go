package fanout

import (
	"reflect"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/integration/fixture"
)

// A fan-out of six restarts through one slot keeps five requests waiting
// while the slot passes from one to the next. Each waiting request records
// its wait once: every later look that finds the slot still taken changes
// nothing in its status, so nothing is written. (Rewriting the waiting
// requests whenever the counts moved cost a 500-workload fan-out about 30
// writes per restart.)
func TestWaitingRequestsAreWrittenOnce(t *testing.T) {
	f := fixture.Setup(t)
	run := f.NS
	f.Policy("one-at-a-time", `
discovery: {workloadSelector: {}}
restart: {maxConcurrent: 1, minInterval: 0s}`)
	names := consumers(f, run, "shared", 6)
	writes := watchWaitingWrites(t, f)
	rollouts := followRollouts(t, f.Env, fanoutLabel, run)

	f.SetSecret("shared", map[string]string{"v": "2"})
	rollouts.WaitSettled(t, 3*time.Minute, 1, names...)
	f.Barrier()

	waited, rewrites := writes.counts()
	t.Logf("%d requests waited for the slot; %d writes of a request that was waiting and still waits", waited, rewrites)
	if waited < 4 {
		t.Fatalf("only %d requests waited for the slot: the test proves nothing", waited)
	}
	if rewrites > 0 {
		t.Errorf("waiting requests were written %d times more while they kept waiting: %v", rewrites, writes.examples())
	}
}

// waitingWrites counts, from a watch of the namespace's KickRequests, the
// requests that entered WaitingForGate and the writes that found a request
// waiting, left it waiting and changed nothing but how the wait is told.
type waitingWrites struct {
	mu       sync.Mutex
	last     map[string]*kickv1alpha1.KickRequest
	waited   map[string]bool
	rewrites []string
}

func watchWaitingWrites(t *testing.T, f *fixture.F) *waitingWrites {
	t.Helper()
	ww := &waitingWrites{last: map[string]*kickv1alpha1.KickRequest{}, waited: map[string]bool{}}
	f.WatchRequests(ww.observe)
	return ww
}

func (w *waitingWrites) observe(kr *kickv1alpha1.KickRequest) {
	w.mu.Lock()
	defer w.mu.Unlock()
	prev := w.last[kr.Name]
	w.last[kr.Name] = kr
	if kr.Status.Phase != kickv1alpha1.PhaseWaitingForGate {
		return
	}
	w.waited[kr.Name] = true
	if prev == nil || prev.Status.Phase != kickv1alpha1.PhaseWaitingForGate || prev.Generation != kr.Generation {
		return
	}
	// A write that dates the change more precisely (the record of the
	// change landed after the request first looked) is news; a write that
	// only restates the wait, with other counts or none, is not.
	if !reflect.DeepEqual(withoutGate(prev.Status), withoutGate(kr.Status)) {
		return
	}
	w.rewrites = append(w.rewrites, kr.Name+": "+gateMessage(prev)+" → "+gateMessage(kr))
}

// withoutGate is a status without its gate and GateAllowed condition.
func withoutGate(st kickv1alpha1.KickRequestStatus) kickv1alpha1.KickRequestStatus {
	st = *st.DeepCopy()
	st.Gate = nil
	meta.RemoveStatusCondition(&st.Conditions, kickv1alpha1.ConditionGateAllowed)
	return st
}

func gateMessage(kr *kickv1alpha1.KickRequest) string {
	if kr.Status.Gate == nil {
		return "(no gate)"
	}
	return kr.Status.Gate.Message
}

func (w *waitingWrites) counts() (waited, rewrites int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.waited), len(w.rewrites)
}

func (w *waitingWrites) examples() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.rewrites[:min(len(w.rewrites), 3)]
}
