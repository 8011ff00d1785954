// Package kubectlkick runs the real kubectl-kick binary against a local
// control plane with a real kick-manager.
package kubectlkick

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/integration/fixture"
)

func TestMain(m *testing.M) {
	cluster.Main(m, cluster.TestOptions{
		KickCRDs:    true,
		AddToScheme: []func(*runtime.Scheme) error{kickv1alpha1.AddToScheme},
	})
}

// fx is the shared end-to-end fixture plus the kubectl-kick binary.
type fx struct {
	*fixture.F
	bin string
}

func newFx(t *testing.T) *fx {
	env := cluster.Get(t)
	return &fx{F: &fixture.F{T: t, Env: env, NS: env.Namespace(t), Ctx: context.Background()}, bin: cluster.Binary(t, "kubectl-kick")}
}

// deployment creates a one-replica Deployment consuming a Secret and waits
// until it is available.
func (f *fx) deployment(name, secret string) {
	f.T.Helper()
	f.Deployment(name, 1, fixture.PodSpec(secret))
	f.WaitAvailable(name)
}

func (f *fx) replicaSets(deployment string) int { return len(f.ReplicaSets(deployment)) }

func (f *fx) request(name string) *kickv1alpha1.KickRequest {
	f.T.Helper()
	kr, err := f.Request(name)
	if err != nil {
		f.T.Fatal(err)
	}
	return kr
}

// kick runs kubectl-kick in the test namespace and returns its exit code
// and output.
func (f *fx) kick(args ...string) (int, string, string) {
	f.T.Helper()
	ctx, cancel := context.WithTimeout(f.Ctx, 3*time.Minute)
	defer cancel()
	// The subcommand goes first; -A replaces the test namespace.
	full := append([]string{args[0], "--kubeconfig", f.Env.Cluster.Kubeconfig}, args[1:]...)
	if !slices.Contains(args, "-A") {
		full = append(full, "-n", f.NS)
	}
	cmd := exec.CommandContext(ctx, f.bin, full...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		f.T.Fatalf("kubectl-kick %v: %v", args, err)
	}
	f.T.Logf("kubectl-kick %s -> %d\nstdout:\n%sstderr:\n%s", strings.Join(args, " "), code, out.String(), errOut.String())
	return code, out.String(), errOut.String()
}

func TestRestartAndList(t *testing.T) {
	env := cluster.Get(t)
	f := newFx(t)
	env.StartManager(t, "kick-system")

	policy := &kickv1alpha1.KickPolicy{ObjectMeta: metav1.ObjectMeta{Name: "web-only"}}
	if err := yaml.UnmarshalStrict([]byte("discovery: {workloadSelector: {matchLabels: {app: web}}}\nrestart: {minInterval: 0s}"), &policy.Spec); err != nil {
		t.Fatal(err)
	}
	f.Create(policy)
	f.Create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db"}, StringData: map[string]string{"password": "alpha"}})
	f.deployment("web", "db")
	f.deployment("other", "db")

	// KICK may have met web while its first rollout was still running and
	// opened a request to decide once it completes: let that settle first.
	cluster.Eventually(t, 60*time.Second, "KICK to be done with web's first rollout", func() (bool, error) {
		var list kickv1alpha1.KickRequestList
		if err := env.Client.List(f.Ctx, &list, client.InNamespace(f.NS)); err != nil {
			return false, err
		}
		for _, kr := range list.Items {
			if !kr.Status.Phase.IsTerminal() {
				return false, fmt.Errorf("kickrequest/%s is %s", kr.Name, kr.Status.Phase)
			}
		}
		return true, nil
	})
	_, err := f.Request("deployment-web")
	kickMetWeb := err == nil

	// A person's restart: created (or KICK's finished request reopened),
	// followed, succeeded, exactly one new ReplicaSet.
	code, out, _ := f.kick("restart", "deployment/web", "--wait", "--reason", "ci")
	if code != 0 || !strings.Contains(out, "Succeeded") || !strings.Contains(out, "created") && !kickMetWeb {
		t.Fatalf("restart --wait = %d, want 0 and a created, Succeeded request", code)
	}
	if n := f.replicaSets("web"); n != 2 {
		t.Fatalf("web has %d ReplicaSets after the restart, want 2", n)
	}
	kr := f.request("deployment-web")
	if kr.Spec.Reason != "ci" || !kickMetWeb && kr.Labels["app.kubernetes.io/managed-by"] != "" {
		t.Fatalf("request = reason %q, labels %v", kr.Spec.Reason, kr.Labels)
	}
	firstCompletion := kr.Status.CompletionTime

	// Right away again: the finished request is reopened and followed to a
	// new outcome, not the old one.
	code, out, _ = f.kick("restart", "deploy/web", "--wait")
	if code != 0 || !strings.Contains(out, "reopened") {
		t.Fatalf("second restart --wait = %d, want 0 after a reopen", code)
	}
	kr = f.request("deployment-web")
	if kr.Status.Phase != kickv1alpha1.PhaseSucceeded && kr.Status.Phase != kickv1alpha1.PhaseNoLongerRequired {
		t.Fatalf("phase after the second restart = %s", kr.Status.Phase)
	}
	if kr.Status.CompletionTime == nil || firstCompletion == nil || kr.Status.CompletionTime.Before(firstCompletion) {
		t.Fatalf("completion time %v, first %v", kr.Status.CompletionTime, firstCompletion)
	}
	if kr.Status.Phase == kickv1alpha1.PhaseSucceeded && (kr.Status.RestartCount != 2 || f.replicaSets("web") != 3) {
		t.Fatalf("a second Succeeded restart: restartCount %d, %d ReplicaSets", kr.Status.RestartCount, f.replicaSets("web"))
	}

	// No policy selects "other": exit 1 with KICK's explanation.
	code, _, errOut := f.kick("restart", "Deployment/other", "--wait")
	if code != 1 || !strings.Contains(errOut, "no KickPolicy") {
		t.Fatalf("restart of an unselected workload = %d, want 1 naming the missing KickPolicy", code)
	}
	if n := f.replicaSets("other"); n != 1 {
		t.Fatalf("an unselected workload restarted: %d ReplicaSets", n)
	}

	// Suspended policy: the request waits, the CLI gives up with exit 2.
	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"suspend":true}}`))
	if err := env.Client.Patch(f.Ctx, &kickv1alpha1.KickPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: f.NS, Name: "web-only"}}, patch); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = f.kick("restart", "deployment/web", "--wait", "--timeout", "2s")
	if code != 2 || !strings.Contains(errOut, "gave up after 2s") {
		t.Fatalf("restart under a suspended policy = %d, want 2 after the timeout", code)
	}
	// The timeout says why, from the same assessment the manager makes.
	if !strings.Contains(errOut, "explain deployment/web: waiting for Suspended") {
		t.Fatalf("the timeout does not explain the wait:\n%s", errOut)
	}

	// Bad usage.
	if code, _, errOut := f.kick("restart", "cronjob/web"); code != 2 || !strings.Contains(errOut, `unknown kind "cronjob"`) {
		t.Fatalf("unknown kind = %d, want 2", code)
	}

	// Without RBAC on KickRequests: exit 2 naming the missing permission.
	code, _, errOut = f.kick("restart", "deployment/web", "--as", "system:serviceaccount:"+f.NS+":nobody")
	if code != 2 || !strings.Contains(errOut, `permission denied: you need "get" on kickrequests.kick.corewire.io in namespace `+f.NS) {
		t.Fatalf("restart without permissions = %d, want 2 naming the missing permission", code)
	}

	// The list shows both requests with their namespace.
	code, out, _ = f.kick("list", "-A")
	if code != 0 {
		t.Fatalf("list -A = %d", code)
	}
	var rows []string
	for _, line := range strings.Split(out, "\n") {
		if fields := strings.Fields(line); len(fields) > 0 && fields[0] == f.NS {
			rows = append(rows, strings.Join(fields[:5], " "))
		}
	}
	if !strings.HasPrefix(out, "NAMESPACE") || len(rows) != 2 ||
		rows[0] != f.NS+" deployment-other Deployment other Failed" ||
		!strings.HasPrefix(rows[1], f.NS+" deployment-web Deployment web ") {
		t.Fatalf("list -A rows for %s: %q", f.NS, rows)
	}
}
