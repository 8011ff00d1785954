package gitopsstack

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/kick-operator/kick/cmd/kick-devcluster/controlplane"
)

// startFlux installs source-controller's CRDs (the Kustomization CRD comes
// with the control plane's upstream CRDs) and runs source-controller and
// kustomize-controller, every listener on 127.0.0.1.
func (s *Stack) startFlux(ctx context.Context) error {
	if err := s.Apply(ctx, fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n", s.FluxNamespace)); err != nil {
		return err
	}
	s.progress("installing source-controller's CRDs")
	if err := controlplane.InstallCRDs(ctx, s.cluster.Config, filepath.Join(s.opts.BinDir, "crds")); err != nil {
		return err
	}
	if _, err := s.apply.get(ctx, kustomizationGVK, s.FluxNamespace, "none"); err != nil && !isNotFound(err) {
		return fmt.Errorf("the Kustomization CRD is not installed (start the control plane with the upstream CRDs): %w", err)
	}
	p, err := ports(5)
	if err != nil {
		return err
	}
	storage, scMetrics, scHealth, kcMetrics, kcHealth := p[0], p[1], p[2], p[3], p[4]
	storageDir := filepath.Join(s.dir, "source-storage")
	if err := mkdirs(storageDir); err != nil { // source-controller wants it to exist
		return err
	}
	env := []string{"RUNTIME_NAMESPACE=" + s.FluxNamespace}
	common := []string{"--enable-leader-election=false", "--watch-all-namespaces=true", "--log-encoding=console", "--log-level=info", "--events-addr="}

	s.progress("starting source-controller (artifacts on %s)", addr(storage))
	sc, err := s.start("source-controller", "source-controller", env, append([]string{
		"--storage-addr=" + addr(storage), "--storage-adv-addr=" + addr(storage),
		"--storage-path=" + storageDir,
		"--metrics-addr=" + addr(scMetrics), "--health-addr=" + addr(scHealth),
		"--concurrent=4", "--requeue-dependency=2s",
	}, common...)...)
	if err != nil {
		return err
	}
	if err := waitHTTP(ctx, sc, "http://"+addr(scHealth)+"/readyz"); err != nil {
		return err
	}

	s.progress("starting kustomize-controller")
	kc, err := s.start("kustomize-controller", "kustomize-controller", env, append([]string{
		"--metrics-addr=" + addr(kcMetrics), "--health-addr=" + addr(kcHealth),
		"--concurrent=4", "--requeue-dependency=2s", "--no-remote-bases=true",
	}, common...)...)
	if err != nil {
		return err
	}
	if err := waitHTTP(ctx, kc, "http://"+addr(kcHealth)+"/readyz"); err != nil {
		return err
	}
	if s.opts.HelmController == "" {
		return nil
	}
	return s.startHelmController(ctx, env, common)
}
