package request

import (
	"context"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/gitops"
	"github.com/kick-operator/kick/restart/assess"
	"github.com/kick-operator/kick/router"
)

// TestWaitingEventFollowsTheHold: a request held by a KickHold records a
// new HeldByKickHold Event when the hold's reason changes or another hold
// takes over, and when a hold takes over from another gate in the same
// phase, so the Event names the hold that holds it now. The same decision
// again records nothing.
func TestWaitingEventFollowsTheHold(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 1, 0, 0, 0, time.UTC)
	rec := events.NewFakeRecorder(10)
	r := &Reconciler{Recorder: rec}
	kr := &kickv1alpha1.KickRequest{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "deployment-web"},
		Status: kickv1alpha1.KickRequestStatus{Phase: kickv1alpha1.PhasePending}}
	held := func(hold, why string) gitops.Decision {
		return gitops.Decision{Reason: kickv1alpha1.GateHeld,
			Message: "held by KickHold " + hold + " (namespace): \"" + why + "\"; it holds every restart in namespace shop"}
	}
	settling := gitops.Decision{Reason: kickv1alpha1.GateSettling, Message: "a dependency changed; restart.settle waits"}
	for i, c := range []struct {
		name  string
		d     gitops.Decision
		stage assess.Stage
		want  string // the Event recorded, "" for none
	}{
		{"starts waiting", settling, assess.StageSettle, "Normal Settling a dependency changed"},
		{"a hold takes over from settle", held("freeze", "incident 1"), assess.StageHold, `Normal HeldByKickHold held by KickHold freeze (namespace): "incident 1"`},
		{"same hold again", held("freeze", "incident 1"), assess.StageHold, ""},
		{"the hold's reason changes", held("freeze", "incident 2"), assess.StageHold, `Normal HeldByKickHold held by KickHold freeze (namespace): "incident 2"`},
		{"another hold takes over", held("audit", "quarter end"), assess.StageHold, `Normal HeldByKickHold held by KickHold audit (namespace): "quarter end"`},
	} {
		orig := kr.DeepCopy()
		s := &step{r: r, kr: kr, now: t0.Add(time.Duration(i) * time.Second)}
		s.block(c.d, c.stage)
		r.announce(context.Background(), orig, kr, s)
		select {
		case got := <-rec.Events:
			if c.want == "" || !strings.HasPrefix(got, c.want) {
				t.Errorf("%s: recorded %q, want %q", c.name, got, c.want)
			}
		default:
			if c.want != "" {
				t.Errorf("%s: recorded no Event, want %q", c.name, c.want)
			}
		}
		if kr.Status.Gate.Message != c.d.Message {
			t.Errorf("%s: status.gate.message %q, want %q", c.name, kr.Status.Gate.Message, c.d.Message)
		}
	}
}

// TestGateChangeNamesTheHoldAndTheFailedWorkload: a request held by a
// KickHold, then by a halt, records the object behind each decision in
// status.gate.cause and publishes it as the gate change's cause, live and
// when a restarted manager replays the decision from the status.
func TestGateChangeNamesTheHoldAndTheFailedWorkload(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 1, 0, 0, 0, time.UTC)
	pub := &publisher{}
	r := &Reconciler{Router: pub}
	kr := &kickv1alpha1.KickRequest{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "deployment-web"},
		Spec:   kickv1alpha1.KickRequestSpec{TargetRef: kickv1alpha1.TargetRef{Kind: kickv1alpha1.TargetDeployment, Name: "web"}},
		Status: kickv1alpha1.KickRequestStatus{Phase: kickv1alpha1.PhasePending}}
	hold := kickv1alpha1.GateCause{APIVersion: "kick.corewire.io/v1alpha1", Kind: "KickHold", Namespace: "shop", Name: "freeze"}
	api := kickv1alpha1.GateCause{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "api"}
	for i, c := range []struct {
		d     gitops.Decision
		stage assess.Stage
		want  router.ObjectRef
	}{
		{gitops.Decision{Reason: kickv1alpha1.GateHeld, Message: "held by KickHold freeze", Cause: &hold}, assess.StageHold,
			router.ObjectRef{APIVersion: "kick.corewire.io/v1alpha1", Kind: "KickHold", Namespace: "shop", Name: "freeze"}},
		{gitops.Decision{Reason: kickv1alpha1.GateRolloutHalted, Message: "Secret/db: halted after Deployment shop/api failed its rollout", Cause: &api}, assess.StageHalt,
			router.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "api"}},
	} {
		orig := kr.DeepCopy()
		s := &step{r: r, kr: kr, now: t0.Add(time.Duration(i) * time.Second)}
		s.block(c.d, c.stage)
		pub.events = nil
		r.announce(context.Background(), orig, kr, s)
		var gates []router.GateChanged
		for _, ev := range pub.events {
			if g, ok := ev.(router.GateChanged); ok {
				gates = append(gates, g)
			}
		}
		if len(gates) != 1 {
			t.Fatalf("%s: published %d gate changes, want one", c.stage, len(gates))
		}
		if got := gates[0].Cause; got != c.want {
			t.Errorf("%s: cause %+v, want %+v", c.stage, got, c.want)
		}
		if got := gateEvent(kr, nil, time.Time{}).Cause; got != c.want {
			t.Errorf("%s: replayed cause %+v, want %+v", c.stage, got, c.want)
		}
	}
}

// TestLongGateMessageIsClipped: a gate message that quotes a GitOps
// controller's own message of several kilobytes (a Helm error) is kept
// clipped to MaxGateMessage bytes in status.gate, the GateAllowed condition
// and the Event, and the same long decision again records no second Event.
func TestLongGateMessageIsClipped(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 1, 0, 0, 0, time.UTC)
	rec := events.NewFakeRecorder(10)
	r := &Reconciler{Recorder: rec}
	kr := &kickv1alpha1.KickRequest{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "deployment-web"},
		Status: kickv1alpha1.KickRequestStatus{Phase: kickv1alpha1.PhasePending}}
	long := gitops.Decision{Reason: kickv1alpha1.GateOwnerOutOfSync,
		Message: "HelmRelease shop/web is not ready: UpgradeFailed: " + strings.Repeat("ä error line; ", 500)}
	for i := range 2 {
		orig := kr.DeepCopy()
		s := &step{r: r, kr: kr, now: t0.Add(time.Duration(i) * time.Second)}
		s.block(long, assess.StageGitOps)
		r.announce(context.Background(), orig, kr, s)
		select {
		case got := <-rec.Events:
			if i > 0 {
				t.Errorf("the same decision again recorded %q", got)
			} else if len(got) > kickv1alpha1.MaxGateMessage+len("Normal WaitingForApplicationSync ") {
				t.Errorf("Event of %d bytes", len(got))
			}
		default:
			if i == 0 {
				t.Error("no Event for the first decision")
			}
		}
	}
	g := kr.Status.Gate.Message
	if len(g) > kickv1alpha1.MaxGateMessage || !strings.HasSuffix(g, "…") || !strings.HasPrefix(g, "HelmRelease shop/web is not ready") || !utf8.ValidString(g) {
		t.Fatalf("status.gate.message of %d bytes: %.80q…", len(g), g)
	}
	if c := meta.FindStatusCondition(kr.Status.Conditions, kickv1alpha1.ConditionGateAllowed); c == nil || c.Message != g {
		t.Fatalf("GateAllowed condition %+v, want the clipped message", c)
	}
}
