// Package manager tests the kick-manager binary against the local control
// plane: it starts, elects itself leader, serves health and metrics, stops
// cleanly, and refuses bad flags with a message naming the flag.
package manager

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/integration/cluster"
)

func TestMain(m *testing.M) {
	cluster.Main(m, cluster.TestOptions{KickCRDs: true, AddToScheme: []func(*runtime.Scheme) error{kickv1alpha1.AddToScheme}})
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func get(url string) (int, string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

func TestManagerServesHealthMetricsAndLeads(t *testing.T) {
	env := cluster.Get(t)
	ns := env.Namespace(t)
	metrics, probes := freeAddr(t), freeAddr(t)
	var logs bytes.Buffer
	cmd := exec.Command(cluster.Binary(t, "kick-manager"),
		"--kubeconfig", env.Cluster.Kubeconfig, "--namespace", ns, "--leader-elect",
		"--metrics-bind-address", metrics, "--health-probe-bind-address", probes)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		if t.Failed() {
			t.Logf("kick-manager output:\n%s", logs.String())
		}
	})

	for _, path := range []string{"/healthz", "/readyz"} {
		cluster.Eventually(t, 30*time.Second, "kick-manager "+path, func() (bool, error) {
			code, body, err := get("http://" + probes + path)
			if err != nil {
				return false, err
			}
			return code == http.StatusOK, fmt.Errorf("status %d: %s", code, body)
		})
	}
	cluster.Eventually(t, 30*time.Second, "the leader-election lease", func() (bool, error) {
		var lease coordinationv1.Lease
		err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "kick-manager.kick.corewire.io"}, &lease)
		return err == nil && lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != "", err
	})
	cluster.Eventually(t, 30*time.Second, "leader metric on /metrics", func() (bool, error) {
		code, body, err := get("http://" + metrics + "/metrics")
		if err != nil {
			return false, err
		}
		return code == http.StatusOK && strings.Contains(body, "leader_election_master_status"), fmt.Errorf("status %d", code)
	})

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("kick-manager exited with %v after SIGTERM", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("kick-manager did not stop within 30s of SIGTERM")
	}
}

func TestManagerRefusesBadFlags(t *testing.T) {
	env := cluster.Get(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--rollout-timeout", "-1s"}, "--rollout-timeout must be positive"},
		{[]string{"--max-concurrent-reconciles", "0"}, "--max-concurrent-reconciles must be at least 1"},
		{[]string{"--webhook-deny-cidrs", "10.0.0.0/33"}, "is not a CIDR"},
		{[]string{"--namespace", ""}, "--namespace must not be empty"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		args := append([]string{"--kubeconfig", env.Cluster.Kubeconfig}, tc.args...)
		out, err := exec.CommandContext(ctx, cluster.Binary(t, "kick-manager"), args...).CombinedOutput()
		cancel()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() == 0 {
			t.Errorf("kick-manager %v: want a non-zero exit, got %v", tc.args, err)
			continue
		}
		if !strings.Contains(string(out), tc.want) {
			t.Errorf("kick-manager %v: output does not say %q:\n%s", tc.args, tc.want, out)
		}
	}
}
