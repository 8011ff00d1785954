// Command kick-devcluster runs the local Kubernetes control plane (etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler and kwok nodes) on
// 127.0.0.1 for the demo, tests and benchmarks, until SIGINT or SIGTERM.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/kick-operator/kick/cmd/kick-devcluster/controlplane"
	"github.com/kick-operator/kick/cmd/kick-devcluster/gitopsstack"
)

const usage = `kick-devcluster runs a local Kubernetes control plane on 127.0.0.1.

Usage:
  kick-devcluster up --dir DIR [--nodes N] [--crds upstream] [--kick-crds DIR] [--bin-dir DIR]
                     [--gitops argocd,flux,rollouts] [--gitops-bin-dir DIR]
  kick-devcluster receive [--port 18090]   (a CloudEvents receiver that prints what it gets)

It writes DIR/kubeconfig, prints a line starting with "ready" once a
Deployment can become Available, and runs until SIGINT or SIGTERM, then stops
every process it started. Build the binaries first with "make control-plane".

--gitops also runs the real Argo CD application controller and repo-server
(with redis), Flux's source- and kustomize-controller, and a git server on
127.0.0.1 (build them with "make gitops-controllers"); "ready" then also
means an Application and a Kustomization synced from that git server.
"rollouts" runs the Argo Rollouts controller; "ready" then also means a
Rollout became Healthy.
`

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	if len(args) > 0 && args[0] == "receive" {
		return receive(args[1:])
	}
	if len(args) == 0 || args[0] != "up" {
		fmt.Fprint(os.Stderr, usage)
		return 2
	}
	fs := flag.NewFlagSet("up", flag.ContinueOnError)
	dir := fs.String("dir", "", "directory for the kubeconfig, certificates, etcd data and logs (required)")
	nodes := fs.Int("nodes", 1, "number of kwok nodes")
	crds := fs.String("crds", "", `"upstream" also installs the Argo CD, Flux, Argo Rollouts, Kargo and Secrets Store CSI CRDs`)
	kickCRDs := fs.String("kick-crds", "", "directory of KICK's CRDs to install (e.g. deploy/crds)")
	binDir := fs.String("bin-dir", defaultBinDir(), "directory holding the control-plane binaries (make control-plane)")
	apiPort := fs.Int("apiserver-port", 0, "kube-apiserver port (0: pick a free one)")
	etcdPort := fs.Int("etcd-port", 0, "etcd client port (0: pick a free one)")
	gitops := fs.String("gitops", "", `comma-separated GitOps controllers to run: "argocd", "flux", "rollouts" (Argo Rollouts; implies --crds upstream)`)
	gitopsBin := fs.String("gitops-bin-dir", "", "directory holding the GitOps controllers (make gitops-controllers; default: bin/gitops next to this executable)")
	timeout := fs.Duration("timeout", 5*time.Minute, "how long start-up may take")
	fs.Usage = func() { fmt.Fprint(os.Stderr, usage); fs.PrintDefaults() }
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "kick-devcluster: --dir is required")
		return 2
	}
	if *crds != "" && *crds != "upstream" {
		fmt.Fprintf(os.Stderr, "kick-devcluster: --crds accepts only \"upstream\", not %q\n", *crds)
		return 2
	}
	var stackOpts gitopsstack.Options
	for _, g := range strings.Split(*gitops, ",") {
		switch strings.TrimSpace(g) {
		case "":
		case "argocd":
			stackOpts.Argo = true
		case "flux":
			stackOpts.Flux = true
		case "rollouts":
			stackOpts.Rollouts = true
		default:
			fmt.Fprintf(os.Stderr, "kick-devcluster: --gitops accepts argocd, flux and rollouts, not %q\n", g)
			return 2
		}
	}
	if stackOpts.Any() {
		*crds = "upstream"
		stackOpts.BinDir = *gitopsBin
		if stackOpts.BinDir == "" {
			stackOpts.BinDir = filepath.Join(filepath.Dir(*binDir), "gitops")
		}
		stackOpts.Progress = prefixWriter{}
	}
	opts := controlplane.Options{
		Dir:           *dir,
		BinDir:        *binDir,
		Nodes:         *nodes,
		UpstreamCRDs:  *crds == "upstream",
		APIServerPort: *apiPort,
		EtcdPort:      *etcdPort,
		Progress:      prefixWriter{},
	}
	if *kickCRDs != "" {
		opts.CRDDirs = []string{*kickCRDs}
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	startCtx, cancel := context.WithTimeout(ctx, *timeout)
	started := time.Now()
	c, err := controlplane.Start(startCtx, opts)
	var stack *gitopsstack.Stack
	if err == nil && stackOpts.Any() {
		if stack, err = gitopsstack.Start(startCtx, c, stackOpts); err != nil {
			c.Stop()
		}
	}
	cancel()
	if err != nil {
		if errors.Is(err, context.Canceled) {
			fmt.Fprintln(os.Stderr, "kick-devcluster: interrupted during start-up; stopped")
		} else {
			fmt.Fprintln(os.Stderr, "kick-devcluster:", err)
		}
		return 1
	}
	if stack != nil {
		line := fmt.Sprintf("gitops: git server %s (repositories in %s)", stack.Git.URL, stack.Git.Root)
		for _, t := range []struct{ tool, name, ns string }{
			{"argocd", "Argo CD", stack.ArgoNamespace}, {"flux", "Flux", stack.FluxNamespace}, {"rollouts", "Argo Rollouts", stack.RolloutsNamespace},
		} {
			if stack.Runs(t.tool) {
				line += fmt.Sprintf(", %s in namespace %s", t.name, t.ns)
			}
		}
		fmt.Println(line)
	}
	fmt.Printf("ready in %s: export KUBECONFIG=%s  (logs in %s)\n", time.Since(started).Round(time.Millisecond), c.Kubeconfig, c.LogDir())
	<-ctx.Done()
	fmt.Fprintln(os.Stderr, "kick-devcluster: stopping")
	stack.Stop()
	c.Stop()
	fmt.Fprintln(os.Stderr, "kick-devcluster: stopped")
	return 0
}

// defaultBinDir is bin/k8s next to this executable (bin/kick-devcluster).
func defaultBinDir() string {
	exe, err := os.Executable()
	if err != nil {
		return filepath.Join("bin", "k8s")
	}
	return filepath.Join(filepath.Dir(exe), "k8s")
}

type prefixWriter struct{}

func (prefixWriter) Write(p []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		fmt.Fprintln(os.Stderr, "kick-devcluster:", line)
	}
	return len(p), nil
}
