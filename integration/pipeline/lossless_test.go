package pipeline

import (
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/cmd/kick-devcluster/controlplane"
	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/integration/fixture"
)

var driverErrors = regexp.MustCompile(`kick_controller_errors_total\{controller="driver",reason="Ensure"\} (\d+)`)

// failedAttempts is how often the driver failed to turn a change into a
// request, from the manager's metrics.
func failedAttempts(f *fixture.F) (int, error) {
	text, err := f.Mgr.Metrics()
	if err != nil {
		return 0, err
	}
	m := driverErrors.FindStringSubmatch(text)
	if m == nil {
		return 0, nil
	}
	return strconv.Atoi(m[1])
}

// refuseRequestCreates makes the API server deny every KickRequest create
// in the test namespace, as an outage of a validating webhook or a policy
// mistake would; the returned func lifts the refusal.
func refuseRequestCreates(f *fixture.F) func() {
	f.T.Helper()
	name := "refuse-kickrequests-" + f.NS
	vap := &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionv1.Fail),
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Create},
					Rule: admissionv1.Rule{APIGroups: []string{kickv1alpha1.GroupVersion.Group}, APIVersions: []string{"*"},
						Resources: []string{"kickrequests"}},
				},
			}}},
			Validations: []admissionv1.Validation{{Expression: "false", Message: "KickRequest creates are refused for this test"}},
		},
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
			MatchResources: &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{"kubernetes.io/metadata.name": f.NS}}},
		},
	}
	for _, obj := range []client.Object{vap, binding} {
		if err := f.Env.Client.Create(f.Ctx, obj); err != nil {
			f.T.Fatal(err)
		}
	}
	// The policy takes effect once the API server loaded it: wait until a
	// probe create is refused.
	cluster.Eventually(f.T, 30*time.Second, "the API server to refuse KickRequest creates", func() (bool, error) {
		probe := &kickv1alpha1.KickRequest{ObjectMeta: metav1.ObjectMeta{Namespace: f.NS, Name: "probe"},
			Spec: kickv1alpha1.KickRequestSpec{TargetRef: kickv1alpha1.TargetRef{Kind: kickv1alpha1.TargetDeployment, Name: "nothing"}}}
		err := f.Env.Client.Create(f.Ctx, probe)
		if err == nil {
			_ = f.Env.Client.Delete(f.Ctx, probe)
			return false, fmt.Errorf("a create was accepted")
		}
		return true, nil
	})
	lifted := false
	lift := func() {
		if lifted {
			return
		}
		lifted = true
		for _, obj := range []client.Object{binding, vap} {
			if err := f.Env.Client.Delete(f.Ctx, obj); client.IgnoreNotFound(err) != nil {
				f.T.Error(err)
			}
		}
	}
	f.T.Cleanup(lift)
	return lift
}

// TestRefusedCreatesNeverDropTheRequest: while the API server refuses
// KickRequest creates for about 30 s, the immediately allowed restart
// still runs (its bookkeeping follows it, with the restarted-for note on
// the workload meanwhile), and the driver keeps retrying the request with
// backoff; once the refusal ends the request is written for that restart
// and follows it, and the workload was restarted exactly once.
func TestRefusedCreatesNeverDropTheRequest(t *testing.T) {
	f := fixture.Setup(t)
	f.Policy("all", selectAll)
	f.WebWithSecret()
	lift := refuseRequestCreates(f)

	f.SetSecret("db", map[string]string{"password": "bravo"})
	changed := time.Now()
	// Nine failed attempts with the driver's backoff (100 ms doubling to
	// 10 s) span about 30 s.
	cluster.Eventually(t, 90*time.Second, "the driver to keep retrying the refused create for 30 s", func() (bool, error) {
		n, err := failedAttempts(f)
		if err != nil {
			return false, err
		}
		return n >= 9 && time.Since(changed) >= 30*time.Second, fmt.Errorf("%d failed attempts after %s", n, time.Since(changed).Round(time.Second))
	})
	if _, err := f.Request("deployment-web"); err == nil {
		t.Fatal("a request exists although every create was refused")
	}
	stamp := f.RestartStamp("web")
	if got := f.ReplicaSets("web"); len(got) != 2 || stamp == "" {
		t.Fatalf("web was not restarted once while its request was refused: stamp %q, ReplicaSets %v", stamp, got)
	}
	lift()

	kr := f.WaitPhase("deployment-web", kickv1alpha1.PhaseSucceeded, 60*time.Second)
	if kr.Annotations[kickv1alpha1.RestartAnnotation] != stamp || kr.Status.RestartCount != 1 {
		t.Fatalf("the request does not record the restart of stamp %s: annotations %v, restartCount %d", stamp, kr.Annotations, kr.Status.RestartCount)
	}
	f.Barrier()
	if got := f.ReplicaSets("web"); len(got) != 2 || f.RestartStamp("web") != stamp {
		t.Fatalf("want exactly one restart, ReplicaSets %v, stamp %q", got, f.RestartStamp("web"))
	}
}

// TestChangeDuringOwnRolloutRestartsOnceMore: the Secret changes again
// while the restart KICK made for its first change is still rolling out.
// The pods of that rollout may have read the Secret before the second
// change, so once the rollout completes KICK restarts once more, and only
// once.
func TestChangeDuringOwnRolloutRestartsOnceMore(t *testing.T) {
	f := fixture.Setup(t)
	f.Policy("all", selectAll+"\nrestart: {minInterval: 0s}")
	f.Secret("db", map[string]string{"password": "alpha"}, nil)
	d := f.Deployment("web", 1, fixture.PodSpec("db"))
	// A new pod counts as available only after 8 s: a window in which
	// KICK's own rollout is in flight.
	if err := f.Env.Client.Patch(f.Ctx, d, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"minReadySeconds":8}}`))); err != nil {
		t.Fatal(err)
	}
	f.WaitAvailable("web")
	f.WaitObservation("db")

	f.SetSecret("db", map[string]string{"password": "bravo"})
	cluster.Eventually(t, 60*time.Second, "KICK's restart to be rolling out", func() (bool, error) {
		kr, err := f.Request("deployment-web")
		if err != nil {
			return false, err
		}
		return kr.Status.RestartCount == 1 && kr.Status.Phase == kickv1alpha1.PhaseExecuting, fmt.Errorf("phase %s, restarts %d", kr.Status.Phase, kr.Status.RestartCount)
	})
	var dep appsv1.Deployment
	if err := f.Env.Client.Get(f.Ctx, client.ObjectKey{Namespace: f.NS, Name: "web"}, &dep); err != nil {
		t.Fatal(err)
	}
	f.SetSecret("db", map[string]string{"password": "charlie"})
	if err := f.Env.Client.Get(f.Ctx, client.ObjectKey{Namespace: f.NS, Name: "web"}, &dep); err != nil {
		t.Fatal(err)
	}
	if controlplane.DeploymentAvailable(&dep) && dep.Status.UpdatedReplicas == dep.Status.Replicas && dep.Status.AvailableReplicas == dep.Status.Replicas &&
		dep.Status.ObservedGeneration == dep.Generation {
		t.Fatalf("the first restart finished before the second change; the test did not exercise an in-flight rollout: %+v", dep.Status)
	}

	cluster.Eventually(t, 90*time.Second, "a second restart after the first rollout", func() (bool, error) {
		kr, err := f.Request("deployment-web")
		if err != nil {
			return false, err
		}
		return kr.Status.RestartCount == 2 && kr.Status.Phase == kickv1alpha1.PhaseSucceeded, fmt.Errorf("phase %s, restarts %d", kr.Status.Phase, kr.Status.RestartCount)
	})
	f.Barrier()
	if got := f.ReplicaSets("web"); len(got) != 3 {
		t.Fatalf("want the first restart and exactly one more, ReplicaSets %v", got)
	}
	if kr, _ := f.Request("deployment-web"); kr.Status.RestartCount != 2 || kr.Status.CurrentRollout == nil || kr.Status.CurrentRollout.ReplicaSet == "" {
		t.Fatalf("request after both restarts: restartCount %d, marker %+v", kr.Status.RestartCount, kr.Status.CurrentRollout)
	}
}
