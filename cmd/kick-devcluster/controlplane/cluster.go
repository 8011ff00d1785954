// Package controlplane starts and stops the local Kubernetes control plane that
// kick-devcluster ships (etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler and kwok nodes on 127.0.0.1, with throw-away certificates and
// optional CRDs); the demo, the benchmark and the integration harness use it.
package controlplane

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// serviceIP is the first address of the service range; the serving
// certificate names it so in-cluster clients could verify the API server.
const serviceIP = "10.96.0.1"

// Options configure Start.
type Options struct {
	// Dir holds certificates, etcd data, the kubeconfig and component logs.
	// Empty: a new temporary directory that Stop removes.
	Dir string
	// BinDir contains etcd, kube-apiserver, kube-controller-manager,
	// kube-scheduler, kwok and kwok-stages.yaml (see `make control-plane`).
	BinDir string
	// Nodes is the number of kwok nodes (default 1).
	Nodes int
	// UpstreamCRDs installs the CRD files found in BinDir/crds (Argo CD,
	// Flux, Argo Rollouts, Kargo, Secrets Store CSI).
	UpstreamCRDs bool
	// CRDDirs are further directories of CRD YAML to install (KICK's own).
	CRDDirs []string
	// APIServerFlags are added to kube-apiserver's command line, e.g.
	// --admission-control-config-file.
	APIServerFlags []string
	// PriorityAndFairness runs kube-apiserver with API Priority and
	// Fairness, as every real cluster does. Off by default: the suites
	// and the demo all talk as the exempt admin, for whom it only costs
	// CPU; the hostile-tenant soak turns it on to separate its tenants.
	PriorityAndFairness bool
	// APIServerPort and EtcdPort pin ports; 0 picks free ones.
	APIServerPort, EtcdPort int
	// Progress receives one line per start-up step; nil discards them.
	Progress io.Writer
}

// Cluster is a running local control plane.
type Cluster struct {
	Dir        string
	Kubeconfig string
	Config     *rest.Config

	opts     Options
	ownDir   bool
	procs    []*Process
	ports    map[string]int
	logDir   string
	stopOnce bool
}

// Binaries that must exist in Options.BinDir.
var requiredFiles = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", "kwok-stages.yaml"}

// Start brings the control plane up and returns once a Deployment can become
// Available on a kwok node. On error everything started so far is stopped.
func Start(ctx context.Context, opts Options) (_ *Cluster, err error) {
	if opts.Nodes <= 0 {
		opts.Nodes = 1
	}
	if opts.BinDir == "" {
		return nil, errors.New("no binary directory given; run `make control-plane` and pass bin/k8s")
	}
	for _, f := range requiredFiles {
		if _, err := os.Stat(filepath.Join(opts.BinDir, f)); err != nil {
			return nil, fmt.Errorf("missing %s in %s: run `make control-plane` to build the local control plane", f, opts.BinDir)
		}
	}
	if opts.UpstreamCRDs {
		if _, err := os.Stat(filepath.Join(opts.BinDir, "crds")); err != nil {
			return nil, fmt.Errorf("missing upstream CRDs in %s/crds: run `make control-plane`", opts.BinDir)
		}
	}
	c := &Cluster{opts: opts, ports: map[string]int{}}
	if opts.Dir == "" {
		if c.Dir, err = os.MkdirTemp("", "kick-devcluster-"); err != nil {
			return nil, err
		}
		c.ownDir = true
	} else {
		c.Dir = opts.Dir
		if err := os.MkdirAll(c.Dir, 0o755); err != nil {
			return nil, err
		}
		// A previous run's state would confuse etcd and the certificates.
		for _, sub := range []string{"etcd", "pki", "logs"} {
			if err := os.RemoveAll(filepath.Join(c.Dir, sub)); err != nil {
				return nil, err
			}
		}
	}
	c.logDir = filepath.Join(c.Dir, "logs")
	if err := os.MkdirAll(c.logDir, 0o755); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			if tails := c.LogTails(3000); tails != "" {
				err = fmt.Errorf("%w\n%s", err, tails)
			}
			c.Stop()
		}
	}()

	if err := c.allocatePorts(); err != nil {
		return nil, err
	}
	if err := c.writePorts(); err != nil {
		return nil, err
	}
	p, err := writePKI(filepath.Join(c.Dir, "pki"))
	if err != nil {
		return nil, fmt.Errorf("certificates: %w", err)
	}
	if err := c.writeKubeconfig(p); err != nil {
		return nil, err
	}

	c.progress("starting etcd on 127.0.0.1:%d", c.ports["etcd"])
	if err := c.startEtcd(ctx); err != nil {
		return nil, err
	}
	c.progress("starting kube-apiserver on https://127.0.0.1:%d", c.ports["kube-apiserver"])
	if err := c.startAPIServer(ctx, p); err != nil {
		return nil, err
	}
	c.progress("starting kube-controller-manager, kube-scheduler and kwok")
	if err := c.startControllers(p); err != nil {
		return nil, err
	}
	if err := c.bootstrap(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Cluster) progress(format string, args ...any) {
	if c.opts.Progress != nil {
		fmt.Fprintf(c.opts.Progress, format+"\n", args...)
	}
}

func (c *Cluster) allocatePorts() error {
	pinned := map[string]int{"etcd": c.opts.EtcdPort, "kube-apiserver": c.opts.APIServerPort}
	for _, name := range []string{"etcd", "etcd-peer", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"} {
		if port := pinned[name]; port != 0 {
			if err := checkPortFree(port, name); err != nil {
				return err
			}
			c.ports[name] = port
			continue
		}
		port, err := c.unassignedPort(FreePort)
		if err != nil {
			return fmt.Errorf("no free port for %s: %w", name, err)
		}
		c.ports[name] = port
	}
	return nil
}

// unassignedPort returns a free port no other component of the cluster was
// given: a port FreePort returned is free only until something binds it,
// and none of the components has started yet, so the kernel can hand the
// same one out twice (etcd and kube-apiserver once got the same port).
func (c *Cluster) unassignedPort(free func() (int, error)) (int, error) {
	for range 20 {
		port, err := free()
		if err != nil {
			return 0, err
		}
		if !slices.Contains(slices.Collect(maps.Values(c.ports)), port) {
			return port, nil
		}
	}
	return 0, errors.New("the kernel kept handing out ports already assigned")
}

// writePorts records the ports in Dir/ports.json so other tools (and the
// tests that check nothing is left listening) can find them.
func (c *Cluster) writePorts() error {
	data, err := json.MarshalIndent(c.ports, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(c.Dir, "ports.json"), data, 0o644)
}

// Ports lists the TCP ports the components listen on, by component name.
func (c *Cluster) Ports() map[string]int {
	out := make(map[string]int, len(c.ports))
	for k, v := range c.ports {
		out[k] = v
	}
	return out
}

func (c *Cluster) writeKubeconfig(p *pki) error {
	server := "https://127.0.0.1:" + strconv.Itoa(c.ports["kube-apiserver"])
	caData, err := os.ReadFile(p.CACert)
	if err != nil {
		return err
	}
	certData, err := os.ReadFile(p.AdminCert)
	if err != nil {
		return err
	}
	keyData, err := os.ReadFile(p.AdminKey)
	if err != nil {
		return err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["kick-dev"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caData}
	cfg.AuthInfos["kick-dev-admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: certData, ClientKeyData: keyData}
	cfg.Contexts["kick-dev"] = &clientcmdapi.Context{Cluster: "kick-dev", AuthInfo: "kick-dev-admin", Namespace: "default"}
	cfg.CurrentContext = "kick-dev"
	c.Kubeconfig = filepath.Join(c.Dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, c.Kubeconfig); err != nil {
		return err
	}
	rc, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		return err
	}
	rc.QPS, rc.Burst = -1, 0 // no client-side throttling in tests
	c.Config = rc
	return nil
}

func (c *Cluster) bin(name string) string { return filepath.Join(c.opts.BinDir, name) }

func (c *Cluster) start(name string, args ...string) (*Process, error) {
	p, err := StartProcess(name, c.bin(name), args, nil, c.logDir)
	if err != nil {
		return nil, err
	}
	c.procs = append(c.procs, p)
	return p, nil
}

func (c *Cluster) startEtcd(ctx context.Context) error {
	client := "http://127.0.0.1:" + strconv.Itoa(c.ports["etcd"])
	peer := "http://127.0.0.1:" + strconv.Itoa(c.ports["etcd-peer"])
	p, err := c.start("etcd",
		"--name=devcluster",
		"--data-dir="+filepath.Join(c.Dir, "etcd"),
		"--listen-client-urls="+client, "--advertise-client-urls="+client,
		"--listen-peer-urls="+peer, "--initial-advertise-peer-urls="+peer,
		"--initial-cluster=devcluster="+peer,
		"--unsafe-no-fsync=true", // throw-away data: durability is not needed
		"--log-level=warn",
	)
	if err != nil {
		return err
	}
	return c.waitReady(ctx, p)
}

// waitReady waits until a component that was just started serves: etcd
// reports healthy, kube-apiserver is ready. Other components have no check.
func (c *Cluster) waitReady(ctx context.Context, p *Process) error {
	switch p.name {
	case "etcd":
		return WaitFor(ctx, 60*time.Second, p, "etcd to report healthy", c.etcdHealthy)
	case "kube-apiserver":
		rc, err := rest.HTTPClientFor(c.Config)
		if err != nil {
			return err
		}
		return WaitFor(ctx, 120*time.Second, p, "kube-apiserver /readyz", func() (bool, error) {
			resp, err := rc.Get(c.Config.Host + "/readyz")
			if err != nil {
				return false, nil
			}
			defer resp.Body.Close()
			_, _ = io.Copy(io.Discard, resp.Body)
			return resp.StatusCode == http.StatusOK, nil
		})
	}
	return nil
}

func (c *Cluster) etcdHealthy() (bool, error) {
	resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(c.ports["etcd"]) + "/health")
	if err != nil {
		return false, nil
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode == http.StatusOK && strings.Contains(string(body), `"health":"true"`), nil
}

func (c *Cluster) startAPIServer(ctx context.Context, p *pki) error {
	proc, err := c.start("kube-apiserver", c.withAPIServerFlags(
		"--etcd-servers=http://127.0.0.1:"+strconv.Itoa(c.ports["etcd"]),
		"--bind-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(c.ports["kube-apiserver"]),
		"--advertise-address=127.0.0.1",
		// A loopback advertise address is refused unless the endpoint
		// reconciler is off; nothing reaches the API server through the
		// kubernetes Service here anyway.
		"--endpoint-reconciler-type=none",
		"--cert-dir="+filepath.Join(c.Dir, "pki", "apiserver"),
		"--tls-cert-file="+p.ServingCert,
		"--tls-private-key-file="+p.ServingK,
		"--client-ca-file="+p.CACert,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+p.SAPub,
		"--service-account-signing-key-file="+p.SAKey,
		"--service-cluster-ip-range=10.96.0.0/24",
		"--authorization-mode=RBAC",
		"--allow-privileged=true",
		"--enable-priority-and-fairness="+strconv.FormatBool(c.opts.PriorityAndFairness),
		"--profiling=false",
		"--v=1",
	)...)
	if err != nil {
		return err
	}
	return c.waitReady(ctx, proc)
}

// withAPIServerFlags appends Options.APIServerFlags to args.
func (c *Cluster) withAPIServerFlags(args ...string) []string {
	return append(args, c.opts.APIServerFlags...)
}

func (c *Cluster) startControllers(p *pki) error {
	kc := "--kubeconfig=" + c.Kubeconfig
	if _, err := c.start("kube-controller-manager", kc,
		"--authentication-kubeconfig="+c.Kubeconfig,
		"--authorization-kubeconfig="+c.Kubeconfig,
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(c.ports["kube-controller-manager"]),
		"--service-account-private-key-file="+p.SAKey,
		"--root-ca-file="+p.CACert,
		"--cluster-signing-cert-file="+p.CACert,
		"--cluster-signing-key-file="+p.CAKey,
		"--use-service-account-credentials=false",
		"--kube-api-qps=500", "--kube-api-burst=1000",
		"--concurrent-deployment-syncs=20",
		"--concurrent-replicaset-syncs=20",
		"--concurrent-statefulset-syncs=10",
		"--concurrent-daemonset-syncs=10",
		"--profiling=false",
		"--v=1",
	); err != nil {
		return err
	}
	if _, err := c.start("kube-scheduler", kc,
		"--authentication-kubeconfig="+c.Kubeconfig,
		"--authorization-kubeconfig="+c.Kubeconfig,
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(c.ports["kube-scheduler"]),
		"--profiling=false",
		"--v=1",
	); err != nil {
		return err
	}
	_, err := c.start("kwok", kc,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector="+kwokNodeAnnotation+"=fake",
		"--disregard-status-with-annotation-selector=kwok.x-k8s.io/status=custom",
		"--cidr=10.244.0.0/16",
		"--node-ip=10.0.0.1",
		"--node-lease-duration-seconds=40",
		"--server-address=127.0.0.1:"+strconv.Itoa(c.ports["kwok"]),
		"--config="+c.bin("kwok-stages.yaml"),
	)
	return err
}

// WaitFor polls cond until it holds, the deadline passes, ctx ends, or the
// process dies (which is reported with its log).
func WaitFor(ctx context.Context, timeout time.Duration, p *Process, what string, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, err := cond()
		if err != nil {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		if ok {
			return nil
		}
		if p != nil {
			if done, werr := p.Exited(); done {
				return fmt.Errorf("%s exited (%v) while waiting for %s", p.name, werr, what)
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s waiting for %s", timeout, what)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-tick.C:
		}
	}
}

// LogTails returns the last n bytes of every component's log, for failure
// reports.
func (c *Cluster) LogTails(n int64) string {
	var b strings.Builder
	for _, p := range c.procs {
		fmt.Fprintf(&b, "----- %s (%s) -----\n%s\n", p.name, p.logPath, p.Tail(n))
	}
	return b.String()
}

// LogDir is where the component logs are written.
func (c *Cluster) LogDir() string { return c.logDir }

// Stop terminates the components in reverse start order (etcd last), each
// with a short grace period, and removes a temporary Dir.
func (c *Cluster) Stop() {
	if c == nil || c.stopOnce {
		return
	}
	c.stopOnce = true
	for i := len(c.procs) - 1; i >= 0; i-- {
		c.procs[i].Stop(5 * time.Second)
	}
	if c.ownDir {
		_ = os.RemoveAll(c.Dir)
	}
}
