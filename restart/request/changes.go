package request

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/assess"
	"github.com/kick-operator/kick/restart/freshness"
)

// The change a request answers: answering a change handed to a finished
// request, dating a person's request, and bounding a change time from the
// future.

// answerChange records, once per value of the change annotation, whether
// that change reopened the finished request, so whoever wrote it (kubectl
// kick restart --wait) gets an answer even when nothing is restarted.
func (s *step) answerChange(v assess.ReopenVerdict) {
	value := s.kr.Annotations[kickv1alpha1.ChangeAnnotation]
	if value == "" || value == s.kr.Status.ObservedChange {
		return
	}
	s.kr.Status.ObservedChange = value
	s.condition(kickv1alpha1.ConditionReopened, v.Reopen, v.Reason, v.Message)
	if !v.Reopen {
		s.notice = &eventSpec{reason: "NotReopened", message: fmt.Sprintf("%s was not restarted again: %s", s.targetRef(), v.Message)}
	}
}

// boundChange rewrites a change annotation that lies in the future of the
// manager's clock to the moment KICK saw it, once, and says so in the
// status. Left in place, such a time would date the restart stamp into the
// future, and every later change would look older than that restart.
func (s *step) boundChange(ctx context.Context) error {
	if s.a.Bounded == "" {
		return nil
	}
	value := assess.FormatChange(freshness.At(s.now))
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, kickv1alpha1.ChangeAnnotation, value)
	updated := s.kr.DeepCopy()
	if err := s.r.Client.Patch(ctx, updated, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		return fmt.Errorf("bound the change annotation: %w", err)
	}
	s.kr.Annotations = updated.Annotations
	s.condition(kickv1alpha1.ConditionChangeTimeBounded, true, "FutureChangeTime", fmt.Sprintf(
		"the change annotation %q lay after the manager's clock by more than %s; counted as a change at %s",
		s.a.Bounded, freshness.MaxClockSkew, value))
	s.notice = &eventSpec{warning: true, reason: "ChangeTimeBounded", message: fmt.Sprintf("%s: change annotation %q lies in the future; counted as %s", s.targetRef(), s.a.Bounded, value)}
	return nil
}

func isManualUndated(kr *kickv1alpha1.KickRequest) bool {
	return assess.IsManual(kr) && assess.AnnotatedChange(kr).IsZero()
}

// recordManualRequest dates, once, the change a request from a person or
// CI stands for: the moment KICK first saw it (after it was created, on
// KICK's own clock), kept in the change annotation so it survives restarts.
// The target then restarts unless a rollout started after that moment.
func (s *step) recordManualRequest(ctx context.Context) error {
	if !isManualUndated(s.kr) {
		return nil
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, kickv1alpha1.ChangeAnnotation, assess.FormatChange(freshness.At(s.now)))
	updated := s.kr.DeepCopy()
	if err := s.r.Client.Patch(ctx, updated, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		return fmt.Errorf("record when the request was seen: %w", err)
	}
	s.kr.Annotations = updated.Annotations
	return nil
}
