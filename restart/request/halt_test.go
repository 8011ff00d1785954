package request

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
)

func TestHaltingIsAFailedRolloutOfASourceChangeNotReleased(t *testing.T) {
	failed := func(reason string, mutate ...func(*kickv1alpha1.KickRequest)) *kickv1alpha1.KickRequest {
		kr := &kickv1alpha1.KickRequest{ObjectMeta: metav1.ObjectMeta{Name: "deployment-api"}}
		kr.Status.Phase = kickv1alpha1.PhaseFailed
		kr.Status.RestartedFor = &kickv1alpha1.SourceChange{Kind: kickv1alpha1.SourceSecret, Name: "tls", ChangedAt: kickv1alpha1.NewNanoTime(time.Unix(100, 5))}
		kr.Status.Conditions = []metav1.Condition{{Type: kickv1alpha1.ConditionCompleted, Status: metav1.ConditionTrue, Reason: reason}}
		for _, m := range mutate {
			m(kr)
		}
		return kr
	}
	for _, tc := range []struct {
		name string
		kr   *kickv1alpha1.KickRequest
		want bool
	}{
		{"progress deadline exceeded", failed(kickv1alpha1.ReasonProgressDeadlineExceeded), true},
		{"rollout timeout", failed(kickv1alpha1.ReasonRolloutTimeout), true},
		{"target gone", failed(kickv1alpha1.ReasonTargetNotFound), false},
		{"released", failed(kickv1alpha1.ReasonRolloutTimeout, func(kr *kickv1alpha1.KickRequest) {
			kr.Annotations = map[string]string{kickv1alpha1.ReleaseHaltAnnotation: ""}
		}), false},
		{"a person's restart, no source change", failed(kickv1alpha1.ReasonRolloutTimeout, func(kr *kickv1alpha1.KickRequest) {
			kr.Status.RestartedFor = nil
		}), false},
		{"reopened", failed(kickv1alpha1.ReasonRolloutTimeout, func(kr *kickv1alpha1.KickRequest) {
			kr.Status.Phase = kickv1alpha1.PhasePending
		}), false},
	} {
		if got := halting(tc.kr); got != tc.want {
			t.Errorf("%s: halting = %v, want %v", tc.name, got, tc.want)
		}
	}
}
