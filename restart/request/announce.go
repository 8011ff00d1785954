package request

import (
	"context"
	"reflect"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/assess"
	"github.com/kick-operator/kick/restart/tracing"
	"github.com/kick-operator/kick/router"
)

// announce reports a phase transition: a Kubernetes Event on the request,
// the outcome metrics, and a PhaseChanged event on the router for the
// notification sinks. Nothing here can hold up the restart path: router
// subscribers of phase events use drop-oldest queues.
func (r *Reconciler) announce(ctx context.Context, orig, kr *kickv1alpha1.KickRequest, s *step) {
	from, to := orig.Status.Phase, kr.Status.Phase
	r.record(kr, s.notice)
	r.announceGate(ctx, orig, kr, s)
	if from == to && !s.reopened {
		if s.rewaited {
			r.record(kr, s.event)
		}
		return
	}
	if !s.unannounced(orig) {
		r.record(kr, s.event)
	}
	if to.IsTerminal() {
		r.Metrics.outcome(kr.Status.Provider, to)
	}
	if r.Router == nil {
		return
	}
	ev := phaseEvent(kr, from, s.handle.Target, transitionTime(kr, s.now))
	if err := r.Router.Publish(ctx, ev); err != nil {
		log.FromContext(ctx).Error(err, "publish phase change")
	}
}

// unannounced reports whether this transition records no Event: it ends,
// in the request's one status write, a restart the driver applied at once
// and whose rollout completed before the request recorded anything of it
// (the request was new, or finished and now reopened).
// That status write (Succeeded, with the restart and its completion) is
// the record; an Event saying the same would be a fifth write for every
// such restart (the record of the change, the patch, the request, its
// status). Notifications and the timeline still get the phase change. A
// restart that took longer (KickStarted, then KickSucceeded), that waited
// for a gate, or that failed keeps its Events.
func (s *step) unannounced(orig *kickv1alpha1.KickRequest) bool {
	from := orig.Status.Phase
	return s.adopted && s.kr.Status.Phase == kickv1alpha1.PhaseSucceeded &&
		(from == "" || from == kickv1alpha1.PhasePending || from.IsTerminal())
}

// announceGate publishes a GateChanged when the gate decision of an open
// request changed: it now holds the restart back for another reason, or
// it opened after holding it back. A request that passes every gate at
// once announces nothing here; its phase changes say it all.
func (r *Reconciler) announceGate(ctx context.Context, orig, kr *kickv1alpha1.KickRequest, s *step) {
	g := kr.Status.Gate
	if r.Router == nil || g == nil || g.Reason == "" || g.LastEvaluated == nil || kr.Status.Phase.IsTerminal() {
		return
	}
	prev := orig.Status.Gate
	wasBlocked := prev != nil && prev.Reason != "" && prev.Reason.Blocks()
	if prev != nil && sameDecision(prev, g) {
		// The same decision as before. (Not judged by lastEvaluated: the
		// status write returns it cut to the second.)
		return
	}
	if !g.Reason.Blocks() && !wasBlocked {
		return
	}
	// The decision was made now (lastEvaluated was set from s.now; the
	// status write cut it to the second). The precise time keeps the
	// decision after the change that caused it on the timeline.
	ev := gateEvent(kr, s.handle.Target, s.now)
	if err := r.Router.Publish(ctx, ev); err != nil {
		log.FromContext(ctx).Error(err, "publish gate change")
	}
}

// phaseEvent is the PhaseChanged of kr's entry into its current phase at
// time at; target is the target workload (nil when it could not be read).
func phaseEvent(kr *kickv1alpha1.KickRequest, from kickv1alpha1.KickRequestPhase, target client.Object, at time.Time) router.PhaseChanged {
	to := kr.Status.Phase
	ev := router.PhaseChanged{
		Request:  requestRef(kr),
		From:     string(from),
		To:       string(to),
		Reason:   kr.Spec.Reason,
		Provider: string(kr.Status.Provider),
		Target:   targetRef(kr),
		Policy:   kr.Status.PolicyRef,
		Time:     at,
		// Validated: anyone who may write the request may write the annotation.
		Traceparent: tracing.Of(kr),
	}
	if target != nil {
		ev.TargetLabels = target.GetLabels()
	}
	if g := kr.Status.Gate; g != nil {
		ev.GateReason, ev.GateMessage = string(g.Reason), g.Message
	}
	if to.IsTerminal() {
		if c := meta.FindStatusCondition(kr.Status.Conditions, kickv1alpha1.ConditionCompleted); c != nil {
			ev.Outcome, ev.OutcomeMessage = c.Reason, c.Message
		}
	}
	if m := kr.Status.CurrentRollout; to == kickv1alpha1.PhaseSucceeded && m != nil && m.StartedAt != nil {
		ev.RestartedAt = m.StartedAt.Time
	}
	if o := kr.Status.Owner; o != nil {
		ev.Owner = o.Kind + " " + o.Namespace + "/" + o.Name
	}
	return ev
}

// gateEvent is the GateChanged of kr's current gate decision (status.gate,
// which the caller checked is set and evaluated); target is the target
// workload (nil when it could not be read). decidedAt is the decision's
// time at full precision when known; it is used when it lies in the
// second status.gate.lastEvaluated keeps, which is used otherwise.
func gateEvent(kr *kickv1alpha1.KickRequest, target client.Object, decidedAt time.Time) router.GateChanged {
	g := kr.Status.Gate
	at := g.LastEvaluated.Rfc3339Copy().Time
	if decidedAt.Truncate(time.Second).Equal(at) {
		at = decidedAt
	}
	ev := router.GateChanged{
		Request:  requestRef(kr),
		Target:   targetRef(kr),
		Policy:   kr.Status.PolicyRef,
		Provider: string(kr.Status.Provider),
		Stage:    g.Stage,
		Allowed:  !g.Reason.Blocks(),
		Reason:   string(g.Reason),
		Message:  g.Message,
		// DecisionID uses its second only, so the id is the same after a restart.
		Time:        at,
		Traceparent: tracing.Of(kr),
	}
	if target != nil {
		ev.TargetLabels = target.GetLabels()
	}
	if o := kr.Status.Owner; o != nil {
		ev.Owner = o.Kind + " " + o.Namespace + "/" + o.Name
		if g.Stage == string(assess.StageGitOps) {
			ev.Cause = router.ObjectRef{APIVersion: o.APIVersion, Kind: o.Kind, Namespace: o.Namespace, Name: o.Name}
		}
	}
	if c := g.Cause; c != nil && ev.Cause.IsZero() {
		// The KickHold of the Hold stage, the failed workload of the Halt
		// stage: recorded with the decision, so a replay names it too.
		ev.Cause = router.ObjectRef{APIVersion: c.APIVersion, Kind: c.Kind, Namespace: c.Namespace, Name: c.Name}
	}
	if g.RequeueAt != nil {
		ev.OpensAt = g.RequeueAt.Time
	}
	return ev
}

func requestRef(kr *kickv1alpha1.KickRequest) router.RequestRef {
	return router.RequestRef{Namespace: kr.Namespace, Name: kr.Name, UID: string(kr.UID)}
}

func targetRef(kr *kickv1alpha1.KickRequest) router.ObjectRef {
	return router.ObjectRef{APIVersion: kr.Spec.TargetRef.APIVersion, Kind: string(kr.Spec.TargetRef.Kind), Namespace: kr.Namespace, Name: kr.Spec.TargetRef.Name}
}

// transitionTime is the moment of a phase transition as the request's
// status keeps it (storedTransitionTime), or now when it keeps none.
func transitionTime(kr *kickv1alpha1.KickRequest, now time.Time) time.Time {
	if t, ok := storedTransitionTime(kr); ok {
		return t
	}
	return now
}

// storedTransitionTime is the moment of the transition into the current
// phase as the request's status keeps it, so the notification id derived
// from it (router.TransitionID) can be computed again from the stored
// object after a manager restart: completionTime for a finished request,
// the restart's stamp when it starts executing, the gate decision's time
// while it waits. Times are cut as the API server stores them.
func storedTransitionTime(kr *kickv1alpha1.KickRequest) (time.Time, bool) {
	st := &kr.Status
	switch {
	case st.Phase.IsTerminal() && st.CompletionTime != nil:
		return st.CompletionTime.Rfc3339Copy().Time, true
	case st.Phase == kickv1alpha1.PhaseExecuting && st.CurrentRollout != nil && st.CurrentRollout.StartedAt != nil:
		return st.CurrentRollout.StartedAt.Truncate(time.Microsecond), true
	case st.Phase.IsWaiting() && st.Gate != nil && st.Gate.LastEvaluated != nil:
		return st.Gate.LastEvaluated.Rfc3339Copy().Time, true
	}
	return time.Time{}, false
}

// record emits an Event on the request.
func (r *Reconciler) record(kr *kickv1alpha1.KickRequest, e *eventSpec) {
	if e == nil || r.Recorder == nil {
		return
	}
	typ := corev1.EventTypeNormal
	if e.warning {
		typ = corev1.EventTypeWarning
	}
	msg := e.message
	if kr.Spec.Reason != "" {
		msg += " (requested: " + kr.Spec.Reason + ")"
	}
	r.Recorder.Eventf(kr, nil, typ, e.reason, string(kr.Status.Phase), "%s", msg)
}

func equalStatus(a, b *kickv1alpha1.KickRequestStatus) bool {
	return reflect.DeepEqual(a, b)
}
