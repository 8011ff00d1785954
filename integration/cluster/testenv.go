// Package cluster is the integration-test harness: it starts one local
// control plane (cmd/kick-devcluster/controlplane) per test binary and gives
// tests a fresh namespace each, clients, in-process and out-of-process
// managers, and polling helpers.
package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kick-operator/kick/cmd/kick-devcluster/controlplane"
	"github.com/kick-operator/kick/cmd/kick-devcluster/gitopsstack"
)

// Env is the control plane shared by the tests of one test binary.
type Env struct {
	Cluster *controlplane.Cluster
	Config  *rest.Config
	Client  client.Client
	Scheme  *runtime.Scheme
	// RepoRoot is the repository checkout the tests run from.
	RepoRoot string
	// GitOps runs the real GitOps controllers and the git server when
	// TestOptions.GitOps asked for them; nil otherwise.
	GitOps *gitopsstack.Stack
}

// TestOptions configure Main.
type TestOptions struct {
	// UpstreamCRDs installs the Argo CD, Flux, Rollouts, Kargo and CSI CRDs.
	UpstreamCRDs bool
	// KickCRDs installs KICK's own CRDs from deploy/crds.
	KickCRDs bool
	// AddToScheme registers further types with Env.Scheme.
	AddToScheme []func(*runtime.Scheme) error
	// Nodes is the number of kwok nodes (default 1).
	Nodes int
	// GitOps chooses real GitOps controllers to run next to the control
	// plane (Argo, Flux); their binaries come from $KICK_GITOPS_BIN, else
	// bin/gitops (make gitops-controllers). Implies UpstreamCRDs.
	GitOps gitopsstack.Options
	// APIServerFlags are added to kube-apiserver's command line.
	APIServerFlags []string
	// PriorityAndFairness runs kube-apiserver with API Priority and
	// Fairness (controlplane.Options.PriorityAndFairness).
	PriorityAndFairness bool
}

var shared *Env

// Main starts one control plane for the test binary, runs the tests and
// stops it. A control plane that cannot start fails the run: integration
// tests are never skipped silently. Binaries come from $KICK_K8S_BIN, else
// bin/k8s in the repository.
func Main(m *testing.M, opts TestOptions) {
	os.Exit(runMain(m, opts))
}

func runMain(m *testing.M, opts TestOptions) int {
	root, err := RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "integration:", err)
		return 1
	}
	binDir := os.Getenv("KICK_K8S_BIN")
	if binDir == "" {
		binDir = filepath.Join(root, "bin", "k8s")
	}
	gitops := opts.GitOps.Any()
	if gitops {
		opts.UpstreamCRDs = true
		if opts.GitOps.BinDir = os.Getenv("KICK_GITOPS_BIN"); opts.GitOps.BinDir == "" {
			opts.GitOps.BinDir = filepath.Join(root, "bin", "gitops")
		}
	}
	var crdDirs []string
	if opts.KickCRDs {
		crdDirs = append(crdDirs, filepath.Join(root, "deploy", "crds"))
	}
	started := time.Now()
	var c *controlplane.Cluster
	// Free ports are picked before the components bind them, so another
	// process on the machine can take one in between: try a few times.
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		c, err = controlplane.Start(ctx, controlplane.Options{BinDir: binDir, Nodes: opts.Nodes, UpstreamCRDs: opts.UpstreamCRDs, CRDDirs: crdDirs,
			APIServerFlags: opts.APIServerFlags, PriorityAndFairness: opts.PriorityAndFairness})
		cancel()
		if err == nil {
			break
		}
		fmt.Fprintf(os.Stderr, "integration: the local control plane did not start (attempt %d): %v\n", attempt, err)
		if attempt == 3 {
			return 1
		}
	}
	defer c.Stop()
	fmt.Fprintf(os.Stderr, "integration: control plane ready in %s (%s)\n", time.Since(started).Round(time.Millisecond), c.Config.Host)
	var stack *gitopsstack.Stack
	if gitops {
		started = time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		stack, err = gitopsstack.Start(ctx, c, opts.GitOps)
		cancel()
		if err != nil {
			fmt.Fprintln(os.Stderr, "integration: the GitOps controllers did not start:", err)
			return 1
		}
		defer stack.Stop()
		fmt.Fprintf(os.Stderr, "integration: GitOps controllers ready in %s (git server %s)\n", time.Since(started).Round(time.Millisecond), stack.Git.URL)
	}

	scheme := runtime.NewScheme()
	adders := append([]func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme}, opts.AddToScheme...)
	for _, add := range adders {
		if err := add(scheme); err != nil {
			fmt.Fprintln(os.Stderr, "integration: scheme:", err)
			return 1
		}
	}
	cl, err := client.New(c.Config, client.Options{Scheme: scheme})
	if err != nil {
		fmt.Fprintln(os.Stderr, "integration: client:", err)
		return 1
	}
	shared = &Env{Cluster: c, Config: c.Config, Client: cl, Scheme: scheme, RepoRoot: root, GitOps: stack}
	code := m.Run()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "integration: tests failed; component logs were in %s\n", c.LogDir())
	}
	return code
}

// Get returns the shared environment; it fails the test when Main did not
// start one.
func Get(t testing.TB) *Env {
	t.Helper()
	if shared == nil {
		t.Fatal("no control plane: call cluster.Main from TestMain")
	}
	return shared
}

var nonName = regexp.MustCompile(`[^a-z0-9-]+`)

// Namespace creates a fresh namespace for the test and deletes it when the
// test ends. When the test failed it first prints the namespace's events and
// the tail of every component log.
func (e *Env) Namespace(t testing.TB) string {
	t.Helper()
	base := nonName.ReplaceAllString(strings.ToLower(t.Name()), "-")
	if len(base) > 40 {
		base = base[:40]
	}
	suffix := make([]byte, 3)
	_, _ = rand.Read(suffix)
	name := strings.Trim(base, "-") + "-" + hex.EncodeToString(suffix)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := e.Client.Create(context.Background(), ns); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			e.DumpNamespace(t, name)
		}
		_ = e.Client.Delete(context.Background(), ns)
	})
	return name
}

func (e *Env) ensureNamespace(t testing.TB, name string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := e.Client.Create(context.Background(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create namespace %s: %v", name, err)
	}
}

// DumpNamespace logs the events of a namespace and the component logs.
func (e *Env) DumpNamespace(t testing.TB, namespace string) {
	t.Helper()
	var events corev1.EventList
	if err := e.Client.List(context.Background(), &events, client.InNamespace(namespace)); err == nil {
		var b strings.Builder
		for _, ev := range events.Items {
			fmt.Fprintf(&b, "%s %s/%s %s: %s\n", ev.LastTimestamp.Format(time.RFC3339), ev.InvolvedObject.Kind, ev.InvolvedObject.Name, ev.Reason, ev.Message)
		}
		t.Logf("events in %s:\n%s", namespace, b.String())
	}
	t.Logf("component logs:\n%s", e.Cluster.LogTails(4000))
	if e.GitOps != nil {
		t.Logf("GitOps controller logs:\n%s", e.GitOps.LogTails(12000))
	}
}

// Eventually polls cond every interval until it returns true or timeout
// passes, then fails the test with the last error cond reported.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	if err := Poll(timeout, what, cond); err != nil {
		t.Fatal(err)
	}
}

// Poll is Eventually for a caller that wants to go on after a timeout (to
// report figures, say): it returns an error naming what and the last error
// cond reported instead of failing the test.
func Poll(timeout time.Duration, what string, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s waiting for %s (last error: %v)", timeout, what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// RepoRoot finds the directory holding the repository's go.mod.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.Contains(string(data), "module github.com/kick-operator/kick\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of github.com/kick-operator/kick above the working directory")
		}
		dir = parent
	}
}

// Binary returns the path of one of the repository's commands (kick-manager,
// kubectl-kick, kick-devcluster): from $KICK_BIN when `make build` put it
// there, else built into a temporary directory for this test run.
func Binary(t testing.TB, name string) string {
	t.Helper()
	if dir := os.Getenv("KICK_BIN"); dir != "" {
		path := filepath.Join(dir, name)
		if _, err := os.Stat(path); err == nil {
			return path
		}
	}
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	builds := [][]string{{"-o", filepath.Join(dir, name), "./cmd/" + name}}
	if name == "kick-manager" {
		// As `make build` does: the lean manager, and next to it the build
		// with the Argo CD integration that it hands over to.
		builds = [][]string{
			{"-tags", "noargocd,grpcnotrace", "-o", filepath.Join(dir, name), "./cmd/kick-manager"},
			{"-tags", "grpcnotrace", "-o", filepath.Join(dir, "kick-manager-argocd"), "./cmd/kick-manager"},
		}
	}
	for _, args := range builds {
		cmd := exec.Command("go", append([]string{"build"}, args...)...)
		cmd.Dir = root
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", name, err, b)
		}
	}
	return filepath.Join(dir, name)
}

// K8sBinDir is where the control-plane binaries (and kubectl) live.
func K8sBinDir(t testing.TB) string {
	t.Helper()
	if dir := os.Getenv("KICK_K8S_BIN"); dir != "" {
		return dir
	}
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "bin", "k8s")
}
