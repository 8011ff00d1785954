package gitopsstack

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kick-operator/kick/cmd/kick-devcluster/controlplane"
)

// RolloutsCRDs is the directory of BinDir holding the Rollouts controller's
// other CRDs (AnalysisRun, AnalysisTemplate, ClusterAnalysisTemplate,
// Experiment), which it watches; the Rollout CRD comes with the control
// plane's upstream CRDs.
const RolloutsCRDs = "argo-rollouts-crds"

// probeRollout is a one-replica canary Rollout; Healthy, it proves the
// controller runs its ReplicaSet and reads the pod kwok made Ready.
const probeRollout = `
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: probe, namespace: %s}
spec:
  replicas: 1
  selector: {matchLabels: {app: rollouts-probe}}
  strategy: {canary: {}}
  template:
    metadata: {labels: {app: rollouts-probe}}
    spec:
      containers: [{name: app, image: registry.k8s.io/pause:3.10}]
`

// startRollouts installs the analysis and experiment CRDs and runs the
// Rollouts controller. It needs no traffic router, service mesh or metric
// provider: a Rollout without trafficRouting or analysis scales its
// ReplicaSets by itself. Its metrics and health listeners are hard-wired
// upstream to 0.0.0.0 (like Argo CD's controller).
func (s *Stack) startRollouts(ctx context.Context) error {
	if err := s.Apply(ctx, fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n", s.RolloutsNamespace)); err != nil {
		return err
	}
	s.progress("installing the Rollouts controller's analysis and experiment CRDs")
	if err := controlplane.InstallCRDs(ctx, s.cluster.Config, filepath.Join(s.opts.BinDir, RolloutsCRDs)); err != nil {
		return err
	}
	if _, err := s.apply.get(ctx, rolloutGVK, s.RolloutsNamespace, "none"); err != nil && !isNotFound(err) {
		return fmt.Errorf("the Rollout CRD is not installed (start the control plane with the upstream CRDs): %w", err)
	}
	p, err := ports(2)
	if err != nil {
		return err
	}
	metrics, healthz := p[0], p[1]
	s.progress("starting argo-rollouts (health on port %d)", healthz)
	ctrl, err := s.start("argo-rollouts", "argo-rollouts",
		// Where it looks for its settings (argo-rollouts-config) and
		// notification ConfigMaps; neither needs to exist.
		[]string{"POD_NAMESPACE=" + s.RolloutsNamespace},
		"--kubeconfig", s.cluster.Kubeconfig,
		"--leader-elect=false",
		"--metricsPort", strconv.Itoa(metrics), "--healthzPort", strconv.Itoa(healthz),
		"--logformat", "text", "--loglevel", "info")
	if err != nil {
		return err
	}
	return waitHTTP(ctx, ctrl, "http://"+addr(healthz)+"/healthz")
}

// probeRollouts has a Rollout become Healthy, then removes it.
func (s *Stack) probeRollouts(ctx context.Context) error {
	s.progress("probing: a Rollout becomes Healthy")
	if err := s.Apply(ctx, fmt.Sprintf(probeRollout, probeNamespace)); err != nil {
		return err
	}
	var last *unstructured.Unstructured
	err := controlplane.WaitFor(ctx, 3*time.Minute, nil, "the probe Rollout to be Healthy", func() (bool, error) {
		if err := s.exited(); err != nil {
			return false, err
		}
		u, err := s.apply.get(ctx, rolloutGVK, probeNamespace, "probe")
		if err != nil {
			return false, nil
		}
		last = u
		phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
		return phase == "Healthy", nil
	})
	if err != nil {
		if last != nil {
			status, _, _ := unstructured.NestedFieldNoCopy(last.Object, "status")
			err = fmt.Errorf("%w; last status: %v", err, status)
		}
		return err
	}
	return s.apply.remove(ctx, rolloutGVK, probeNamespace, "probe")
}
