package request

import (
	"fmt"
	"reflect"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/gitops"
	"github.com/kick-operator/kick/restart/assess"
	"github.com/kick-operator/kick/restart/freshness"
)

// How a step writes the request's status: phases, the gate, conditions
// and the Event that goes with a transition.

type eventSpec struct {
	warning bool
	reason  string
	message string
}

func (s *step) targetRef() string {
	return fmt.Sprintf("%s %s/%s", s.kr.Spec.TargetRef.Kind, s.kr.Namespace, s.kr.Spec.TargetRef.Name)
}

// through names the object a redirected restart goes through, "" when the
// target is restarted itself.
func (s *step) through() string {
	if s.handle.Object == nil || !s.handle.Redirected() {
		return ""
	}
	return fmt.Sprintf(" through %s (spec.restartAt)", s.handle.Ref())
}

// progress records an unfinished rollout in the RolloutComplete condition.
// The message (replica counts) is refreshed only when the reason changes:
// rewriting the status on every step of every rollout would double KICK's
// writes during a burst of restarts for detail kubectl rollout status gives.
// The restart itself already wrote RolloutInProgress, so an ordinary
// rollout costs no write between the restart and its completion; unusual
// reasons (Paused, ProgressDeadlineExceeded, ...) show at once.
func (s *step) progress(reason, message string) {
	if c := meta.FindStatusCondition(s.kr.Status.Conditions, kickv1alpha1.ConditionRolloutComplete); c != nil &&
		c.Status == metav1.ConditionFalse && c.ObservedGeneration == s.kr.Generation &&
		(c.Reason == reason || ordinaryProgress(c.Reason) && ordinaryProgress(reason)) {
		return
	}
	s.condition(kickv1alpha1.ConditionRolloutComplete, false, reason, message)
}

// ordinaryProgress reports whether a rollout reason is one every rollout
// passes through (its controller has not seen the restart yet, or pods are
// being replaced), as opposed to one a person may have to act on.
func ordinaryProgress(reason string) bool {
	return reason == freshness.RolloutInProgress || reason == freshness.GenerationNotObserved
}

// setGate records a gate decision and the stage that made it.
func (s *step) setGate(d gitops.Decision, stage assess.Stage) {
	d.Message = kickv1alpha1.ClipGateMessage(d.Message)
	g := &kickv1alpha1.GateStatus{Reason: d.Reason, Stage: string(stage), Message: d.Message, Cause: d.Cause}
	if !d.RequeueAt.IsZero() {
		t := metav1.NewTime(d.RequeueAt)
		g.RequeueAt = &t
	}
	if prev := meta.FindStatusCondition(s.kr.Status.Conditions, kickv1alpha1.ConditionGateAllowed); prev != nil &&
		prev.Status == metav1.ConditionFalse && d.Allowed() {
		s.r.Metrics.observeGateWait(s.now.Sub(prev.LastTransitionTime.Time))
	}
	if old := s.kr.Status.Gate; old == nil || !sameDecision(old, g) {
		now := metav1.NewTime(s.now)
		g.LastEvaluated = &now
	} else {
		g.LastEvaluated = old.LastEvaluated
	}
	s.kr.Status.Gate = g
	s.condition(kickv1alpha1.ConditionGateAllowed, d.Allowed(), string(d.Reason), d.Message)
}

// block records a decision that holds the restart back and the waiting
// phase it means. The Event that says why goes with the phase change, and
// with a change of what holds the request within its phase: another gate
// (an Event reason of its own), or another KickHold or hold reason, so the
// request's Events name what holds it now, not what held it first.
func (s *step) block(d gitops.Decision, stage assess.Stage) {
	d.Message = kickv1alpha1.ClipGateMessage(d.Message) // as kept, so it compares with what was
	prev := s.kr.Status.Gate
	s.setGate(d, stage)
	phase := d.Reason.WaitingPhase()
	switch {
	case s.kr.Status.Phase != phase:
		s.emit(false, WaitingEventReason(d.Reason), d.Message)
	case heldOtherwise(prev, d):
		s.emit(false, WaitingEventReason(d.Reason), d.Message)
		s.rewaited = true
	}
	s.kr.Status.Phase = phase
}

// heldOtherwise reports whether d holds a request that already waits in
// d's phase for something its last Event did not say: a gate with another
// Event reason, or another KickHold or hold reason (the hold stage's
// message names both). Counts that move in a budget or wave message do
// not count: those messages are kept while the wait lasts.
func heldOtherwise(prev *kickv1alpha1.GateStatus, d gitops.Decision) bool {
	if prev == nil || WaitingEventReason(prev.Reason) != WaitingEventReason(d.Reason) {
		return true
	}
	return d.Reason == kickv1alpha1.GateHeld && prev.Message != d.Message
}

// waitForSlot holds the restart until the budget grants it a slot. A
// request already waiting keeps the message it started waiting with:
// rewriting every waiting request's status whenever a count moves would
// multiply KICK's writes during a fan-out (kubectl kick explain gives the
// counts of the moment).
func (s *step) waitForSlot(message string) {
	s.a.Gate = s.a.Gate.WithBudget(&assess.Budget{Message: message})
	d := s.a.Gate.Decision()
	if g := s.kr.Status.Gate; g != nil && g.Reason == kickv1alpha1.GateRestartBudget {
		d.Message = g.Message
	}
	s.block(d, s.a.Gate.Stage)
}

// WaitingEventReason is the reason of the Event a request records when
// gate reason r holds it back: one of the gate's own for every gate (the
// three reasons of an owner not in sync share one); WaitingForGate only
// for a reason added without one.
func WaitingEventReason(r kickv1alpha1.GateReason) string {
	switch r {
	case kickv1alpha1.GateSuspended:
		return "PolicySuspended"
	case kickv1alpha1.GateAmbiguousPolicy:
		return "PolicyAmbiguous"
	case kickv1alpha1.GateConfigurationError:
		return "ConfigurationError"
	case kickv1alpha1.GateMinIntervalNotElapsed:
		return "WaitingForMinInterval"
	case kickv1alpha1.GateRolloutHalted:
		return "HeldByRolloutHalt"
	case kickv1alpha1.GatePromotionRunning:
		return "WaitingForPromotion"
	case kickv1alpha1.GateProjectUnknown:
		return "ProjectUnknown"
	case kickv1alpha1.GateProviderUnavailable:
		return "ProviderUnavailable"
	case kickv1alpha1.GateOutsideSchedule:
		return "WaitingForSchedule"
	case kickv1alpha1.GateOwnerUnknown:
		return "OwnerUnknown"
	case kickv1alpha1.GateAmbiguousOwner:
		return "OwnerAmbiguous"
	case kickv1alpha1.GateOwnerOutOfSync, kickv1alpha1.GateOwnerReconciling, kickv1alpha1.GateOwnerSuspended:
		return "WaitingForGitOpsSync"
	case kickv1alpha1.GateSettling:
		return "Settling"
	case kickv1alpha1.GateRestartBudget:
		return "WaitingForRestartSlot"
	case kickv1alpha1.GateEarlierWave:
		return "WaitingForEarlierWave"
	case kickv1alpha1.GateHeld:
		return "HeldByKickHold"
	}
	return "WaitingForGate"
}

func (s *step) fail(reason, message string) ctrl.Result {
	s.finish(kickv1alpha1.PhaseFailed, reason, message)
	return ctrl.Result{RequeueAfter: s.r.Retention}
}

// finish moves the request to a terminal phase. The rollout marker stays:
// it names the last rollout the request started.
func (s *step) finish(phase kickv1alpha1.KickRequestPhase, reason, message string) {
	st := &s.kr.Status
	st.Phase = phase
	now := metav1.NewTime(s.now)
	st.CompletionTime = &now
	if st.Gate == nil {
		st.Gate = &kickv1alpha1.GateStatus{}
	}
	s.condition(kickv1alpha1.ConditionCompleted, true, reason, message)
	s.emit(phase == kickv1alpha1.PhaseFailed, terminalEventReason(phase), message)
}

func terminalEventReason(p kickv1alpha1.KickRequestPhase) string {
	switch p {
	case kickv1alpha1.PhaseSucceeded:
		return "KickSucceeded"
	case kickv1alpha1.PhaseNoLongerRequired:
		return "KickNoLongerRequired"
	case kickv1alpha1.PhaseDryRun:
		return "KickDryRun"
	}
	return "KickFailed"
}

func (s *step) emit(warning bool, reason, message string) {
	s.event = &eventSpec{warning: warning, reason: reason, message: message}
}

func (s *step) condition(typ string, status bool, reason, message string) {
	c := metav1.Condition{Type: typ, Status: metav1.ConditionFalse, Reason: reason, Message: message, ObservedGeneration: s.kr.Generation}
	if status {
		c.Status = metav1.ConditionTrue
	}
	if c.Reason == "" {
		c.Reason = "Unknown"
	}
	meta.SetStatusCondition(&s.kr.Status.Conditions, c)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func microTime(t *metav1.MicroTime) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.Time
}

// sameDecision reports whether two gate records hold the same decision,
// whenever it was made.
func sameDecision(a, b *kickv1alpha1.GateStatus) bool {
	return a.Reason == b.Reason && a.Stage == b.Stage && a.Message == b.Message &&
		timesEqual(a.RequeueAt, b.RequeueAt) && reflect.DeepEqual(a.Cause, b.Cause)
}

func timesEqual(a, b *metav1.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(b)
}
