package request

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
)

func TestProgressRewritesOnlyWhenTheReasonChanges(t *testing.T) {
	s := &step{kr: &kickv1alpha1.KickRequest{}}
	message := func() string {
		return meta.FindStatusCondition(s.kr.Status.Conditions, kickv1alpha1.ConditionRolloutComplete).Message
	}
	s.progress("RolloutInProgress", "0 of 3 replicas updated")
	s.progress("RolloutInProgress", "1 of 3 replicas updated")
	if got := message(); got != "0 of 3 replicas updated" {
		t.Fatalf("a replica count alone rewrote the condition: %q", got)
	}
	s.progress("ProgressDeadlineExceeded", "stuck")
	if got := message(); got != "stuck" {
		t.Fatalf("a new reason did not update the condition: %q", got)
	}
}
