package cluster

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kick-operator/kick/cmd/kick-devcluster/controlplane"
)

// Manager is a kick-manager process running against the shared control
// plane, as it runs in production (same binary, same flags).
type Manager struct {
	t        testing.TB
	cmd      *exec.Cmd
	logPath  string
	probes   string
	metrics  string
	timeline string
	done     chan struct{}
	mu       sync.Mutex
	stopped  bool
}

// StartManager runs bin/kick-manager with the test kubeconfig, the given
// manager namespace (created if missing) and extra flags, and waits until
// it is ready. Its log is printed when the test fails.
func (e *Env) StartManager(t testing.TB, namespace string, args ...string) *Manager {
	t.Helper()
	return e.StartManagerBinary(t, Binary(t, "kick-manager"), namespace, args...)
}

// StartManagerBinary is StartManager with a given kick-manager binary.
func (e *Env) StartManagerBinary(t testing.TB, binary, namespace string, args ...string) *Manager {
	t.Helper()
	e.ensureNamespace(t, namespace)
	m := &Manager{t: t, done: make(chan struct{})}
	m.probes, m.metrics, m.timeline = freeAddr(t), freeAddr(t), freeAddr(t)
	m.logPath = filepath.Join(t.TempDir(), "kick-manager.log")
	logFile, err := os.Create(m.logPath)
	if err != nil {
		t.Fatal(err)
	}
	full := append([]string{
		"--kubeconfig", e.Cluster.Kubeconfig,
		"--namespace", namespace,
		"--health-probe-bind-address", m.probes,
		"--metrics-bind-address", m.metrics,
		// A port of its own: several managers may run at once.
		"--timeline-bind-address", m.timeline,
		"--zap-log-level", "debug",
		// Test receivers listen on loopback, which webhooks may not reach by default.
		"--webhook-allow-cidrs", "127.0.0.0/8",
	}, args...)
	m.cmd = exec.Command(binary, full...)
	m.cmd.Stdout, m.cmd.Stderr = logFile, logFile
	m.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = m.cmd.Wait()
		logFile.Close()
		close(m.done)
	}()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("kick-manager log (%s):\n%s", m.logPath, controlplane.TailFile(m.logPath, 12000))
		}
		m.Kill()
		keepLog(t, m.logPath)
	})
	Eventually(t, 60*time.Second, "kick-manager to become ready", func() (bool, error) {
		select {
		case <-m.done:
			return false, fmt.Errorf("kick-manager exited:\n%s", controlplane.TailFile(m.logPath, 4000))
		default:
		}
		resp, err := http.Get("http://" + m.probes + "/readyz")
		if err != nil {
			return false, err
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, fmt.Errorf("readyz: %d", resp.StatusCode)
	})
	return m
}

// Stop sends SIGTERM and waits for the process to exit.
func (m *Manager) Stop() {
	m.signal(syscall.SIGTERM)
}

// Kill ends the process at once, as a crash would.
func (m *Manager) Kill() {
	m.signal(syscall.SIGKILL)
}

func (m *Manager) signal(sig syscall.Signal) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopped {
		return
	}
	m.stopped = true
	_ = m.cmd.Process.Signal(sig)
	select {
	case <-m.done:
	case <-time.After(30 * time.Second):
		_ = m.cmd.Process.Kill()
		<-m.done
	}
}

// Exited reports whether the process has ended, whether or not Stop or
// Kill ended it.
func (m *Manager) Exited() bool {
	select {
	case <-m.done:
		return true
	default:
		return false
	}
}

// Metrics returns the manager's /metrics text.
func (m *Manager) Metrics() (string, error) {
	resp, err := http.Get("http://" + m.metrics + "/metrics")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, err = io.Copy(&b, resp.Body)
	return b.String(), err
}

// Pid is the manager's process id (a wrapper that execs kick-manager keeps
// it).
func (m *Manager) Pid() int { return m.cmd.Process.Pid }

// MetricsAddr is the address /metrics is served on, unless the test passed
// its own --metrics-bind-address.
func (m *Manager) MetricsAddr() string { return m.metrics }

// Timeline is the address of the manager's timeline server, unless the
// test passed its own --timeline-bind-address.
func (m *Manager) Timeline() string { return m.timeline }

// Log returns the manager's log so far.
func (m *Manager) Log() string {
	data, _ := os.ReadFile(m.logPath)
	return string(data)
}

// FreeAddr returns a free 127.0.0.1 address for a test server.
func FreeAddr(t testing.TB) string { return freeAddr(t) }

// handedOut are the addresses freeAddr returned in this process. The kernel
// may give a port it just freed to the next listener on port 0, so two calls
// in a row can return the same address (a manager's probe and metrics
// servers then collide, and it exits); an address is handed out once.
var handedOut = struct {
	sync.Mutex
	addrs map[string]bool
}{addrs: map[string]bool{}}

func freeAddr(t testing.TB) string {
	t.Helper()
	handedOut.Lock()
	defer handedOut.Unlock()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		if !handedOut.addrs[addr] {
			handedOut.addrs[addr] = true
			return addr
		}
	}
	t.Fatal("no free 127.0.0.1 port that was not handed out before")
	return ""
}

// keepLog copies a failed test's whole manager log into $KICK_TEST_LOG_DIR
// (when set): the test output shows only its tail, and the temporary
// directory holding it is removed with the test.
func keepLog(t testing.TB, path string) {
	dir := os.Getenv("KICK_TEST_LOG_DIR")
	if dir == "" || !t.Failed() {
		return
	}
	data, err := os.ReadFile(path)
	if err == nil {
		err = os.MkdirAll(dir, 0o755)
	}
	if err == nil {
		name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
		dst := filepath.Join(dir, fmt.Sprintf("%s-%d-kick-manager.log", name, time.Now().UnixNano()))
		if err = os.WriteFile(dst, data, 0o644); err == nil {
			t.Logf("whole kick-manager log kept in %s", dst)
		}
	}
	if err != nil {
		t.Logf("could not keep the kick-manager log: %v", err)
	}
}
