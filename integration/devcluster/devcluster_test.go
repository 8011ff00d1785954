// Package devcluster tests the kick-devcluster command: it starts a real
// control plane, serves KICK's and the upstream CRDs, runs Deployments on kwok
// nodes, refuses bad input clearly, and leaves nothing behind when stopped.
package devcluster

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kick-operator/kick/integration/cluster"
)

// devcluster is a running kick-devcluster process.
type devcluster struct {
	t       *testing.T
	cmd     *exec.Cmd
	dir     string
	stderr  *bytes.Buffer
	exited  chan error
	kubectl string
}

func startDevcluster(t *testing.T, args ...string) *devcluster {
	t.Helper()
	root, err := cluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	d := &devcluster{t: t, dir: t.TempDir(), stderr: &bytes.Buffer{}, exited: make(chan error, 1)}
	d.kubectl = filepath.Join(cluster.K8sBinDir(t), "kubectl")
	full := append([]string{"up", "--dir", d.dir, "--bin-dir", cluster.K8sBinDir(t),
		"--kick-crds", filepath.Join(root, "deploy", "crds")}, args...)
	d.cmd = exec.Command(cluster.Binary(t, "kick-devcluster"), full...)
	d.cmd.Stderr = d.stderr
	stdout, err := d.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "ready") {
				ready <- sc.Text()
			}
		}
	}()
	go func() { d.exited <- d.cmd.Wait() }()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("kick-devcluster stderr:\n%s", d.stderr.String())
			d.dumpLogs()
		}
		_ = d.cmd.Process.Signal(syscall.SIGKILL)
	})
	select {
	case line := <-ready:
		t.Logf("kick-devcluster: %s", line)
	case err := <-d.exited:
		t.Fatalf("kick-devcluster exited before it was ready: %v", err)
	case <-time.After(4 * time.Minute):
		t.Fatal("kick-devcluster did not print ready within 4 minutes")
	}
	return d
}

func (d *devcluster) dumpLogs() {
	entries, _ := os.ReadDir(filepath.Join(d.dir, "logs"))
	for _, e := range entries {
		data, _ := os.ReadFile(filepath.Join(d.dir, "logs", e.Name()))
		if len(data) > 4000 {
			data = data[len(data)-4000:]
		}
		d.t.Logf("----- %s -----\n%s", e.Name(), data)
	}
}

// kubectl runs kubectl against the devcluster and returns its output.
func (d *devcluster) run(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, d.kubectl, append([]string{"--kubeconfig", filepath.Join(d.dir, "kubeconfig")}, args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (d *devcluster) mustKubectl(args ...string) string {
	d.t.Helper()
	out, err := d.run(args...)
	if err != nil {
		d.t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func (d *devcluster) ports() map[string]int {
	d.t.Helper()
	data, err := os.ReadFile(filepath.Join(d.dir, "ports.json"))
	if err != nil {
		d.t.Fatal(err)
	}
	ports := map[string]int{}
	if err := json.Unmarshal(data, &ports); err != nil {
		d.t.Fatal(err)
	}
	return ports
}

// TestDevclusterLifecycle starts the devcluster with the upstream CRDs, uses
// it the way a person would with kubectl, then stops it with SIGTERM and
// checks that no process and no listening port is left behind.
func TestDevclusterLifecycle(t *testing.T) {
	d := startDevcluster(t, "--nodes", "2", "--crds", "upstream")

	t.Run("version parses", func(t *testing.T) {
		var v struct {
			ServerVersion struct{ GitVersion, Major, Minor string } `json:"serverVersion"`
		}
		if err := json.Unmarshal([]byte(d.mustKubectl("version", "-o", "json")), &v); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(v.ServerVersion.GitVersion, "v1.") || v.ServerVersion.Major != "1" {
			t.Fatalf("server version not parseable: %+v", v.ServerVersion)
		}
	})

	t.Run("kick CRDs are served and explained", func(t *testing.T) {
		for path, want := range map[string][]string{
			"kickpolicy.spec":                 {"discovery", "schedule", "gitOps", "restart", "dryRun", "suspend"},
			"kickrequest.spec.targetRef":      {"apiVersion", "kind", "name"},
			"kickrequest.status":              {"phase", "latestObservedDependencyChange", "gate"},
			"notificationpolicy.spec.webhook": {"url", "format", "signing", "auth", "tls"},
			"sourceobservation.spec":          {"source", "lastRelevantChangeTime"},
		} {
			out := d.mustKubectl("explain", path)
			for _, field := range want {
				if !strings.Contains(out, field) {
					t.Errorf("kubectl explain %s does not mention %q:\n%s", path, field, out)
				}
			}
		}
	})

	t.Run("upstream CRDs are served", func(t *testing.T) {
		for _, resource := range []string{
			"applications.argoproj.io", "appprojects.argoproj.io",
			"kustomizations.kustomize.toolkit.fluxcd.io", "helmreleases.helm.toolkit.fluxcd.io",
			"rollouts.argoproj.io", "stages.kargo.akuity.io", "promotions.kargo.akuity.io",
			"secretproviderclasspodstatuses.secrets-store.csi.x-k8s.io",
		} {
			d.mustKubectl("get", resource, "-A")
		}
	})

	t.Run("deployment rolls out and restarts on kwok nodes", func(t *testing.T) {
		d.mustKubectl("create", "namespace", "shop")
		manifest := `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: app, image: registry.k8s.io/pause:3.10}]
`
		f := filepath.Join(t.TempDir(), "web.yaml")
		if err := os.WriteFile(f, []byte(manifest), 0o644); err != nil {
			t.Fatal(err)
		}
		d.mustKubectl("apply", "-f", f)
		d.mustKubectl("-n", "shop", "rollout", "status", "deployment/web", "--timeout=2m")
		if got := d.mustKubectl("-n", "shop", "get", "deployment", "web", "-o", "jsonpath={.status.availableReplicas}"); got != "2" {
			t.Fatalf("available replicas = %q, want 2", got)
		}
		nodes := d.mustKubectl("-n", "shop", "get", "pods", "-o", "jsonpath={.items[*].spec.nodeName}")
		if !strings.Contains(nodes, "kwok-node-") {
			t.Fatalf("pods are not on kwok nodes: %q", nodes)
		}
		if n := len(strings.Fields(d.mustKubectl("-n", "shop", "get", "replicasets", "-o", "name"))); n != 1 {
			t.Fatalf("want 1 ReplicaSet before the restart, got %d", n)
		}
		d.mustKubectl("-n", "shop", "rollout", "restart", "deployment/web")
		d.mustKubectl("-n", "shop", "rollout", "status", "deployment/web", "--timeout=2m")
		if n := len(strings.Fields(d.mustKubectl("-n", "shop", "get", "replicasets", "-o", "name"))); n != 2 {
			t.Fatalf("want a second ReplicaSet after rollout restart, got %d", n)
		}
	})

	ports := d.ports()
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-d.exited:
		if err != nil {
			t.Fatalf("kick-devcluster exited with %v after SIGTERM", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("kick-devcluster did not stop within 60s of SIGTERM")
	}
	for name, port := range ports {
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			t.Errorf("port %d (%s) is still in use after stop: %v", port, name, err)
			continue
		}
		l.Close()
	}
	if procs := processesMentioning(d.dir); len(procs) > 0 {
		t.Errorf("processes left behind after stop:\n%s", strings.Join(procs, "\n"))
	}
}

// processesMentioning lists running processes whose command line contains s.
func processesMentioning(s string) []string {
	var out []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		cmdline := strings.ReplaceAll(string(data), "\x00", " ")
		if strings.Contains(cmdline, s) {
			out = append(out, fmt.Sprintf("%s: %s", e.Name(), cmdline))
		}
	}
	return out
}

// runBad runs kick-devcluster with arguments that must be refused quickly.
func runBad(t *testing.T, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, cluster.Binary(t, "kick-devcluster"), args...)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("kick-devcluster %v hung instead of failing:\n%s", args, out)
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("kick-devcluster %v: want a non-zero exit, got %v:\n%s", args, err, out)
	}
	return exit.ExitCode(), string(out)
}

func TestDevclusterRefusesMissingBinary(t *testing.T) {
	code, out := runBad(t, "up", "--dir", t.TempDir(), "--bin-dir", t.TempDir())
	if code != 1 || !strings.Contains(out, "missing etcd") || !strings.Contains(out, "make control-plane") {
		t.Fatalf("exit %d, output does not name the missing binary and the fix:\n%s", code, out)
	}
}

func TestDevclusterRefusesBusyPort(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	code, out := runBad(t, "up", "--dir", t.TempDir(), "--bin-dir", cluster.K8sBinDir(t), "--apiserver-port", strconv.Itoa(port))
	want := fmt.Sprintf("port %d for kube-apiserver is already in use", port)
	if code != 1 || !strings.Contains(out, want) {
		t.Fatalf("exit %d, output does not say %q:\n%s", code, want, out)
	}
	if procs := processesMentioning("--dir"); len(procs) > 0 {
		for _, p := range procs {
			if strings.Contains(p, "kick-devcluster up") {
				t.Errorf("a refused kick-devcluster left a process behind: %s", p)
			}
		}
	}
}

func TestDevclusterRefusesBadUsage(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"down"},
		{"up"},
		{"up", "--dir", t.TempDir(), "--crds", "all"},
	} {
		code, out := runBad(t, args...)
		if code != 2 {
			t.Errorf("kick-devcluster %v: exit %d, want 2 (usage):\n%s", args, code, out)
		}
	}
}

// TestDemo runs `make demo`'s script with DEMO_EXIT=1: it must show a
// Secret change restarting the sample Deployment and the CloudEvent
// arriving, then a change held by kubectl kick hold and restarted on
// release, and exit 0.
func TestDemo(t *testing.T) {
	root, err := cluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	binDir := os.Getenv("KICK_BIN")
	if binDir == "" {
		// Not run through make: build the commands side by side, as the
		// script expects them in one directory.
		binDir = t.TempDir()
		build := exec.Command("go", "build", "-o", binDir+"/", "./cmd/kick-manager", "./cmd/kubectl-kick", "./cmd/kick-devcluster")
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("build: %v\n%s", err, out)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, "hack", "demo.sh"), binDir, cluster.K8sBinDir(t))
	cmd.Env = append(os.Environ(), "DEMO_EXIT=1", "DEMO_DIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("demo failed: %v\n%s", err, out)
	}
	for _, want := range []string{"Succeeded", "io.corewire.kick.request.succeeded.v1", "kickhold/hold-secret-web-secret created",
		"the restart waits (reason Held)", "kickhold/hold-secret-web-secret deleted", "the held one ran on release"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("demo output does not show %q:\n%s", want, out)
		}
	}
}
