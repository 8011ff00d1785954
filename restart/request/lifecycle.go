package request

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/assess"
	"github.com/kick-operator/kick/restart/workload"
)

// A request's life around the restart: reopening, coalescing duplicates and
// deleting it after retention.

// reopen starts a new cycle for a finished request (model §10): back to
// Pending with no rollout marker, so the next restart is a fresh one.
func (s *step) reopen() {
	st := &s.kr.Status
	st.Phase = kickv1alpha1.PhasePending
	st.CurrentRollout = nil
	st.CompletionTime = nil
}

// retain deletes a finished request once --request-retention has passed.
func (s *step) retain(ctx context.Context) (ctrl.Result, error) {
	done := s.kr.CreationTimestamp.Time
	if s.kr.Status.CompletionTime != nil {
		done = s.kr.Status.CompletionTime.Time
	}
	left := done.Add(s.r.Retention).Sub(s.now)
	if left > 0 {
		return ctrl.Result{RequeueAfter: left}, nil
	}
	s.deleted = true
	if err := s.r.Client.Delete(ctx, s.kr, client.Preconditions{UID: &s.kr.UID}); err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, nil
}

// coalesce keeps at most one open request per target (invariant I4): a
// younger duplicate hands its change time to the oldest open one and ends.
func (s *step) coalesce(ctx context.Context) (bool, error) {
	var list kickv1alpha1.KickRequestList
	key := workload.TargetKey(s.kr.Spec.TargetRef.Kind, s.kr.Spec.TargetRef.Name)
	if err := s.r.Client.List(ctx, &list, client.InNamespace(s.kr.Namespace), client.MatchingFields{TargetIndex: key}); err != nil {
		return false, err
	}
	var first *kickv1alpha1.KickRequest
	for i := range list.Items {
		other := &list.Items[i]
		if other.UID == s.kr.UID || other.Status.Phase.IsTerminal() || !other.DeletionTimestamp.IsZero() {
			continue
		}
		if first == nil || assess.Older(other, first) {
			first = other
		}
	}
	if first == nil || assess.Older(s.kr, first) {
		return false, nil
	}
	if known := assess.AnnotatedChange(first); assess.Adds(s.a.Latest, known) {
		patch := client.MergeFrom(first.DeepCopy())
		if first.Annotations == nil {
			first.Annotations = map[string]string{}
		}
		first.Annotations[kickv1alpha1.ChangeAnnotation] = assess.FormatChange(s.a.Latest.Max(known))
		if err := s.r.Client.Patch(ctx, first, patch); err != nil && !apierrors.IsNotFound(err) {
			return false, err
		}
	}
	s.finish(kickv1alpha1.PhaseNoLongerRequired, kickv1alpha1.ReasonCoalesced,
		fmt.Sprintf("KickRequest %s already handles %s; this request's change was handed to it", first.Name, s.targetRef()))
	return true, nil
}
