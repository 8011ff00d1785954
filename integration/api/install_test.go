package api

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kick-operator/kick/integration/cluster"
)

// TestKustomizeInstallApplies applies `kubectl apply -k deploy/` to the
// local control plane, as a user would on a real cluster: every object is
// accepted, the manager Deployment runs the hardened pod spec, and the
// RBAC objects bind the manager's service account.
func TestKustomizeInstallApplies(t *testing.T) {
	env := cluster.Get(t)
	kubectl := filepath.Join(cluster.K8sBinDir(t), "kubectl")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, kubectl, "--kubeconfig", env.Cluster.Kubeconfig,
		"apply", "--server-side", "--force-conflicts", "-k", filepath.Join(env.RepoRoot, "deploy")).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl apply -k deploy/ failed: %v\n%s", err, out)
	}
	for _, want := range []string{
		"namespace/kick-system", "customresourcedefinition.apiextensions.k8s.io/kickpolicies.kick.corewire.io",
		"clusterrole.rbac.authorization.k8s.io/kick-manager", "role.rbac.authorization.k8s.io/kick-manager",
		"deployment.apps/kick-manager", "poddisruptionbudget.policy/kick-manager", "service/kick-manager-metrics",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("apply output does not mention %s:\n%s", want, out)
		}
	}
	var d appsv1.Deployment
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "kick-system", Name: "kick-manager"}, &d); err != nil {
		t.Fatal(err)
	}
	c := d.Spec.Template.Spec.Containers[0]
	if sc := c.SecurityContext; sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.RunAsUser == nil || *sc.RunAsUser == 0 {
		t.Errorf("manager container is not non-root with a read-only root filesystem: %+v", c.SecurityContext)
	}
	if !strings.Contains(strings.Join(c.Args, " "), "--leader-elect") || c.LivenessProbe == nil || c.ReadinessProbe == nil {
		t.Errorf("manager must run with leader election and probes: args %v", c.Args)
	}
	// Pod security admission enforces "restricted" in kick-system: the
	// manager's pods must be admitted, which kwok then runs.
	cluster.Eventually(t, 60*time.Second, "the manager Deployment's pods to be created", func() (bool, error) {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(&d), &d)
		return err == nil && d.Status.Replicas == 2, err
	})
}
