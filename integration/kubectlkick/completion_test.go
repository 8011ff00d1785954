package kubectlkick

import (
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kick-operator/kick/integration/fixture"
)

// runBin runs kubectl-kick with exactly args and returns its exit code
// and output.
func (f *fx) runBin(args ...string) (int, string) {
	f.T.Helper()
	ctx, cancel := context.WithTimeout(f.Ctx, time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, f.bin, args...).Output()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return exit.ExitCode(), string(out)
	case err != nil:
		f.T.Fatalf("kubectl-kick %v: %v", args, err)
	}
	return 0, string(out)
}

// complete runs the hidden __complete command that the shell scripts call
// on <TAB> and returns the candidates and the directive line (":N").
func (f *fx) complete(args ...string) ([]string, string) {
	f.T.Helper()
	code, out := f.runBin(append([]string{"__complete"}, args...)...)
	if code != 0 {
		f.T.Fatalf("__complete %v exited %d\n%s", args, code, out)
	}
	var candidates []string
	directive := ""
	for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		switch {
		case strings.HasPrefix(l, ":"):
			directive = l
		case l != "":
			candidates = append(candidates, l)
		}
	}
	return candidates, directive
}

// TestCompletion completes KIND/ and then the workload names of the
// namespace from the API server, as "kubectl kick restart deployment/<TAB>"
// does.
func TestCompletion(t *testing.T) {
	f := newFx(t)
	for _, name := range []string{"web", "worker", "api"} {
		f.Deployment(name, 1, fixture.PodSpec())
	}
	labels := map[string]string{"app": "db"}
	f.Create(&appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db"},
		Spec: appsv1.StatefulSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: fixture.PodSpec()},
		},
	})

	// __complete takes the word being completed last: the flags go first.
	for _, tc := range []struct {
		args      []string
		want      []string
		directive string
	}{
		// The kind first, without a space after the slash (NoSpace|NoFileComp).
		{[]string{"restart", ""}, []string{"daemonset/", "deployment/", "rollout/", "statefulset/"}, ":6"},
		{[]string{"restart", "de"}, []string{"deployment/"}, ":6"},
		{[]string{"restart", "st"}, []string{"statefulset/"}, ":6"},
		{[]string{"restart", "sts"}, []string{"sts/"}, ":6"},
		{[]string{"explain", ""}, []string{"daemonset/", "deployment/", "rollout/", "statefulset/"}, ":6"},
		// Then the names of the namespace's workloads of that kind.
		{[]string{"restart", "deployment/"}, []string{"deployment/api", "deployment/web", "deployment/worker"}, ":4"},
		{[]string{"restart", "deploy/w"}, []string{"deploy/web", "deploy/worker"}, ":4"},
		{[]string{"explain", "sts/"}, []string{"sts/db"}, ":4"},
		{[]string{"timeline", "daemonset/"}, nil, ":4"},
		// One argument only.
		{[]string{"restart", "deployment/web", ""}, nil, ":4"},
	} {
		args := append([]string{tc.args[0], "--kubeconfig", f.Env.Cluster.Kubeconfig, "-n", f.NS}, tc.args[1:]...)
		got, directive := f.complete(args...)
		if !slices.Equal(got, tc.want) || directive != tc.directive {
			t.Errorf("complete %q = %q %s, want %q %s", tc.args, got, directive, tc.want, tc.directive)
		}
	}

	// -n completes the namespaces.
	got, _ := f.complete("restart", "--kubeconfig", f.Env.Cluster.Kubeconfig, "-n", f.NS[:len(f.NS)-1])
	if !slices.Contains(got, f.NS) {
		t.Errorf("namespace completion %q lacks %s", got, f.NS)
	}
}

// TestVersion reads the manager's version from its Deployment, and says
// why when there is none; it never fails for the manager.
func TestVersion(t *testing.T) {
	f := newFx(t)
	code, out, _ := f.kick("version", "--manager-namespace", f.NS)
	if code != 0 || !strings.Contains(out, "manager: unknown (no Deployment labelled app.kubernetes.io/name=kick,app.kubernetes.io/component=manager in namespace "+f.NS+")") {
		t.Fatalf("without a manager Deployment: exit %d\n%s", code, out)
	}

	labels := map[string]string{"app.kubernetes.io/name": "kick", "app.kubernetes.io/component": "manager"}
	spec := corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: "registry.example:5000/kick-operator/kick:v1.2.3"}}}
	f.Create(&appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "kick-manager", Labels: map[string]string{
			"app.kubernetes.io/name": "kick", "app.kubernetes.io/component": "manager", "app.kubernetes.io/version": "v1.2.0"}},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec},
		},
	})
	code, out, _ = f.kick("version", "--manager-namespace", f.NS, "-o", "json")
	var r struct {
		Client   string `json:"client"`
		Managers []struct {
			Namespace, Name, Version, Source string
		} `json:"managers"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != 0 {
		t.Fatalf("version -o json: exit %d, %v\n%s", code, err, out)
	}
	if len(r.Managers) != 1 || r.Managers[0].Version != "v1.2.3" || r.Managers[0].Source != "image tag" || r.Managers[0].Name != "kick-manager" {
		t.Fatalf("managers = %+v", r.Managers)
	}
	// The client's version is the one --version prints (make build injects it).
	_, plain := f.runBin("--version")
	if strings.TrimSpace(plain) != r.Client || r.Client == "" {
		t.Fatalf("--version %q, version -o json client %q", plain, r.Client)
	}

	// An unreachable cluster makes the manager unknown, not the command fail.
	code, out, _ = f.kick("version", "--server", "https://127.0.0.1:1", "--request-timeout", "2s")
	if code != 0 || !strings.Contains(out, "manager: unknown (cannot read the cluster") {
		t.Fatalf("unreachable cluster: exit %d\n%s", code, out)
	}
}
