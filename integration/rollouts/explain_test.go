package rollouts

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/integration/fixture"
)

// explain runs kubectl kick explain in the test namespace.
func explain(t *testing.T, f *fixture.F, target string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, cluster.Binary(t, "kubectl-kick"), "explain", target,
		"--kubeconfig", f.Env.Cluster.Kubeconfig, "-n", f.NS).CombinedOutput()
	t.Logf("kubectl kick explain %s:\n%s", target, out)
	if err != nil {
		t.Fatalf("kubectl kick explain %s: %v", target, err)
	}
	return string(out)
}

// kubectl kick explain reads a Rollout: its policy, the Secret its own
// template consumes and the rollout state; one that runs a Deployment's
// template through workloadRef is explained through that Deployment; and
// explain on the Secret lists the Rollout among its consumers.
func TestExplainRollout(t *testing.T) {
	f := fixture.Setup(t, "--enable-argo-rollouts")
	f.Policy("all", selectAll+"\nrestart: {minInterval: 0s}")
	f.Secret("db", map[string]string{"password": "alpha"}, nil)
	createRollout(f, "web", 2, map[string]any{"template": template("web", "db")})
	f.Deployment("api", 0, fixture.PodSpec("db"))
	createRollout(f, "api-rollout", 1, map[string]any{
		"workloadRef": map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "api", "scaleDown": "onsuccess"},
	})
	f.WaitObservation("db")

	out := explain(t, f, "rollout/web")
	for _, want := range []string{"Workload:       Rollout " + f.NS + "/web", "KickPolicy:     all", "Secret/db", "Rollout:"} {
		if !strings.Contains(out, want) {
			t.Errorf("explain rollout/web does not say %q", want)
		}
	}
	out = explain(t, f, "rollout/api-rollout")
	for _, want := range []string{"rollout/api-rollout runs the pod template of deployment/api (spec.workloadRef)", "Workload:       Deployment " + f.NS + "/api"} {
		if !strings.Contains(out, want) {
			t.Errorf("explain rollout/api-rollout does not say %q", want)
		}
	}
	out = explain(t, f, "secret/db")
	for _, want := range []string{"rollout/web", "deployment/api"} {
		if !strings.Contains(out, want) {
			t.Errorf("explain secret/db does not list %q", want)
		}
	}
}
