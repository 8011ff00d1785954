package argocd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/integration/fixture"
)

// TestLeanBuildHandsOver runs kick-manager, the lean build, on a cluster
// that serves Argo CD: it hands the process over to kick-manager-argocd,
// which runs the Argo CD integration. Without that build next to it, it
// runs on without Argo CD and says why wherever a user would look.
func TestLeanBuildHandsOver(t *testing.T) {
	lean := cluster.Binary(t, "kick-manager")

	t.Run("with the Argo CD build next to it", func(t *testing.T) {
		s := setup(t, nil)
		log := s.Mgr.Log()
		for _, want := range []string{"handing over to the build that includes the Argo CD integration", `"build":"argocd"`} {
			if !strings.Contains(log, want) {
				t.Errorf("manager log lacks %q", want)
			}
		}
		if strings.Contains(log, `"build":"lean"`) {
			t.Error("the lean build started the manager instead of handing over")
		}
		sub := s.in(t)
		sub.WaitPolicyReady("argo", metav1.ConditionTrue, "", "")
	})

	t.Run("alone", func(t *testing.T) {
		alone := filepath.Join(t.TempDir(), "kick-manager")
		data, err := os.ReadFile(lean)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(alone, data, 0o755); err != nil {
			t.Fatal(err)
		}
		env := cluster.Get(t)
		f := &fixture.F{T: t, Env: env, NS: env.Namespace(t), Ctx: t.Context()}
		f.Mgr = env.StartManagerBinary(t, alone, fixture.ManagerNamespace, "--enable-kargo")
		if log := f.Mgr.Log(); !strings.Contains(log, "the Argo CD integration cannot run; continuing without it") || !strings.Contains(log, `"build":"lean"`) {
			t.Errorf("the manager log does not say that Argo CD cannot run:\n%s", log)
		}
		f.Policy("argo", argoPolicy)
		f.Policy("kargo", "{discovery: {workloadSelector: {matchLabels: {app: none}}}, gitOps: {provider: Kargo}}")
		f.WaitPolicyReady("argo", metav1.ConditionFalse, string(kickv1alpha1.GateProviderUnavailable), "kick-manager-argocd is not installed next to")
		f.WaitPolicyReady("kargo", metav1.ConditionFalse, string(kickv1alpha1.GateProviderUnavailable), "needs the Argo CD integration")
	})
}
