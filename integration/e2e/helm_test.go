package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	gitopsflux "github.com/kick-operator/kick/gitops/flux"
	"github.com/kick-operator/kick/integration/cluster"
)

// helmControllerEnv names the helm-controller binary the Flux HelmRelease
// tests run. The module proxy does not serve helm-controller, so CI has no
// binary and these tests skip; see docs/guides/flux.md.
const helmControllerEnv = "KICK_HELM_CONTROLLER"

// helmSetup is setup for a HelmRelease test; it skips, saying how to run
// it, when no helm-controller runs.
func helmSetup(t *testing.T) *suite {
	env := cluster.Get(t)
	if env.GitOps == nil || !env.GitOps.Runs("helm") {
		t.Skipf("helm-controller is not running: build it from a checkout of github.com/fluxcd/helm-controller v1.6.3 "+
			"with `make helm-controller HELM_CONTROLLER_SRC=<checkout>` and set %s=<absolute path of bin/helm-controller> (docs/guides/flux.md)",
			helmControllerEnv)
	}
	return setup(t, "flux")
}

// chart is a chart at charts/web of the test's repository: Deployment web
// consuming Secret web-db, at the version its values give, plus extra
// templates (name → content; "" deletes).
func chart(extra map[string]string) map[string]string {
	files := map[string]string{
		"charts/web/Chart.yaml":                "apiVersion: v2\nname: web\nversion: 0.1.0\n",
		"charts/web/values.yaml":               "version: \"1\"\n",
		"charts/web/templates/deployment.yaml": deployment("web", "{{ .Values.version }}"),
	}
	for name, content := range extra {
		files["charts/web/templates/"+name] = content
	}
	return files
}

// helmRelease creates GitRepository charts for the test's repository and
// HelmRelease web installing charts/web from it into the test namespace.
// It is written as YAML, not as the Go type: the CRD installed is
// helm-controller v1.6.3's, which the newer Go API module does not match
// field for field.
func (s *suite) helmRelease() {
	s.T.Helper()
	manifest := fmt.Sprintf(`apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: charts, namespace: %[1]s}
spec: {url: %[2]q, ref: {branch: main}, interval: 1m}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: web, namespace: %[1]s}
spec:
  interval: 1m
  timeout: 1m
  chart:
    spec:
      chart: ./charts/web
      # a new commit is a new chart, whatever Chart.yaml's version says
      reconcileStrategy: Revision
      interval: 1m
      sourceRef: {kind: GitRepository, name: charts}
`, s.NS, s.stack.Git.RepoURL(s.repo))
	if err := s.stack.Apply(s.Ctx, manifest); err != nil {
		s.T.Fatalf("create GitRepository and HelmRelease: %v", err)
	}
}

// waitHelmRelease waits until HelmRelease web satisfies cond.
func (s *suite) waitHelmRelease(what string, cond func(*helmv2.HelmRelease) bool) *helmv2.HelmRelease {
	s.T.Helper()
	var h helmv2.HelmRelease
	cluster.Eventually(s.T, 3*time.Minute, "HelmRelease web "+what, func() (bool, error) {
		if err := s.Env.Client.Get(s.Ctx, client.ObjectKey{Namespace: s.NS, Name: "web"}, &h); err != nil {
			return false, err
		}
		return cond(&h), fmt.Errorf("generation %d, attempted %q, conditions %+v",
			h.Generation, h.Status.LastAttemptedRevision, h.Status.Conditions)
	})
	return &h
}

// releasedAt reports whether the HelmRelease is Ready for its current
// generation with the chart built from the commit (source-controller
// versions it 0.1.0+<first 12 characters of the commit>).
func releasedAt(sha string) func(*helmv2.HelmRelease) bool {
	return func(h *helmv2.HelmRelease) bool {
		c := meta.FindStatusCondition(h.Status.Conditions, "Ready")
		return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == h.Generation &&
			strings.HasSuffix(h.Status.LastAttemptedRevision, sha[:12])
	}
}

// helmDeployed installs the chart through a HelmRelease and waits until
// KICK has the baseline of the Secret; it checks the owner labels and the
// inventory entry helm-controller wrote.
func helmDeployed(t *testing.T) *suite {
	s := helmSetup(t)
	s.Policy("flux", fluxPolicy)
	s.secret("web")
	sha := s.commit("chart web v1", chart(nil))
	s.helmRelease()
	h := s.waitHelmRelease("to be Ready at "+sha[:7], releasedAt(sha))
	s.waitDeployed("web", "1")

	d := s.get("web")
	t.Logf("helm-controller wrote labels %v; inventory %+v; conditions %+v", d.Labels, h.Status.Inventory, h.Status.Conditions)
	if d.Labels[gitopsflux.HelmNameLabel] != "web" || d.Labels[gitopsflux.HelmNamespaceLabel] != s.NS {
		t.Fatalf("Deployment labels %v lack the HelmRelease's", d.Labels)
	}
	return s
}

// reconcileCharts asks Flux to fetch the repository now, as `flux
// reconcile source git charts` does; the HelmChart and the HelmRelease
// follow the new artifact.
func (s *suite) reconcileCharts() { s.reconcileNow("charts") }

// setHelmSuspend suspends or resumes HelmRelease web, as `flux suspend
// helmrelease` does.
func (s *suite) setHelmSuspend(suspend bool) {
	s.T.Helper()
	h := &unstructured.Unstructured{}
	h.SetGroupVersionKind(gitopsflux.HelmReleaseKind)
	h.SetNamespace(s.NS)
	h.SetName("web")
	patch := fmt.Sprintf(`{"spec":{"suspend":%t}}`, suspend)
	if err := s.Env.Client.Patch(s.Ctx, h, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		s.T.Fatal(err)
	}
}

// TestFluxHelmReleaseFailedUpgrade: helm-controller installs a chart from
// the git server through source-controller; a commit whose chart fails to
// upgrade leaves the HelmRelease not Ready, and a Secret change waits with
// the failure helm-controller wrote; once the fixed chart is released, KICK
// restarts once.
func TestFluxHelmReleaseFailedUpgrade(t *testing.T) {
	s := helmDeployed(t)
	// The API server refuses the ConfigMap (data values must be strings):
	// Helm renders the chart, the upgrade fails.
	bad := s.commit("a broken ConfigMap", chart(map[string]string{
		"broken.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: broken}\ndata: {key: [1, 2]}\n",
	}))
	s.reconcileCharts()
	h := s.waitHelmRelease("to fail on "+bad[:7], func(h *helmv2.HelmRelease) bool {
		c := meta.FindStatusCondition(h.Status.Conditions, "Ready")
		return c != nil && c.Status == metav1.ConditionFalse && strings.HasSuffix(h.Status.LastAttemptedRevision, bad[:12])
	})
	t.Logf("helm-controller's conditions for the failed upgrade: %+v", h.Status.Conditions)

	changed := s.change("web")
	kr := s.waitGate("web", kickv1alpha1.PhaseWaitingForApplicationSync, kickv1alpha1.GateOwnerOutOfSync, "UpgradeFailed")
	t.Logf("KICK waits: %s: %s", kr.Status.Gate.Reason, kr.Status.Gate.Message)
	s.owner(kr, kickv1alpha1.ProviderFlux, "HelmRelease", s.NS, "web")

	fixed := s.commit("remove the broken ConfigMap", chart(map[string]string{"broken.yaml": ""}))
	s.reconcileCharts()
	s.waitHelmRelease("to be Ready at the fix "+fixed[:7], releasedAt(fixed))
	s.restartedOnce("web", changed)
}

// TestFluxHelmReleaseSuspended: a suspended HelmRelease holds the restart
// with OwnerSuspended; resumed, KICK restarts once.
func TestFluxHelmReleaseSuspended(t *testing.T) {
	s := helmDeployed(t)
	s.setHelmSuspend(true)
	changed := s.change("web")
	kr := s.waitGate("web", kickv1alpha1.PhaseWaitingForApplicationSync, kickv1alpha1.GateOwnerSuspended, "is suspended")
	s.owner(kr, kickv1alpha1.ProviderFlux, "HelmRelease", s.NS, "web")
	s.setHelmSuspend(false)
	s.restartedOnce("web", changed)
}

// setHelmValues merge-patches HelmRelease web's spec.values, as editing
// the values in Git would, and returns the generation it made.
func (s *suite) setHelmValues(values string) int64 {
	s.T.Helper()
	h := &unstructured.Unstructured{}
	h.SetGroupVersionKind(gitopsflux.HelmReleaseKind)
	h.SetNamespace(s.NS)
	h.SetName("web")
	if err := s.Env.Client.Patch(s.Ctx, h, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"values":`+values+`}}`))); err != nil {
		s.T.Fatal(err)
	}
	return h.GetGeneration()
}

// conditionAt reports whether the HelmRelease's Ready condition has the
// status for generation gen.
func conditionAt(status metav1.ConditionStatus, gen int64) func(*helmv2.HelmRelease) bool {
	return func(h *helmv2.HelmRelease) bool {
		c := meta.FindStatusCondition(h.Status.Conditions, "Ready")
		return c != nil && c.Status == status && c.ObservedGeneration == gen && h.Generation == gen
	}
}

// TestFluxHelmReleaseBadValues: a values change that the chart turns into
// an object the API server refuses fails the upgrade of a new generation;
// a Secret change waits with the failure, and proceeds once values that
// work are released.
func TestFluxHelmReleaseBadValues(t *testing.T) {
	s := helmSetup(t)
	s.Policy("flux", fluxPolicy)
	s.secret("web")
	sha := s.commit("chart web v1, a ConfigMap that breaks on broken: true", chart(map[string]string{
		"broken.yaml": "{{- if .Values.broken }}\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: broken}\ndata: {key: [1, 2]}\n{{- end }}\n",
	}))
	s.helmRelease()
	s.waitHelmRelease("to be Ready at "+sha[:7], releasedAt(sha))
	s.waitDeployed("web", "1")

	gen := s.setHelmValues(`{"broken":true}`)
	h := s.waitHelmRelease(fmt.Sprintf("to fail at generation %d", gen), conditionAt(metav1.ConditionFalse, gen))
	t.Logf("helm-controller's conditions for the bad values: %+v", h.Status.Conditions)
	changed := s.change("web")
	kr := s.waitGate("web", kickv1alpha1.PhaseWaitingForApplicationSync, kickv1alpha1.GateOwnerOutOfSync, "UpgradeFailed")
	t.Logf("KICK waits: %s: %s", kr.Status.Gate.Reason, kr.Status.Gate.Message)

	gen = s.setHelmValues(`{"broken":false}`)
	s.waitHelmRelease(fmt.Sprintf("to be Ready at generation %d", gen), conditionAt(metav1.ConditionTrue, gen))
	s.restartedOnce("web", changed)
}
