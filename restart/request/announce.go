package request

import (
	"context"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/router"
)

// announce reports a phase transition: a Kubernetes Event on the request,
// the outcome metrics, and a PhaseChanged event on the router for the
// notification sinks. Nothing here can hold up the restart path: router
// subscribers of phase events use drop-oldest queues.
func (r *Reconciler) announce(ctx context.Context, orig, kr *kickv1alpha1.KickRequest, s *step) {
	from, to := orig.Status.Phase, kr.Status.Phase
	r.record(kr, s.notice)
	if from == to && !s.reopened {
		return
	}
	r.record(kr, s.event)
	if to.IsTerminal() {
		r.Metrics.outcome(kr.Status.Provider, to)
	}
	if r.Router == nil {
		return
	}
	ev := router.PhaseChanged{
		Request:  router.RequestRef{Namespace: kr.Namespace, Name: kr.Name, UID: string(kr.UID)},
		From:     string(from),
		To:       string(to),
		Reason:   kr.Spec.Reason,
		Provider: string(kr.Status.Provider),
		Target:   router.ObjectRef{APIVersion: kr.Spec.TargetRef.APIVersion, Kind: string(kr.Spec.TargetRef.Kind), Namespace: kr.Namespace, Name: kr.Spec.TargetRef.Name},
		Policy:   kr.Status.PolicyRef,
		Time:     s.now,
	}
	if s.handle.Target != nil {
		ev.TargetLabels = s.handle.Target.GetLabels()
	}
	if g := kr.Status.Gate; g != nil {
		ev.GateReason, ev.GateMessage = string(g.Reason), g.Message
	}
	if to.IsTerminal() {
		if c := meta.FindStatusCondition(kr.Status.Conditions, kickv1alpha1.ConditionCompleted); c != nil {
			ev.Outcome, ev.OutcomeMessage = c.Reason, c.Message
		}
	}
	if o := kr.Status.Owner; o != nil {
		ev.Owner = o.Kind + " " + o.Namespace + "/" + o.Name
	}
	if err := r.Router.Publish(ctx, ev); err != nil {
		log.FromContext(ctx).Error(err, "publish phase change")
	}
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
