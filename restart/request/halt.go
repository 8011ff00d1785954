package request

import (
	"context"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/assess"
	"github.com/kick-operator/kick/restart/discovery"
	"github.com/kick-operator/kick/restart/freshness"
	"github.com/kick-operator/kick/restart/workload"
)

// A restart KICK made that fails its rollout halts its fan-out: the other
// restarts that would bring in the same change of the same source are held
// (gate stage Halt) until the source changes again or a person releases the
// halt. The halt is the failed KickRequest itself, durable and readable
// with kubectl; HaltIndex finds it.

// HaltIndex indexes the failed requests that halt a fan-out.
const HaltIndex = "kick.corewire.io/halt"

// halting reports whether a request halts the fan-out of the change it
// answered (see KickRequest.HaltsFanOut).
func halting(kr *kickv1alpha1.KickRequest) bool { return kr.HaltsFanOut() }

func registerHaltIndex(ctx context.Context, indexer client.FieldIndexer) error {
	return indexer.IndexField(ctx, &kickv1alpha1.KickRequest{}, HaltIndex, func(obj client.Object) []string {
		if kr, ok := obj.(*kickv1alpha1.KickRequest); ok && halting(kr) {
			return []string{"true"}
		}
		return nil
	})
}

// halts lists the halts of a namespace, for the assessment.
func halts(ctx context.Context, c client.Reader, namespace string) ([]assess.Halt, error) {
	var list kickv1alpha1.KickRequestList
	if err := c.List(ctx, &list, client.InNamespace(namespace), client.MatchingFields{HaltIndex: "true"}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list the failed restarts of namespace %s: %w", namespace, err)
	}
	return assess.HaltsOf(list.Items), nil
}

// haltChanged passes a request event that starts or ends a halt, so the
// requests it holds are looked at again.
func haltChanged() predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(e event.CreateEvent) bool { return isHalt(e.Object) },
		DeleteFunc:  func(e event.DeleteEvent) bool { return isHalt(e.Object) },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return isHalt(e.ObjectOld) != isHalt(e.ObjectNew)
		},
	}
}

func isHalt(obj client.Object) bool {
	kr, ok := obj.(*kickv1alpha1.KickRequest)
	return ok && halting(kr)
}

// restartedFor is the newest source change a restart now brings in; nil
// when no Secret or ConfigMap change is recorded (a person's request).
func restartedFor(a *assess.Assessment) *kickv1alpha1.SourceChange {
	d, ok := a.NewestSourceChange()
	if !ok {
		return nil
	}
	return &kickv1alpha1.SourceChange{Kind: kickv1alpha1.SourceKind(d.Kind), Name: d.Name, ChangedAt: kickv1alpha1.NewNanoTime(d.Change.Latest)}
}

// haltHeld counts the other consumers of the halted source whose running
// pods do not carry the halted change: the restarts the halt holds.
func haltHeld(ctx context.Context, c client.Reader, kinds *workload.Registry, kr *kickv1alpha1.KickRequest) int {
	src := kr.Status.RestartedFor
	kind, name := string(src.Kind), src.Name
	change := freshness.At(src.ChangedAt.Time)
	held := 0
	for _, list := range kinds.Lists() {
		if err := c.List(ctx, list, client.InNamespace(kr.Namespace),
			client.MatchingFields{discovery.SourceIndex: discovery.IndexKey(kind, name)}); err != nil {
			continue
		}
		for _, w := range workload.Items(list) {
			if workload.KindOf(w) == kr.Spec.TargetRef.Kind && w.GetName() == kr.Spec.TargetRef.Name {
				continue
			}
			r, err := kinds.Inspect(ctx, c, w)
			if err != nil || freshness.Newer(change, r.Since) {
				held++
			}
		}
	}
	return held
}

// failRollout ends the request because its restart's rollout failed, and
// says what that halts.
func (s *step) failRollout(ctx context.Context, reason, message string) ctrl.Result {
	s.r.Metrics.restart(s.kr.Status.Provider, "failed")
	res := s.fail(reason, message)
	if src := s.kr.Status.RestartedFor; src != nil {
		held := haltHeld(ctx, s.r.Client, s.r.Kinds, s.kr)
		s.notice = &eventSpec{warning: true, reason: "RolloutHalted", message: fmt.Sprintf(
			"%s: halted after %s failed its rollout; %d restarts held until %s changes again or the halt is released (kubectl annotate kickrequest %s %s=true)",
			src, s.targetRef(), held, src, s.kr.Name, kickv1alpha1.ReleaseHaltAnnotation)}
	}
	return res
}

// holdsHalt reports whether the request is a halt that still holds
// restarts: its source is still recorded with the change it failed on.
func (s *step) holdsHalt() bool {
	if !halting(s.kr) {
		return false
	}
	src := s.kr.Status.RestartedFor
	halted := src.ChangedAt.Time
	for _, d := range s.a.Dependencies {
		if d.Kind+"/"+d.Name == src.String() {
			return !d.Change.Latest.After(halted)
		}
	}
	return false
}
