package argocd

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
		waitReady(t, sub.F, "argo", "True", "")
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
		waitReady(t, f, "argo", "False", "kick-manager-argocd is not installed next to")
		waitReady(t, f, "kargo", "False", "needs the Argo CD integration")
	})
}

// waitReady waits until KickPolicy name's Ready condition has the status
// and, when not empty, a message containing says.
func waitReady(t *testing.T, f *fixture.F, name, status, says string) {
	t.Helper()
	cluster.Eventually(t, 30*time.Second, "KickPolicy "+name+" Ready="+status, func() (bool, error) {
		var p kickv1alpha1.KickPolicy
		if err := f.Env.Client.Get(f.Ctx, client.ObjectKey{Namespace: f.NS, Name: name}, &p); err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(p.Status.Conditions, kickv1alpha1.ConditionReady)
		if c == nil {
			return false, fmt.Errorf("no Ready condition yet")
		}
		return string(c.Status) == status && strings.Contains(c.Message, says), fmt.Errorf("Ready=%s %s: %s", c.Status, c.Reason, c.Message)
	})
}
