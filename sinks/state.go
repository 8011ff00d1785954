package sinks

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/router"
	"github.com/kick-operator/kick/sinks/rollup"
)

// policyState is the dispatcher's view of one NotificationPolicy: what to match and how to
// send (set by the reconciler), the policy's router subscription (its bounded queue of pending
// deliveries) and worker, and the status the flusher writes. Fields after mu are guarded by it.
type policyState struct {
	key  types.NamespacedName
	uid  types.UID
	sub  *router.Subscription // set by dispatcher.subscribeLocked before the state is used
	stop context.CancelFunc   // stops the worker; nil until it runs (guarded by dispatcher.mu)

	// sel is what the policy delivers. The router filter reads it on publishers' goroutines;
	// it is replaced (under mu), never modified.
	sel atomic.Pointer[selection]

	mu         sync.Mutex
	generation int64
	written    int64           // observedGeneration last written (or found at start)
	cfg        *deliveryConfig // nil when problem is set
	problem    *problem        // why the policy cannot deliver as written
	gone       bool            // a 410 answer at this generation
	refused    string          // the guard refused the last delivery (cleared by success or a new config)

	delivered, failed, dropped int64
	lastDelivery               *metav1.Time
	lastError                  string
	conditions                 []metav1.Condition
	announced                  [2]string // Ready status and reason of the last Event

	dirty, urgent bool // status differs from the last write; write it without waiting
	lastFlush     time.Time

	// The watermark (status.handledThrough) is computed from these when written.
	pending    pendingTimes // events accepted and not yet delivered or given up
	floor      time.Time    // the last watermark; for a new policy its first reconcile
	replaying  bool         // the worker has not read the events it replays yet: the watermark stays at floor
	replayFrom time.Time    // what the worker replays starts here

	// Fan-out summaries (spec.rollUp): see rollUps.
	rollWake       chan struct{}  // wakes the roll-up loop; not guarded
	ledger         *rollup.Ledger // what has been summarized (status.rollUp); nil without spec.rollUp
	rollUpsEvicted int64
}

// selection is the part of a policy's spec that decides which events it delivers.
type selection struct {
	match     matcher
	suspended bool
	rollUp    *rollUpSettings // nil: no summaries
}

// selection returns what st delivers now (nothing before the reconciler set it).
func (st *policyState) selection() selection {
	if s := st.sel.Load(); s != nil {
		return *s
	}
	return selection{}
}

// wants is st's router filter: an event about a request of its namespace that the policy
// delivers now. It runs on the publisher's goroutine and only reads immutable values.
func (st *policyState) wants(ev router.Event) bool {
	s := st.sel.Load()
	if s == nil || s.suspended || namespaceOf(ev) != st.key.Namespace {
		return false
	}
	if _, phase := ev.(router.PhaseChanged); phase && s.rollUp != nil && s.rollUp.only {
		return false // summaries instead
	}
	return s.match.matches(ev)
}

// accept is st's router filter: what st.wants, counted as pending from here on.
func (st *policyState) accept(ev router.Event) bool {
	st.pokeRollUp(ev)
	if !st.wants(ev) {
		return false
	}
	st.mu.Lock()
	st.pending.add(eventTime(ev))
	st.mu.Unlock()
	return true
}

// watermarkLocked is the status.handledThrough to write at now. Callers hold mu.
func (st *policyState) watermarkLocked(now time.Time) time.Time {
	if st.replaying {
		return st.floor
	}
	return watermark(now, st.floor, st.pending)
}

// newPolicyState starts from the policy's stored status, so counters continue across manager
// restarts and a 410 at the current generation still stops delivery.
func newPolicyState(p *kickv1alpha1.NotificationPolicy) *policyState {
	st := &policyState{
		key:          types.NamespacedName{Namespace: p.Namespace, Name: p.Name},
		uid:          p.UID,
		generation:   p.Generation,
		written:      p.Status.ObservedGeneration,
		delivered:    p.Status.Delivered,
		failed:       p.Status.Failed,
		dropped:      p.Status.Dropped,
		lastDelivery: p.Status.LastDeliveryTime.DeepCopy(),
		lastError:    p.Status.LastError,
		pending:      pendingTimes{},
		rollWake:     make(chan struct{}, 1),

		rollUpsEvicted: p.Status.RollUpsEvicted,
	}
	for _, c := range p.Status.Conditions {
		st.conditions = append(st.conditions, *c.DeepCopy())
	}
	if c := meta.FindStatusCondition(st.conditions, kickv1alpha1.ConditionReady); c != nil {
		st.announced = [2]string{string(c.Status), c.Reason}
		st.gone = c.Reason == ReasonGone && c.ObservedGeneration == p.Generation
	}
	return st
}

// ready computes the Ready condition from the state.
func (st *policyState) ready() metav1.Condition {
	c := metav1.Condition{Type: kickv1alpha1.ConditionReady, Status: metav1.ConditionFalse, ObservedGeneration: st.generation}
	switch {
	case st.problem != nil:
		c.Reason, c.Message = st.problem.reason, st.problem.message
	case st.gone:
		c.Reason, c.Message = ReasonGone, goneMessage
	case st.refused != "":
		c.Reason, c.Message = ReasonDestinationRefused, st.refused
	case st.selection().suspended:
		c.Status, c.Reason = metav1.ConditionTrue, reasonSuspended
		c.Message = "delivery is paused by spec.suspend; changes that happen meanwhile are not sent later"
	default:
		c.Status, c.Reason = metav1.ConditionTrue, reasonValid
		c.Message = "delivering " + string(st.cfg.format) + " notifications to " + st.cfg.host
	}
	return c
}

// updateReady stores the Ready condition and reports whether its status or reason changed (so
// an Event is due). Callers hold mu.
func (st *policyState) updateReady() (metav1.Condition, bool) {
	c := st.ready()
	if meta.SetStatusCondition(&st.conditions, c) {
		st.dirty = true
	}
	key := [2]string{string(c.Status), c.Reason}
	if key == st.announced {
		return c, false
	}
	st.announced = key
	return c, true
}

// statusPatch is the JSON merge patch of the status the state describes at now; it moves
// floor to the watermark it writes. The uid makes a patch meant for a deleted policy fail on a
// new one of the same name. Callers hold mu.
func (st *policyState) statusPatch(now time.Time) map[string]any {
	st.floor = st.watermarkLocked(now)
	var lastError any
	if st.lastError != "" {
		lastError = st.lastError
	}
	conditions := make([]metav1.Condition, len(st.conditions))
	copy(conditions, st.conditions)
	return map[string]any{
		"metadata": map[string]any{"uid": st.uid},
		"status": map[string]any{
			"observedGeneration": st.generation,
			"delivered":          st.delivered,
			"failed":             st.failed,
			"dropped":            st.dropped,
			"lastDeliveryTime":   st.lastDelivery.DeepCopy(),
			"lastError":          lastError,
			"handledThrough":     metav1.NewTime(st.floor),
			"rollUpsEvicted":     st.rollUpsEvicted,
			"rollUp":             rollUpStatus(st.ledger),
			"conditions":         conditions,
		},
	}
}
