package kubectlkick

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/integration/fixture"
)

// tenantKubeconfig gives a ServiceAccount of namespace ns the right to hold
// and release there (and nowhere else), and returns a kubeconfig with its
// token only: no client certificate that would make it the admin.
func tenantKubeconfig(t *testing.T, env *cluster.Env, ns string) string {
	return roleKubeconfig(t, env, ns, "oncall", []rbacv1.PolicyRule{{
		APIGroups: []string{kickv1alpha1.GroupVersion.Group}, Resources: []string{"kickholds"},
		Verbs: []string{"get", "list", "watch", "create", "patch", "delete"}}})
}

// roleKubeconfig makes a ServiceAccount name in namespace ns, grants it
// rules there (and nowhere else), and returns a kubeconfig with its token
// only.
func roleKubeconfig(t *testing.T, env *cluster.Env, ns, name string, rules []rbacv1.PolicyRule) string {
	t.Helper()
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Rules: rules}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa.Name}}}
	for _, obj := range []client.Object{sa, role, binding} {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa.Name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(3600))}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: env.Config.Host, CertificateAuthorityData: env.Config.CAData, CertificateAuthority: env.Config.CAFile}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	cfg.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: name, Namespace: ns}
	cfg.CurrentContext = "c"
	path := filepath.Join(t.TempDir(), name+"-kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// kickAs runs kubectl-kick with another kubeconfig, in namespace ns.
func (f *fx) kickAs(kubeconfig, ns string, args ...string) (int, string, string) {
	f.T.Helper()
	ctx, cancel := context.WithTimeout(f.Ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, f.bin, append([]string{args[0], "--kubeconfig", kubeconfig, "-n", ns}, args[1:]...)...)
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
	f.T.Logf("kubectl-kick (as %s) %s -> %d\nstdout:\n%sstderr:\n%s", filepath.Base(kubeconfig), strings.Join(args, " "), code, out.String(), errOut.String())
	return code, out.String(), errOut.String()
}

// waitHeld waits until each named request waits with reason Held, its
// message saying says.
func waitHeld(t *testing.T, f *fixture.F, says string, names ...string) {
	t.Helper()
	cluster.Eventually(t, time.Minute, "requests held saying "+says, func() (bool, error) {
		for _, name := range names {
			kr, err := f.Request(name)
			if err != nil {
				return false, err
			}
			g := kr.Status.Gate
			if kr.Status.Phase != kickv1alpha1.PhaseWaitingForGate || g == nil || g.Reason != kickv1alpha1.GateHeld || !strings.Contains(g.Message, says) {
				return false, fmt.Errorf("kickrequest/%s is %s (%+v)", name, kr.Status.Phase, g)
			}
		}
		return true, nil
	})
}

// waitHeldEvents waits until the request has a HeldByKickHold Event
// saying each of says.
func waitHeldEvents(t *testing.T, f *fixture.F, name string, says ...string) {
	t.Helper()
	cluster.Eventually(t, time.Minute, "HeldByKickHold Events of "+name, func() (bool, error) {
		var list eventsv1.EventList
		if err := f.Env.Client.List(f.Ctx, &list, client.InNamespace(f.NS)); err != nil {
			return false, err
		}
		var notes []string
		for _, e := range list.Items {
			if e.Regarding.Kind == "KickRequest" && e.Regarding.Name == name && e.Reason == "HeldByKickHold" {
				notes = append(notes, e.Note)
			}
		}
		for _, want := range says {
			if !slices.ContainsFunc(notes, func(n string) bool { return strings.Contains(n, want) }) {
				return false, fmt.Errorf("no HeldByKickHold Event says %s; notes: %q", want, notes)
			}
		}
		return true, nil
	})
}

// Hold and release with kubectl kick, by an on-call ServiceAccount that may
// only hold in its own namespace: a hold of a Secret holds exactly the
// restarts that bring in its change; a hold of the namespace holds every
// restart; a hold in one namespace never reaches another (not even for a
// Secret of the same name), and the tenant cannot hold another namespace;
// on release every held workload restarts exactly once; an expired hold
// lets its restart go by itself. Every restart is counted from the
// Deployments' ReplicaSets.
func TestHoldAndRelease(t *testing.T) {
	env := cluster.Get(t)
	f := newFx(t)
	other := &fixture.F{T: t, Env: env, NS: env.Namespace(t), Ctx: f.Ctx}
	env.StartManager(t, fixture.ManagerNamespace)
	for _, x := range []*fixture.F{f.F, other} {
		x.Policy("all", "discovery: {workloadSelector: {}}\nrestart: {minInterval: 0s}")
		x.Secret("db", map[string]string{"password": "alpha"}, nil)
	}
	f.Secret("flags", map[string]string{"v": "1"}, nil)
	for _, name := range []string{"web-1", "web-2"} {
		f.deployment(name, "db")
	}
	f.deployment("api", "flags")
	other.Deployment("web", 1, fixture.PodSpec("db"))
	other.WaitAvailable("web")
	for _, x := range []*fixture.F{f.F, other} {
		x.WaitObservation("db")
	}
	f.WaitObservation("flags")
	tenant := tenantKubeconfig(t, env, f.NS)

	// The tenant cannot hold the other namespace.
	code, _, stderr := f.kickAs(tenant, other.NS, "hold", "namespace", "--reason", "hostile")
	if code != 2 || !strings.Contains(stderr, "permission denied") || !strings.Contains(stderr, "kickholds") {
		t.Fatalf("the tenant's hold of namespace %s = %d (%s), want 2 and a permission denied naming kickholds", other.NS, code, stderr)
	}
	// RBAC may take a moment to see the new binding.
	cluster.Eventually(t, 30*time.Second, "the tenant's hold of secret/db", func() (bool, error) {
		code, out, stderr := f.kickAs(tenant, f.NS, "hold", "secret/db", "--reason", "INC-42: rotating the DB password")
		return code == 0 && strings.Contains(out, "kickhold/hold-secret-db created"), fmt.Errorf("exit %d: %s%s", code, out, stderr)
	})

	// The other namespace's consumer of its own Secret db is not held.
	other.SetSecret("db", map[string]string{"password": "beta"})
	other.WaitPhase("deployment-web", kickv1alpha1.PhaseSucceeded, time.Minute)
	other.WaitReplicaSets("web", 2)

	// Secret db's consumers are held, Secret flags' consumer is not.
	f.SetSecret("db", map[string]string{"password": "beta"})
	waitHeld(t, f.F, `KickHold hold-secret-db (Secret/db): "INC-42: rotating the DB password"`, "deployment-web-1", "deployment-web-2")
	f.SetSecret("flags", map[string]string{"v": "2"})
	f.WaitPhase("deployment-api", kickv1alpha1.PhaseSucceeded, time.Minute)
	f.WaitReplicaSets("api", 2)
	for _, name := range []string{"web-1", "web-2"} {
		if n := f.replicaSets(name); n != 1 {
			t.Fatalf("held %s has %d ReplicaSets, want 1", name, n)
		}
	}

	// A hold of the whole namespace (by the admin) keeps them held when
	// the tenant releases the Secret, and holds api's next restart too.
	if code, out, _ := f.kick("hold", "namespace", "--reason", "freeze", "--for", "1h"); code != 0 || !strings.Contains(out, "kickhold/hold-namespace created") {
		t.Fatalf("hold namespace = %d, want 0 and created", code)
	}
	if code, out, _ := f.kickAs(tenant, f.NS, "release", "secret/db"); code != 0 || !strings.Contains(out, "kickhold/hold-secret-db deleted") {
		t.Fatalf("the tenant's release of secret/db = %d, want 0 and deleted", code)
	}
	waitHeld(t, f.F, "KickHold hold-namespace (Namespace)", "deployment-web-1", "deployment-web-2")
	f.SetSecret("flags", map[string]string{"v": "3"})
	waitHeld(t, f.F, `"freeze"`, "deployment-api")
	// Holding again updates the reason.
	if code, out, _ := f.kick("hold", "namespace", "--reason", "freeze, still"); code != 0 || !strings.Contains(out, "updated") {
		t.Fatalf("holding again = %d, want 0 and updated", code)
	}
	waitHeld(t, f.F, `"freeze, still"`, "deployment-web-1", "deployment-web-2", "deployment-api")
	// The request names the hold as the cause of its gate, and its Events
	// follow the hold: one for the hold of the Secret it started waiting
	// on, one for the hold of the namespace that took over, one for its
	// new reason.
	if kr, err := f.Request("deployment-web-1"); err != nil || kr.Status.Gate.Cause == nil ||
		*kr.Status.Gate.Cause != (kickv1alpha1.GateCause{APIVersion: "kick.corewire.io/v1alpha1", Kind: "KickHold", Namespace: f.NS, Name: "hold-namespace"}) {
		t.Fatalf("deployment-web-1's gate cause = %+v (%v), want KickHold %s/hold-namespace", kr.Status.Gate, err, f.NS)
	}
	waitHeldEvents(t, f.F, "deployment-web-1", `"INC-42: rotating the DB password"`, `"freeze"`, `"freeze, still"`)
	for name, want := range map[string]int{"web-1": 1, "web-2": 1, "api": 2} {
		if n := f.replicaSets(name); n != want {
			t.Fatalf("held %s has %d ReplicaSets, want %d", name, n, want)
		}
	}

	// Release: every held workload restarts exactly once.
	if code, out, _ := f.kickAs(tenant, f.NS, "release", "namespace"); code != 0 || !strings.Contains(out, "kickhold/hold-namespace deleted") {
		t.Fatalf("release namespace = %d, want 0 and deleted", code)
	}
	for _, name := range []string{"web-1", "web-2", "api"} {
		f.WaitPhase("deployment-"+name, kickv1alpha1.PhaseSucceeded, time.Minute)
	}
	if code, _, stderr := f.kick("release", "namespace"); code != 1 || !strings.Contains(stderr, "no KickHold holds namespace") {
		t.Fatalf("a second release = %d (%s), want 1 and 'no KickHold holds namespace'", code, stderr)
	}

	// A hold that expires lets its restart go by itself.
	if code, _, _ := f.kick("hold", "deployment/api", "--reason", "short", "--for", "30s"); code != 0 {
		t.Fatalf("hold deployment/api = %d, want 0", code)
	}
	f.SetSecret("flags", map[string]string{"v": "4"})
	waitHeld(t, f.F, "KickHold hold-deployment-api (Deployment/api)", "deployment-api")
	f.WaitPhase("deployment-api", kickv1alpha1.PhaseSucceeded, 2*time.Minute)

	// Exactly once each, after everything queued before the barrier.
	f.Barrier()
	for name, want := range map[string]int{"web-1": 2, "web-2": 2, "api": 4} {
		if n := f.replicaSets(name); n != want {
			t.Errorf("%s has %d ReplicaSets, want %d (one per change it was given)", name, n, want)
		}
	}
	if n := len(other.ReplicaSets("web")); n != 2 {
		t.Errorf("the other namespace's web has %d ReplicaSets, want 2", n)
	}
	// api's request was reopened twice: its status keeps both earlier
	// cycles, each with its restart, newest first.
	kr, err := f.Request("deployment-api")
	if err != nil {
		t.Fatal(err)
	}
	if h := kr.Status.History; len(h) != 2 || h[0].RestartedAt == nil || h[1].RestartedAt == nil ||
		h[0].Phase != kickv1alpha1.PhaseSucceeded || !h[1].CompletedAt.Before(&h[0].CompletedAt) && !h[1].CompletedAt.Equal(&h[0].CompletedAt) {
		t.Errorf("deployment-api's history = %+v, want its two earlier restarted cycles, newest first", h)
	}
}
