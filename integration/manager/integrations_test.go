package manager

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/integration/fixture"
)

// TestIntegrationsAbsentFromTheCluster runs the manager with every GitOps
// integration enabled on a cluster that serves none of their APIs: it logs
// one line per skipped integration naming the kind it did not find, the
// policies asking for those providers say why they are not Ready, and a
// change under provider Auto waits instead of restarting unguarded.
func TestIntegrationsAbsentFromTheCluster(t *testing.T) {
	f := fixture.Setup(t, "--enable-argocd", "--enable-flux", "--enable-kargo")

	for integration, kind := range map[string]string{
		"Argo CD":            "argoproj.io/v1alpha1, Kind=Application",
		"Flux Kustomization": "kustomize.toolkit.fluxcd.io/v1, Kind=Kustomization",
		"Flux HelmRelease":   "helm.toolkit.fluxcd.io/v2, Kind=HelmRelease",
		"Kargo":              "kargo.akuity.io/v1alpha1, Kind=Stage",
	} {
		want := fmt.Sprintf(`"integration":%q,"missingKind":%q`, integration, kind)
		if n := strings.Count(f.Mgr.Log(), want); n != 1 {
			t.Errorf("want exactly one skip line with %s, found %d", want, n)
		}
	}

	f.Policy("argo", "discovery: {workloadSelector: {matchLabels: {app: a}}}\ngitOps: {provider: ArgoCD}")
	f.Policy("flux", "discovery: {workloadSelector: {matchLabels: {app: b}}}\ngitOps: {provider: Flux}")
	f.Policy("kargo", "discovery: {workloadSelector: {matchLabels: {app: c}}}\ngitOps: {provider: Kargo}")
	f.Policy("auto", "discovery: {workloadSelector: {matchLabels: {app: web}}}\ngitOps: {provider: Auto}")
	for name, says := range map[string]string{
		"argo":  "is not served",
		"flux":  "neither Kustomizations nor HelmReleases are served",
		"kargo": "Kind=Stage is not served",
		"auto":  "neither is active",
	} {
		f.WaitPolicyReady(name, metav1.ConditionFalse, string(kickv1alpha1.GateProviderUnavailable), says)
	}

	// Everything else (the barrier's canary) restarts without a gate.
	f.Policy("rest", "discovery: {workloadSelector: {matchExpressions: [{key: app, operator: NotIn, values: [a, b, c, web]}]}}")
	f.WebWithSecret()
	before := f.ReplicaSets("web")
	f.SetSecret("db", map[string]string{"password": "beta"})
	kr := f.WaitPhase("deployment-web", kickv1alpha1.PhaseWaitingForGate, 30*time.Second)
	if kr.Status.Gate == nil || kr.Status.Gate.Reason != kickv1alpha1.GateProviderUnavailable {
		t.Fatalf("gate %+v, want ProviderUnavailable", kr.Status.Gate)
	}
	f.Barrier()
	if after := f.ReplicaSets("web"); len(after) != len(before) {
		t.Errorf("a restart ran without the GitOps gate: ReplicaSets %v → %v", before, after)
	}
}
