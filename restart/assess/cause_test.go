package assess

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/freshness"
)

// TestHoldAndHaltNameTheirCause: the Hold stage names the KickHold that
// holds the restart, the Halt stage the workload whose rollout failed, so
// the request's status and its gate-change notifications can point at them.
func TestHoldAndHaltNameTheirCause(t *testing.T) {
	hold := func(name string) *kickv1alpha1.GateCause {
		return &kickv1alpha1.GateCause{APIVersion: "kick.corewire.io/v1alpha1", Kind: "KickHold", Namespace: "shop", Name: name}
	}
	failed := kickv1alpha1.KickRequest{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "deployment-api"},
		Spec:       kickv1alpha1.KickRequestSpec{TargetRef: kickv1alpha1.TargetRef{Kind: kickv1alpha1.TargetDeployment, Name: "api"}},
		Status: kickv1alpha1.KickRequestStatus{Phase: kickv1alpha1.PhaseFailed,
			RestartedFor: &kickv1alpha1.SourceChange{Kind: "Secret", Name: "db", ChangedAt: kickv1alpha1.NewNanoTime(t0.Add(time.Minute))},
			Conditions: []metav1.Condition{{Type: kickv1alpha1.ConditionCompleted, Status: metav1.ConditionTrue,
				Reason: kickv1alpha1.ReasonProgressDeadlineExceeded}}},
	}
	for _, c := range []struct {
		name   string
		mutate func(*Facts)
		stage  Stage
		want   *kickv1alpha1.GateCause
	}{
		{"a hold of the namespace", func(f *Facts) {
			f.Holds = []Hold{{Name: "freeze", Target: kickv1alpha1.HoldTarget{Kind: kickv1alpha1.HoldNamespace}, Reason: "INC-42"}}
		}, StageHold, hold("freeze")},
		{"a held source waits for the record of a change", func(f *Facts) {
			f.Dependencies[0].Record = relevant(t0.Add(-time.Minute))
			f.Handed = freshness.At(t0.Add(10*time.Minute - time.Second))
			f.Rollout.Since = t0
			f.Holds = []Hold{{Name: "secret-db", Target: kickv1alpha1.HoldTarget{Kind: kickv1alpha1.HoldSecret, Name: "db"}, Reason: "x"}}
		}, StageHold, hold("secret-db")},
		{"a halt", func(f *Facts) { f.Halts = HaltsOf([]kickv1alpha1.KickRequest{failed}) }, StageHalt,
			&kickv1alpha1.GateCause{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "api"}},
		{"a gate that names nothing", func(f *Facts) { f.Budget = &Budget{Message: "full"} }, StageBudget, nil},
	} {
		f := baseFacts()
		c.mutate(&f)
		g := Assess(f).Gate
		if g.Stage != c.stage {
			t.Fatalf("%s: stage %q (%s), want %q", c.name, g.Stage, g.Message, c.stage)
		}
		got := g.Decision().Cause
		if (got == nil) != (c.want == nil) || got != nil && *got != *c.want {
			t.Errorf("%s: cause %+v, want %+v", c.name, got, c.want)
		}
	}
}
