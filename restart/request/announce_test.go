package request

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/router"
)

type publisher struct{ events []router.Event }

func (p *publisher) Publish(_ context.Context, ev router.Event) error {
	p.events = append(p.events, ev)
	return nil
}

func gateAt(reason kickv1alpha1.GateReason, stage string, at time.Time) *kickv1alpha1.GateStatus {
	t := metav1.NewTime(at)
	return &kickv1alpha1.GateStatus{Reason: reason, Stage: stage, LastEvaluated: &t}
}

// TestGateChangesArePublished: a request that starts waiting, changes why
// it waits, and opens publishes one GateChanged each time; the same
// decision again, or a request allowed at once, publishes nothing.
func TestGateChangesArePublished(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	pub := &publisher{}
	r := &Reconciler{Router: pub}
	req := func(phase kickv1alpha1.KickRequestPhase, g *kickv1alpha1.GateStatus) *kickv1alpha1.KickRequest {
		return &kickv1alpha1.KickRequest{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "deployment-web", UID: "u1"},
			Status: kickv1alpha1.KickRequestStatus{Phase: phase, Gate: g}}
	}
	suspended := gateAt(kickv1alpha1.GateSuspended, "Suspend", t0.Add(time.Second))
	window := gateAt(kickv1alpha1.GateOutsideSchedule, "Schedule", t0.Add(2*time.Second))
	allowed := gateAt(kickv1alpha1.GateAllowed, "", t0.Add(3*time.Second))
	for _, tc := range []struct {
		name      string
		orig, now *kickv1alpha1.KickRequest
		want      string // reason published, "" for none
	}{
		{"starts waiting", req(kickv1alpha1.PhasePending, nil), req(kickv1alpha1.PhaseWaitingForGate, suspended), "Suspended"},
		{"same decision", req(kickv1alpha1.PhaseWaitingForGate, suspended), req(kickv1alpha1.PhaseWaitingForGate, suspended), ""},
		// The status write returns lastEvaluated cut to the second: a new
		// decision within the same second must still be published.
		{"opens within the same second", req(kickv1alpha1.PhaseWaitingForGate, suspended),
			req(kickv1alpha1.PhaseExecuting, gateAt(kickv1alpha1.GateAllowed, "", t0.Add(time.Second))), "Allowed"},
		{"waits for another reason", req(kickv1alpha1.PhaseWaitingForGate, suspended), req(kickv1alpha1.PhaseWaitingForGate, window), "OutsideSchedule"},
		{"opens", req(kickv1alpha1.PhaseWaitingForGate, window), req(kickv1alpha1.PhaseExecuting, allowed), "Allowed"},
		{"allowed at once", req(kickv1alpha1.PhasePending, nil), req(kickv1alpha1.PhaseExecuting, allowed), ""},
	} {
		pub.events = nil
		r.announceGate(context.Background(), tc.orig, tc.now, &step{})
		switch {
		case tc.want == "" && len(pub.events) != 0:
			t.Errorf("%s: published %+v, want nothing", tc.name, pub.events)
		case tc.want != "" && (len(pub.events) != 1 || pub.events[0].(router.GateChanged).Reason != tc.want):
			t.Errorf("%s: published %+v, want one GateChanged %s", tc.name, pub.events, tc.want)
		}
	}
}

// TestGateDecisionKeepsItsPreciseTime: a fresh decision is announced at
// the reconciler's clock, not at the second the status keeps, so it sorts
// after a change made earlier in that second; the id is the one a
// restarted manager computes from the stored status. A decision time from
// another second (a stale clock) is not trusted over the stored one.
func TestGateDecisionKeepsItsPreciseTime(t *testing.T) {
	decided := time.Date(2026, 5, 1, 10, 0, 7, 640000000, time.UTC)
	stored := decided.Truncate(time.Second)
	kr := &kickv1alpha1.KickRequest{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "deployment-web", UID: "u1"},
		Status: kickv1alpha1.KickRequestStatus{Phase: kickv1alpha1.PhaseWaitingForGate, Gate: gateAt(kickv1alpha1.GateOutsideSchedule, "Schedule", stored)}}
	live := gateEvent(kr, nil, decided)
	if !live.Time.Equal(decided) {
		t.Errorf("live decision at %v, want %v", live.Time, decided)
	}
	replayed := gateEvent(kr, nil, time.Time{})
	if !replayed.Time.Equal(stored) {
		t.Errorf("replayed decision at %v, want the stored %v", replayed.Time, stored)
	}
	if live.DecisionID() != replayed.DecisionID() {
		t.Errorf("live id %s, replayed id %s: a restarted manager would notify the decision again", live.DecisionID(), replayed.DecisionID())
	}
	if other := gateEvent(kr, nil, decided.Add(2*time.Second)); !other.Time.Equal(stored) {
		t.Errorf("a decision time outside the stored second was used: %v", other.Time)
	}
}

// TestTransitionTimeIsThePersistedOne: the time a phase notification's id
// is derived from is the one the stored status keeps, so it can be
// recomputed from the object after a restart.
func TestTransitionTimeIsThePersistedOne(t *testing.T) {
	now := time.Date(2026, 5, 1, 10, 0, 7, 123456789, time.UTC)
	done := metav1.NewTime(now)
	restarted := metav1.NewMicroTime(now)
	for _, tc := range []struct {
		name string
		st   kickv1alpha1.KickRequestStatus
		want time.Time
	}{
		{"finished", kickv1alpha1.KickRequestStatus{Phase: kickv1alpha1.PhaseSucceeded, CompletionTime: &done}, now.Truncate(time.Second)},
		{"executing", kickv1alpha1.KickRequestStatus{Phase: kickv1alpha1.PhaseExecuting,
			CurrentRollout: &kickv1alpha1.RolloutMarker{StartedAt: &restarted}}, now.Truncate(time.Microsecond)},
		{"waiting", kickv1alpha1.KickRequestStatus{Phase: kickv1alpha1.PhaseWaitingForGate, Gate: gateAt(kickv1alpha1.GateSuspended, "Suspend", now)}, now.Truncate(time.Second)},
		{"pending", kickv1alpha1.KickRequestStatus{Phase: kickv1alpha1.PhasePending}, now},
	} {
		if got := transitionTime(&kickv1alpha1.KickRequest{Status: tc.st}, now); !got.Equal(tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestOnlyAnUnrecordedQuickRestartGoesWithoutAnEvent: the one status write
// of a driver restart whose rollout ended before its request recorded
// anything records no Event; a restart the request recorded as Executing,
// or one it had been seen waiting for, or its own, keeps its Events.
func TestOnlyAnUnrecordedQuickRestartGoesWithoutAnEvent(t *testing.T) {
	cases := []struct {
		from    kickv1alpha1.KickRequestPhase
		adopted bool
		to      kickv1alpha1.KickRequestPhase
		quiet   bool
	}{
		{"", true, kickv1alpha1.PhaseSucceeded, true},
		{kickv1alpha1.PhasePending, true, kickv1alpha1.PhaseSucceeded, true},
		{kickv1alpha1.PhaseSucceeded, true, kickv1alpha1.PhaseSucceeded, true}, // reopened
		{kickv1alpha1.PhaseExecuting, true, kickv1alpha1.PhaseSucceeded, false},
		{kickv1alpha1.PhaseWaitingForGate, true, kickv1alpha1.PhaseSucceeded, false},
		{kickv1alpha1.PhasePending, false, kickv1alpha1.PhaseSucceeded, false},
		{kickv1alpha1.PhasePending, true, kickv1alpha1.PhaseFailed, false},
		{kickv1alpha1.PhasePending, true, kickv1alpha1.PhaseExecuting, false},
	}
	for _, c := range cases {
		orig := &kickv1alpha1.KickRequest{Status: kickv1alpha1.KickRequestStatus{Phase: c.from}}
		s := &step{kr: &kickv1alpha1.KickRequest{Status: kickv1alpha1.KickRequestStatus{Phase: c.to}}, adopted: c.adopted}
		if got := s.unannounced(orig); got != c.quiet {
			t.Errorf("%q → %q (adopted %v): without an Event %v, want %v", c.from, c.to, c.adopted, got, c.quiet)
		}
	}
}
