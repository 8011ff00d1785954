package request

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/freshness"
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

func TestProgressKeepsQuietThroughOrdinaryReasons(t *testing.T) {
	s := &step{kr: &kickv1alpha1.KickRequest{}}
	s.progress(freshness.RolloutInProgress, "restarted")
	s.progress(freshness.GenerationNotObserved, "deployment controller has observed generation 1 of 2")
	s.progress(freshness.RolloutInProgress, "1 of 2 replicas updated")
	if c := meta.FindStatusCondition(s.kr.Status.Conditions, kickv1alpha1.ConditionRolloutComplete); c.Message != "restarted" {
		t.Fatalf("an ordinary rollout step rewrote the condition: %s %q", c.Reason, c.Message)
	}
	s.progress(freshness.Paused, "deployment is paused")
	if c := meta.FindStatusCondition(s.kr.Status.Conditions, kickv1alpha1.ConditionRolloutComplete); c.Reason != freshness.Paused {
		t.Fatalf("a reason to act on was not recorded: %s", c.Reason)
	}
}

func TestStampMemoryForgetsDeletedWorkloads(t *testing.T) {
	m := newMemory()
	stamp := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	m.wroteStamp("shop/Deployment/web", stamp)
	if got := m.pendingStamp("shop/Deployment/web", time.Time{}); !got.Equal(stamp) {
		t.Fatalf("pending stamp %v, want %v", got, stamp)
	}
	m.forgetStamp("shop/Deployment/web")
	if len(m.stamps) != 0 {
		t.Fatalf("the memory still holds %v after the workload was deleted", m.stamps)
	}
}
