package request

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/workload"
	"github.com/kick-operator/kick/router"
)

// Replayer rebuilds, from the cache, the notification events that describe
// where KickRequests stand now, so notifications a previous leader had not
// delivered when it died can be sent again with the same ids. It
// implements sinks.ReplaySource.
type Replayer struct {
	// Client reads KickRequests and their target workloads (the manager's
	// cache).
	Client client.Reader
	// Kinds are the workload kinds this manager restarts; nil means
	// workload.Builtin().
	Kinds *workload.Registry
}

// Events returns the current events (see replayEvents) of the KickRequests
// in namespace whose time is not before since.
func (p *Replayer) Events(ctx context.Context, namespace string, since time.Time) ([]router.Event, error) {
	var list kickv1alpha1.KickRequestList
	if err := p.Client.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	var out []router.Event
	for i := range list.Items {
		kr := &list.Items[i]
		evs := replayEvents(kr, nil, since)
		if len(evs) == 0 {
			continue
		}
		// Selectors match on the target's labels: read them, and build
		// the events again with them.
		if target := p.target(ctx, kr); target != nil {
			evs = replayEvents(kr, target, since)
		}
		out = append(out, evs...)
	}
	return out, nil
}

// target reads kr's target workload from the cache; nil when it cannot.
func (p *Replayer) target(ctx context.Context, kr *kickv1alpha1.KickRequest) client.Object {
	obj, err := p.Kinds.New(kr.Spec.TargetRef.Kind)
	if err != nil {
		return nil
	}
	if err := p.Client.Get(ctx, client.ObjectKey{Namespace: kr.Namespace, Name: kr.Spec.TargetRef.Name}, obj); err != nil {
		return nil
	}
	return obj
}

// replayEvents are the events, at or after since, that announced how kr
// stands now, rebuilt from its status with the ids they had:
//   - the PhaseChanged of its current phase when the phase is terminal or
//     Executing, whose times stay put until the request moves on. A waiting
//     phase is not replayed: its time is that of the latest gate decision,
//     which may have changed within the phase, so its id could differ from
//     the one announced when the phase was entered.
//   - the GateChanged of its current decision while an open request is
//     held back.
//
// The PhaseChanged has no From: the status does not keep the phase before.
func replayEvents(kr *kickv1alpha1.KickRequest, target client.Object, since time.Time) []router.Event {
	var out []router.Event
	st := &kr.Status
	if st.Phase.IsTerminal() || st.Phase == kickv1alpha1.PhaseExecuting {
		if at, ok := storedTransitionTime(kr); ok && !at.Before(since) {
			out = append(out, phaseEvent(kr, "", target, at))
		}
	}
	if g := st.Gate; g != nil && g.Reason.Blocks() && g.LastEvaluated != nil && !st.Phase.IsTerminal() &&
		!g.LastEvaluated.Rfc3339Copy().Time.Before(since) {
		out = append(out, gateEvent(kr, target, time.Time{}))
	}
	return out
}
