package gitopsstack

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

var helmReleaseGVK = schema.GroupVersionKind{Group: "helm.toolkit.fluxcd.io", Version: "v2", Kind: "HelmRelease"}

// startHelmController runs Flux's helm-controller from Options.HelmController
// next to source-controller, every listener on 127.0.0.1. The HelmRelease
// CRD comes with the control plane's upstream CRDs; the HelmChart CRD with
// source-controller's.
func (s *Stack) startHelmController(ctx context.Context, env, common []string) error {
	if _, err := s.apply.get(ctx, helmReleaseGVK, s.FluxNamespace, "none"); err != nil && !isNotFound(err) {
		return fmt.Errorf("the HelmRelease CRD is not installed (start the control plane with the upstream CRDs): %w", err)
	}
	p, err := ports(2)
	if err != nil {
		return err
	}
	s.progress("starting helm-controller (%s)", s.opts.HelmController)
	hc, err := s.start("helm-controller", s.opts.HelmController, env, append([]string{
		"--metrics-addr=" + addr(p[0]), "--health-addr=" + addr(p[1]),
		"--concurrent=4", "--requeue-dependency=2s",
	}, common...)...)
	if err != nil {
		return err
	}
	return waitHTTP(ctx, hc, "http://"+addr(p[1])+"/readyz")
}

// helmControllerPath makes Options.HelmController absolute and checks it
// exists; the module proxy does not serve helm-controller, so it is built
// from a fetched checkout (hack/gitops/build-helm-controller.sh), not into
// BinDir.
func helmControllerPath(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(abs); err != nil {
		return "", fmt.Errorf("helm-controller: %w (build it with `make helm-controller HELM_CONTROLLER_SRC=<checkout>`, see docs/guides/flux.md)", err)
	}
	return abs, nil
}
