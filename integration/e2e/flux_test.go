package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	gitopsflux "github.com/kick-operator/kick/gitops/flux"
	"github.com/kick-operator/kick/integration/cluster"
)

// fluxPolicy gates every workload of the namespace on Flux.
const fluxPolicy = `{discovery: {workloadSelector: {}}, gitOps: {provider: Flux}}`

// kustomization creates, in the test namespace, GitRepository NAME for the
// test's repository and Kustomization NAME applying PATH of it to the
// test namespace.
func (s *suite) kustomization(name, path string) {
	s.T.Helper()
	repo := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "source.toolkit.fluxcd.io/v1",
		"kind":       "GitRepository",
		"metadata":   map[string]any{"name": name, "namespace": s.NS},
		"spec": map[string]any{
			"url":      s.stack.Git.RepoURL(s.repo),
			"ref":      map[string]any{"branch": "main"},
			"interval": "1m",
		},
	}}
	if err := s.Env.Client.Create(s.Ctx, repo); err != nil {
		s.T.Fatalf("create GitRepository %s: %v", name, err)
	}
	k := &kustomizev1.Kustomization{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.NS},
		Spec: kustomizev1.KustomizationSpec{
			Interval:        metav1.Duration{Duration: time.Minute},
			RetryInterval:   &metav1.Duration{Duration: 5 * time.Second},
			Path:            path,
			Prune:           true,
			TargetNamespace: s.NS,
			SourceRef:       kustomizev1.CrossNamespaceSourceReference{Kind: "GitRepository", Name: name},
		},
	}
	if err := s.Env.Client.Create(s.Ctx, k); err != nil {
		s.T.Fatalf("create Kustomization %s: %v", name, err)
	}
}

// reconcileNow asks Flux to reconcile the GitRepository (and through it
// the Kustomization) now, as `flux reconcile source git` does.
func (s *suite) reconcileNow(name string) {
	s.T.Helper()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{"reconcile.fluxcd.io/requestedAt":%q}}}`, time.Now().Format(time.RFC3339Nano))
	repo := &unstructured.Unstructured{}
	repo.SetAPIVersion("source.toolkit.fluxcd.io/v1")
	repo.SetKind("GitRepository")
	repo.SetNamespace(s.NS)
	repo.SetName(name)
	if err := s.Env.Client.Patch(s.Ctx, repo, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		s.T.Fatal(err)
	}
}

// waitKustomization waits until the Kustomization satisfies cond.
func (s *suite) waitKustomization(name, what string, cond func(*kustomizev1.Kustomization) bool) *kustomizev1.Kustomization {
	s.T.Helper()
	var k kustomizev1.Kustomization
	cluster.Eventually(s.T, 2*time.Minute, "Kustomization "+name+" "+what, func() (bool, error) {
		if err := s.Env.Client.Get(s.Ctx, client.ObjectKey{Namespace: s.NS, Name: name}, &k); err != nil {
			return false, err
		}
		return cond(&k), fmt.Errorf("generation %d, applied %q, attempted %q, conditions %+v",
			k.Generation, k.Status.LastAppliedRevision, k.Status.LastAttemptedRevision, k.Status.Conditions)
	})
	return &k
}

// readyAt reports whether the Kustomization is Ready for its current
// generation with the commit applied.
func readyAt(sha string) func(*kustomizev1.Kustomization) bool {
	return func(k *kustomizev1.Kustomization) bool {
		c := meta.FindStatusCondition(k.Status.Conditions, "Ready")
		return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == k.Generation &&
			strings.HasSuffix(k.Status.LastAppliedRevision, sha)
	}
}

// setSuspend suspends or resumes a Kustomization, as `flux suspend` does.
func (s *suite) setSuspend(name string, suspend bool) {
	s.T.Helper()
	k := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.NS}}
	patch := fmt.Sprintf(`{"spec":{"suspend":%t}}`, suspend)
	if err := s.Env.Client.Patch(s.Ctx, k, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		s.T.Fatal(err)
	}
}

// fluxDeployed runs a Kustomization that deploys Deployment web from the
// test's repository and waits until KICK has its baseline; it checks the
// owner labels and inventory entry kustomize-controller wrote.
func fluxDeployed(t *testing.T) *suite {
	s := setup(t, "flux")
	s.Policy("flux", fluxPolicy)
	s.secret("web")
	sha := s.commit("web v1", map[string]string{"apps/deployment.yaml": deployment("web", "1")})
	s.kustomization("apps", "./apps")
	k := s.waitKustomization("apps", "to be Ready at "+sha[:7], readyAt(sha))
	s.waitDeployed("web", "1")

	d := s.get("web")
	t.Logf("kustomize-controller wrote labels %v; inventory %+v", d.Labels, k.Status.Inventory)
	if d.Labels[gitopsflux.KustomizeNameLabel] != "apps" || d.Labels[gitopsflux.KustomizeNamespaceLabel] != s.NS {
		t.Fatalf("Deployment labels %v lack the Kustomization's", d.Labels)
	}
	want := s.NS + "_web_apps_Deployment"
	found := false
	if k.Status.Inventory != nil {
		for _, e := range k.Status.Inventory.Entries {
			found = found || e.ID == want
		}
	}
	if !found {
		t.Fatalf("inventory %+v lacks %s", k.Status.Inventory, want)
	}
	return s
}

// TestFluxSuspend: a Kustomization from a GitRepository deploys the
// workload; suspended, the request waits with the suspend reason; resumed,
// KICK restarts once.
func TestFluxSuspend(t *testing.T) {
	s := fluxDeployed(t)
	s.setSuspend("apps", true)
	changed := s.change("web")
	kr := s.waitGate("web", kickv1alpha1.PhaseWaitingForApplicationSync, kickv1alpha1.GateOwnerSuspended, "is suspended")
	s.owner(kr, kickv1alpha1.ProviderFlux, "Kustomization", s.NS, "apps")
	s.setSuspend("apps", false)
	s.restartedOnce("web", changed)
}

// TestFluxFailingKustomization: a bad manifest pushed to Git makes the
// Kustomization fail; a Secret change waits, and proceeds once the fix is
// pushed and applied.
func TestFluxFailingKustomization(t *testing.T) {
	s := fluxDeployed(t)
	bad := s.commit("a broken ConfigMap", map[string]string{"apps/broken.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: broken}\ndata: {key: [1, 2]}\n"})
	s.reconcileNow("apps")
	k := s.waitKustomization("apps", "to fail on "+bad[:7], func(k *kustomizev1.Kustomization) bool {
		c := meta.FindStatusCondition(k.Status.Conditions, "Ready")
		return c != nil && c.Status == metav1.ConditionFalse && strings.HasSuffix(k.Status.LastAttemptedRevision, bad)
	})
	t.Logf("kustomize-controller's conditions for the failed revision: %+v", k.Status.Conditions)

	// kustomize-controller writes Ready=False (ReconciliationFailed, the
	// dry-run error) and keeps Reconciling=True (ProgressingWithRetry):
	// KICK reports the failure.
	changed := s.change("web")
	kr := s.waitGate("web", kickv1alpha1.PhaseWaitingForApplicationSync, kickv1alpha1.GateOwnerOutOfSync, "ReconciliationFailed")
	t.Logf("KICK waits: %s: %s", kr.Status.Gate.Reason, kr.Status.Gate.Message)
	s.owner(kr, kickv1alpha1.ProviderFlux, "Kustomization", s.NS, "apps")

	fixed := s.commit("remove the broken ConfigMap", map[string]string{"apps/broken.yaml": ""})
	s.reconcileNow("apps")
	s.waitKustomization("apps", "to be Ready at the fix "+fixed[:7], readyAt(fixed))
	s.restartedOnce("web", changed)
}
