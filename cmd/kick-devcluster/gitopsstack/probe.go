package gitopsstack

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kick-operator/kick/cmd/kick-devcluster/controlplane"
)

// Kinds the stack reads and writes without importing their Go types.
var (
	applicationGVK   = schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "Application"}
	kustomizationGVK = schema.GroupVersionKind{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Kind: "Kustomization"}
	rolloutGVK       = schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "Rollout"}
	gitRepositoryGVK = schema.GroupVersionKind{Group: "source.toolkit.fluxcd.io", Version: "v1", Kind: "GitRepository"}
	configMapGVK     = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	namespaceGVK     = schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}
)

const (
	probeRepo      = "kick-devcluster-probe"
	probeNamespace = "kick-gitops-probe"
)

// probeObjects are the Application and the GitRepository with its
// Kustomization that prove the controllers sync from the git server.
const probeArgo = `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: probe, namespace: %[1]s}
spec:
  project: default
  source: {repoURL: %[2]s, path: argo, targetRevision: main}
  destination: {server: https://kubernetes.default.svc, namespace: %[3]s}
  syncPolicy: {automated: {}}
`

const probeFlux = `
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: probe, namespace: %[1]s}
spec: {url: %[2]s, ref: {branch: main}, interval: 1m}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: probe, namespace: %[1]s}
spec:
  sourceRef: {kind: GitRepository, name: probe}
  path: ./flux
  prune: true
  interval: 1m
  targetNamespace: %[3]s
`

func probeConfigMap(name string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s}\ndata: {synced: \"yes\"}\n", name)
}

// probe proves every chosen controller works (see probeGit and
// probeRollouts) in a namespace it removes afterwards.
func (s *Stack) probe(ctx context.Context) error {
	if err := s.Apply(ctx, fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n", probeNamespace)); err != nil {
		return err
	}
	if s.opts.Argo || s.opts.Flux {
		if err := s.probeGit(ctx); err != nil {
			return err
		}
	}
	if s.opts.Rollouts {
		if err := s.probeRollouts(ctx); err != nil {
			return err
		}
	}
	return s.apply.remove(ctx, namespaceGVK, "", probeNamespace)
}

// probeGit commits a ConfigMap for each GitOps tool, has an Application
// and a Kustomization sync it, waits until both report success and the
// ConfigMaps exist, then removes the Application and the Kustomization.
func (s *Stack) probeGit(ctx context.Context) error {
	s.progress("probing: an Application and a Kustomization sync from %s", s.Git.RepoURL(probeRepo))
	if err := s.Git.Create(probeRepo); err != nil {
		return err
	}
	if _, err := s.Git.Commit(probeRepo, "probe", map[string]string{
		"argo/cm.yaml": probeConfigMap("argo-probe"),
		"flux/cm.yaml": probeConfigMap("flux-probe"),
	}); err != nil {
		return err
	}
	url := s.Git.RepoURL(probeRepo)
	type check struct {
		what string
		obj  schema.GroupVersionKind
		ns   string
		ok   func(*unstructured.Unstructured) bool
	}
	var checks []check
	if s.opts.Argo {
		if err := s.Apply(ctx, fmt.Sprintf(probeArgo, s.ArgoNamespace, url, probeNamespace)); err != nil {
			return err
		}
		checks = append(checks, check{"the probe Application to be Synced", applicationGVK, s.ArgoNamespace, func(u *unstructured.Unstructured) bool {
			sync, _, _ := unstructured.NestedString(u.Object, "status", "sync", "status")
			phase, _, _ := unstructured.NestedString(u.Object, "status", "operationState", "phase")
			return sync == "Synced" && phase == "Succeeded"
		}})
	}
	if s.opts.Flux {
		if err := s.Apply(ctx, fmt.Sprintf(probeFlux, s.FluxNamespace, url, probeNamespace)); err != nil {
			return err
		}
		checks = append(checks, check{"the probe Kustomization to be Ready", kustomizationGVK, s.FluxNamespace, Ready})
	}
	for _, c := range checks {
		var last *unstructured.Unstructured
		err := controlplane.WaitFor(ctx, 3*time.Minute, nil, c.what, func() (bool, error) {
			if err := s.exited(); err != nil {
				return false, err
			}
			u, err := s.apply.get(ctx, c.obj, c.ns, "probe")
			if err != nil {
				return false, nil
			}
			last = u
			return c.ok(u), nil
		})
		if err != nil {
			if last != nil {
				status, _, _ := unstructured.NestedFieldNoCopy(last.Object, "status")
				err = fmt.Errorf("%w; last status: %v", err, status)
			}
			return err
		}
	}
	for _, cm := range []string{"argo-probe", "flux-probe"} {
		if (cm == "argo-probe" && !s.opts.Argo) || (cm == "flux-probe" && !s.opts.Flux) {
			continue
		}
		if _, err := s.apply.get(ctx, configMapGVK, probeNamespace, cm); err != nil {
			return fmt.Errorf("the probe synced, but ConfigMap %s/%s is missing: %w", probeNamespace, cm, err)
		}
	}
	// Removed in this order, the Kustomization prunes its ConfigMap and
	// the namespace takes the Application's.
	for _, o := range []struct {
		gvk schema.GroupVersionKind
		ns  string
	}{{applicationGVK, s.ArgoNamespace}, {kustomizationGVK, s.FluxNamespace}, {gitRepositoryGVK, s.FluxNamespace}} {
		if (o.gvk == applicationGVK && !s.opts.Argo) || (o.gvk != applicationGVK && !s.opts.Flux) {
			continue
		}
		if err := s.apply.remove(ctx, o.gvk, o.ns, "probe"); err != nil {
			return err
		}
	}
	return nil
}

// Ready reports whether a Flux object's Ready condition is True for its
// current generation.
func Ready(u *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] != "Ready" {
			continue
		}
		gen, _ := m["observedGeneration"].(int64)
		return m["status"] == "True" && gen == u.GetGeneration()
	}
	return false
}

func isNotFound(err error) bool { return apierrors.IsNotFound(err) }
