// Package gitopsstack runs the real GitOps controllers next to the local
// control plane: a loopback git server, redis, Argo CD's repo-server and
// application controller, Flux's source- and kustomize-controller, the Argo
// Rollouts controller, with the installs they need, and proves an
// Application and a Kustomization sync and a Rollout becomes Healthy.
package gitopsstack

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/kick-operator/kick/cmd/kick-devcluster/controlplane"
	"github.com/kick-operator/kick/cmd/kick-devcluster/gitserver"
)

// Default namespaces of the installs, as upstream's manifests name them.
const (
	DefaultArgoNamespace = "argocd"
	DefaultFluxNamespace = "flux-system"
	// DefaultRolloutsNamespace is where the Rollouts controller looks for
	// its settings.
	DefaultRolloutsNamespace = "argo-rollouts"
)

// Options configure Start.
type Options struct {
	// BinDir holds argocd (with its argocd-application-controller and
	// argocd-repo-server links), source-controller, kustomize-controller
	// and crds/, argo-rollouts and argo-rollouts-crds/ (make
	// gitops-controllers: bin/gitops).
	BinDir string
	// Argo, Flux and Rollouts choose the controllers to run.
	Argo, Flux, Rollouts bool
	// HelmController, with Flux, is the path of a helm-controller binary
	// to run as well. The module proxy does not serve helm-controller, so
	// it is not in BinDir: hack/gitops/build-helm-controller.sh builds it
	// from a fetched checkout. Empty runs no helm-controller.
	HelmController string
	// ArgoNamespace, FluxNamespace and RolloutsNamespace default to
	// argocd, flux-system and argo-rollouts.
	ArgoNamespace, FluxNamespace, RolloutsNamespace string
	// AppResync is Argo CD's --app-resync (how often it compares every
	// Application with Git); default 10s, so a commit shows quickly.
	AppResync time.Duration
	// Progress receives one line per start-up step; nil discards them.
	Progress io.Writer
}

// Stack is the running GitOps controllers.
type Stack struct {
	// Git is the git server every repository of the tests lives on.
	Git *gitserver.Server
	// ArgoNamespace and FluxNamespace are where the controllers are
	// installed (Applications and AppProjects live in ArgoNamespace);
	// RolloutsNamespace is the Rollouts controller's.
	ArgoNamespace, FluxNamespace, RolloutsNamespace string

	opts    Options
	cluster *controlplane.Cluster
	dir     string
	logDir  string
	procs   []*controlplane.Process
	apply   *applier
	stopped bool
}

// Start runs the controllers against c and returns once an Application and
// a Kustomization synced from the git server and a Rollout became Healthy
// (as chosen). On error everything started so far is stopped.
func Start(ctx context.Context, c *controlplane.Cluster, opts Options) (_ *Stack, err error) {
	if !opts.Any() {
		return nil, errors.New("no GitOps controller chosen")
	}
	if opts.ArgoNamespace == "" {
		opts.ArgoNamespace = DefaultArgoNamespace
	}
	if opts.FluxNamespace == "" {
		opts.FluxNamespace = DefaultFluxNamespace
	}
	if opts.RolloutsNamespace == "" {
		opts.RolloutsNamespace = DefaultRolloutsNamespace
	}
	// Absolute: it goes on $PATH, and the components run in other
	// directories.
	abs, err := filepath.Abs(opts.BinDir)
	if err != nil {
		return nil, err
	}
	opts.BinDir = abs
	if opts.AppResync <= 0 {
		opts.AppResync = 10 * time.Second
	}
	var need []string
	if opts.Argo {
		need = append(need, "argocd", "argocd-application-controller", "argocd-repo-server")
	}
	if opts.Flux {
		need = append(need, "source-controller", "kustomize-controller", "crds")
	}
	if opts.Rollouts {
		need = append(need, "argo-rollouts", RolloutsCRDs)
	}
	if opts.Flux && opts.HelmController != "" {
		if opts.HelmController, err = helmControllerPath(opts.HelmController); err != nil {
			return nil, err
		}
	}
	for _, f := range need {
		if _, err := os.Stat(filepath.Join(opts.BinDir, f)); err != nil {
			return nil, fmt.Errorf("missing %s in %s: run `make gitops-controllers` to build the GitOps controllers", f, opts.BinDir)
		}
	}
	s := &Stack{opts: opts, cluster: c, dir: filepath.Join(c.Dir, "gitops"), logDir: c.LogDir(),
		ArgoNamespace: opts.ArgoNamespace, FluxNamespace: opts.FluxNamespace, RolloutsNamespace: opts.RolloutsNamespace}
	if err := os.RemoveAll(s.dir); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			if tails := s.LogTails(3000); tails != "" {
				err = fmt.Errorf("%w\n%s", err, tails)
			}
			s.Stop()
		}
	}()
	if s.apply, err = newApplier(c.Config); err != nil {
		return nil, err
	}
	if s.Git, err = gitserver.Start(filepath.Join(s.dir, "git")); err != nil {
		return nil, err
	}
	s.progress("git server on %s", s.Git.URL)
	if opts.Argo {
		if err := s.startArgo(ctx); err != nil {
			return nil, fmt.Errorf("start argo cd: %w", err)
		}
	}
	if opts.Flux {
		if err := s.startFlux(ctx); err != nil {
			return nil, fmt.Errorf("start flux: %w", err)
		}
	}
	if opts.Rollouts {
		if err := s.startRollouts(ctx); err != nil {
			return nil, fmt.Errorf("start argo rollouts: %w", err)
		}
	}
	if err := s.probe(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Stack) progress(format string, args ...any) {
	if s.opts.Progress != nil {
		fmt.Fprintf(s.opts.Progress, format+"\n", args...)
	}
}

// Any reports whether the options choose a controller.
func (o Options) Any() bool { return o.Argo || o.Flux || o.Rollouts }

// Runs reports whether the stack runs tool: "argocd", "flux" or "rollouts".
func (s *Stack) Runs(tool string) bool {
	return (tool == "argocd" && s.opts.Argo) || (tool == "flux" && s.opts.Flux) || (tool == "rollouts" && s.opts.Rollouts) ||
		(tool == "helm" && s.opts.Flux && s.opts.HelmController != "")
}

// Apply creates, or replaces, every object of a multi-document YAML
// manifest.
func (s *Stack) Apply(ctx context.Context, manifest string) error {
	return s.apply.apply(ctx, manifest)
}

// start runs one controller binary (of BinDir unless the path is
// absolute) with its environment.
func (s *Stack) start(name, binary string, env []string, args ...string) (*controlplane.Process, error) {
	home := filepath.Join(s.dir, "home", name)
	tmp := filepath.Join(s.dir, "tmp", name)
	for _, d := range []string{home, tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	env = append([]string{"HOME=" + home, "TMPDIR=" + tmp, "KUBECONFIG=" + s.cluster.Kubeconfig}, env...)
	if !filepath.IsAbs(binary) {
		binary = filepath.Join(s.opts.BinDir, binary)
	}
	p, err := controlplane.StartProcess(name, binary, args, env, s.logDir)
	if err != nil {
		return nil, err
	}
	s.procs = append(s.procs, p)
	return p, nil
}

// exited returns an error naming a controller that exited.
func (s *Stack) exited() error {
	for _, p := range s.procs {
		if done, err := p.Exited(); done {
			return fmt.Errorf("%s exited: %v", p.Name(), err)
		}
	}
	return nil
}

// LogTails returns the last n bytes of every controller's log.
func (s *Stack) LogTails(n int64) string {
	var b strings.Builder
	for _, p := range s.procs {
		fmt.Fprintf(&b, "----- %s (%s) -----\n%s\n", p.Name(), p.LogPath(), p.Tail(n))
	}
	return b.String()
}

// Stop ends the controllers in reverse start order and the git server.
func (s *Stack) Stop() {
	if s == nil || s.stopped {
		return
	}
	s.stopped = true
	for i := len(s.procs) - 1; i >= 0; i-- {
		s.procs[i].Stop(5 * time.Second)
	}
	if s.Git != nil {
		_ = s.Git.Close()
	}
}

// ports picks free 127.0.0.1 ports.
func ports(n int) ([]int, error) {
	out := make([]int, n)
	for i := range out {
		p, err := controlplane.FreePort()
		if err != nil {
			return nil, err
		}
		out[i] = p
	}
	return out, nil
}

func addr(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }

// waitHTTP waits until GET url answers 200.
func waitHTTP(ctx context.Context, p *controlplane.Process, url string) error {
	return controlplane.WaitFor(ctx, 90*time.Second, p, p.Name()+" to answer "+url, func() (bool, error) {
		resp, err := http.Get(url)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
}

// waitTCP waits until something accepts connections on port.
func waitTCP(ctx context.Context, p *controlplane.Process, port int) error {
	return controlplane.WaitFor(ctx, 60*time.Second, p, fmt.Sprintf("%s to listen on %d", p.Name(), port), func() (bool, error) {
		conn, err := net.DialTimeout("tcp", addr(port), time.Second)
		if err != nil {
			return false, nil
		}
		conn.Close()
		return true, nil
	})
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// startSystem runs a command found on $PATH (redis-server).
func (s *Stack) startSystem(name, command string, args ...string) (*controlplane.Process, error) {
	path, err := exec.LookPath(command)
	if err != nil {
		return nil, fmt.Errorf("%s is not installed (Debian: apt-get install -y redis-server): %w", command, err)
	}
	p, err := controlplane.StartProcess(name, path, args, nil, s.logDir)
	if err != nil {
		return nil, err
	}
	s.procs = append(s.procs, p)
	return p, nil
}

func mkdirs(dirs ...string) error {
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	return nil
}
