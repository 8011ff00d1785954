package pipeline

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/integration/fixture"
)

func kickRequest(f *fixture.F, name string, kind kickv1alpha1.TargetKind, target, reason string) {
	f.T.Helper()
	kr := &kickv1alpha1.KickRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       kickv1alpha1.KickRequestSpec{TargetRef: kickv1alpha1.TargetRef{Kind: kind, Name: target}, Reason: reason},
	}
	if kind == kickv1alpha1.TargetRollout {
		kr.Spec.TargetRef.APIVersion = kickv1alpha1.ArgoRolloutsAPIVersion
	}
	f.Create(kr)
}

// TestManualRequests: a request a person or CI creates restarts a workload
// a policy selects exactly once, and fails with a clear reason for a
// workload no policy selects, a missing workload or an inactive kind.
func TestManualRequests(t *testing.T) {
	f := fixture.Setup(t)
	f.Policy("web-only", `discovery: {workloadSelector: {matchLabels: {app: web}}}`)
	f.Secret("db", map[string]string{"password": "alpha"}, nil)
	f.Deployment("web", 1, fixture.PodSpec("db"))
	f.Deployment("other", 1, fixture.PodSpec("db"))
	f.WaitAvailable("web")
	f.WaitAvailable("other")
	// Adopted first: a Secret baselined after a restart in the same second
	// as its creation cannot be proven older than the restart (baselines are
	// dated to the second), and would restart the workload once more.
	f.WaitObservation("db")

	kickRequest(f, "rotate-web", kickv1alpha1.TargetDeployment, "web", "credential rotated by CI")
	kr := f.WaitPhase("rotate-web", kickv1alpha1.PhaseSucceeded, 60*time.Second)
	if kr.Status.RestartCount != 1 {
		t.Fatalf("restartCount = %d, want 1", kr.Status.RestartCount)
	}
	f.WaitReplicaSets("web", 2)

	kickRequest(f, "rotate-other", kickv1alpha1.TargetDeployment, "other", "")
	kr = f.WaitPhase("rotate-other", kickv1alpha1.PhaseFailed, 30*time.Second)
	if kr.Status.Gate == nil || !strings.Contains(completedMessage(kr), "no KickPolicy") {
		t.Fatalf("an unselected target must fail saying no KickPolicy selects it: %+v", kr.Status.Conditions)
	}
	if got := f.ReplicaSets("other"); len(got) != 1 {
		t.Fatalf("a request for an unselected workload restarted it: %v", got)
	}

	kickRequest(f, "ghost", kickv1alpha1.TargetDeployment, "ghost", "")
	kr = f.WaitPhase("ghost", kickv1alpha1.PhaseFailed, 30*time.Second)
	if !strings.Contains(completedMessage(kr), "does not exist") {
		t.Fatalf("a missing target must fail saying so: %+v", kr.Status.Conditions)
	}
	kickRequest(f, "canary", kickv1alpha1.TargetRollout, "canary", "")
	kr = f.WaitPhase("canary", kickv1alpha1.PhaseFailed, 30*time.Second)
	if !strings.Contains(completedMessage(kr), "--enable-argo-rollouts") {
		t.Fatalf("a Rollout target without the integration must say how to enable it: %+v", kr.Status.Conditions)
	}
}

func completedMessage(kr *kickv1alpha1.KickRequest) string {
	for _, c := range kr.Status.Conditions {
		if c.Type == "Completed" {
			return c.Message
		}
	}
	return ""
}

// TestBrokenScheduleIsAConfigurationError: a cron the API server accepts
// (every field in range) but that can never match holds restarts back with a clear
// reason instead of restarting or crashing.
func TestBrokenScheduleIsAConfigurationError(t *testing.T) {
	f := fixture.Setup(t)
	f.Policy("all", selectAll+"\nschedule: {windows: [{type: Allow, cron: \"0 0 31 2 *\", duration: 1h}]}")
	f.WebWithSecret()
	f.SetSecret("db", map[string]string{"password": "bravo"})
	kr := f.WaitPhase("deployment-web", kickv1alpha1.PhaseWaitingForGate, 30*time.Second)
	if kr.Status.Gate.Reason != kickv1alpha1.GateConfigurationError || !strings.Contains(kr.Status.Gate.Message, "window 0") {
		t.Fatalf("gate = %+v, want ConfigurationError naming window 0", kr.Status.Gate)
	}
	if got := f.ReplicaSets("web"); len(got) != 1 {
		t.Fatalf("a broken schedule let a restart through: %v", got)
	}
}

// TestManagerRestartDuringRolloutDoesNotRestartTwice kills the manager
// while the rollout it started is still in progress (the node is cordoned,
// so the new pod cannot be scheduled) and starts a new one: it must keep
// following the same rollout, and finish it once the node is back.
func TestManagerRestartDuringRolloutDoesNotRestartTwice(t *testing.T) {
	f := fixture.Setup(t)
	f.Policy("all", selectAll)
	f.WebWithSecret()

	cordon(f, true)
	t.Cleanup(func() { cordon(f, false) })
	f.SetSecret("db", map[string]string{"password": "bravo"})
	kr := f.WaitPhase("deployment-web", kickv1alpha1.PhaseExecuting, 60*time.Second)
	stamp := f.RestartStamp("web")
	if stamp == "" || kr.Status.CurrentRollout == nil || kr.Status.CurrentRollout.RestartedAt != stamp {
		t.Fatalf("executing request without a matching marker: stamp %q, marker %+v", stamp, kr.Status.CurrentRollout)
	}

	f.Mgr.Kill()
	f.Mgr = f.Env.StartManager(t, fixture.ManagerNamespace)
	barrierOnOtherNode(f)
	if got := f.RestartStamp("web"); got != stamp {
		t.Fatalf("the new manager restarted again: stamp %q → %q", stamp, got)
	}
	cordon(f, false)
	kr = f.WaitPhase("deployment-web", kickv1alpha1.PhaseSucceeded, 90*time.Second)
	if kr.Status.RestartCount != 1 || f.RestartStamp("web") != stamp {
		t.Fatalf("want one restart with stamp %s, got restartCount %d stamp %s", stamp, kr.Status.RestartCount, f.RestartStamp("web"))
	}
	f.WaitReplicaSets("web", 2)
}

// cordon marks every node unschedulable (or schedulable again).
func cordon(f *fixture.F, on bool) {
	f.T.Helper()
	var nodes corev1.NodeList
	if err := f.Env.Client.List(f.Ctx, &nodes); err != nil {
		f.T.Fatal(err)
	}
	patch := []byte(`{"spec":{"unschedulable":false}}`)
	if on {
		patch = []byte(`{"spec":{"unschedulable":true}}`)
	}
	for i := range nodes.Items {
		if err := f.Env.Client.Patch(f.Ctx, &nodes.Items[i], client.RawPatch(types.MergePatchType, patch)); err != nil {
			f.T.Fatal(err)
		}
	}
}

// barrierOnOtherNode is a barrier that needs no scheduling: a scaled-to-zero
// canary restarts without pods, so it works while nodes are cordoned.
func barrierOnOtherNode(f *fixture.F) {
	f.T.Helper()
	name := "zero-canary"
	f.Secret(name, map[string]string{"v": "1"}, nil)
	f.Deployment(name, 0, fixture.PodSpec(name))
	cluster.Eventually(f.T, 60*time.Second, "the zero canary to settle", func() (bool, error) {
		var d appsv1.Deployment
		err := f.Env.Client.Get(f.Ctx, client.ObjectKey{Namespace: f.NS, Name: name}, &d)
		return err == nil && d.Status.ObservedGeneration >= d.Generation, err
	})
	f.WaitObservation(name)
	f.SetSecret(name, map[string]string{"v": "2"})
	f.WaitPhase("deployment-"+name, kickv1alpha1.PhaseSucceeded, 60*time.Second)
}

// TestNewPolicyAdoptsStaleWorkloadsOnly: when a KickPolicy starts selecting
// workloads, one whose pods are older than a change KICK already recorded
// restarts once, and one that is fresh gets no request at all.
func TestNewPolicyAdoptsStaleWorkloadsOnly(t *testing.T) {
	f := fixture.Setup(t)
	f.Policy("web-only", `discovery: {workloadSelector: {matchLabels: {app: web}}}`)
	f.Secret("db", map[string]string{"password": "alpha"}, nil)
	f.Secret("cfg", map[string]string{"mode": "a"}, nil)
	f.Deployment("web", 1, fixture.PodSpec("db"))
	f.Deployment("other", 1, fixture.PodSpec("db"))
	f.Deployment("quiet", 1, fixture.PodSpec("cfg"))
	for _, d := range []string{"web", "other", "quiet"} {
		f.WaitAvailable(d)
	}
	f.WaitObservation("db")
	f.SetSecret("db", map[string]string{"password": "bravo"})
	f.WaitPhase("deployment-web", kickv1alpha1.PhaseSucceeded, 60*time.Second)
	if got := f.ReplicaSets("other"); len(got) != 1 {
		t.Fatalf("an unselected workload restarted: %v", got)
	}

	f.Policy("the-rest", `discovery: {workloadSelector: {matchExpressions: [{key: app, operator: In, values: [other, quiet]}]}}`)
	f.WaitPhase("deployment-other", kickv1alpha1.PhaseSucceeded, 60*time.Second)
	f.WaitReplicaSets("other", 2)
	f.WaitObservation("cfg")
	if _, err := f.Request("deployment-quiet"); err == nil {
		t.Fatal("a fresh workload got a KickRequest when a policy adopted it")
	}
	if got := f.ReplicaSets("quiet"); len(got) != 1 {
		t.Fatalf("a fresh workload restarted on adoption: %v", got)
	}
}

// TestRolloutTimeoutAndRetention: a rollout that cannot finish fails the
// request after --rollout-timeout, and finished requests are deleted after
// --request-retention.
func TestRolloutTimeoutAndRetention(t *testing.T) {
	f := fixture.Setup(t, "--rollout-timeout=4s", "--request-retention=6s")
	f.Policy("all", selectAll)
	f.WebWithSecret()

	cordon(f, true)
	t.Cleanup(func() { cordon(f, false) })
	f.SetSecret("db", map[string]string{"password": "bravo"})
	kr := f.WaitPhase("deployment-web", kickv1alpha1.PhaseFailed, 60*time.Second)
	if !strings.Contains(completedMessage(kr), "did not complete within 4s") {
		t.Fatalf("a timed-out rollout must say so: %+v", kr.Status.Conditions)
	}
	cordon(f, false)
	cluster.Eventually(t, 60*time.Second, "the finished request to be deleted after its retention", func() (bool, error) {
		_, err := f.Request("deployment-web")
		return err != nil && client.IgnoreNotFound(err) == nil, err
	})
}
