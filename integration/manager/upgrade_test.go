package manager

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/cmd/kick-devcluster/controlplane"
	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/integration/fixture"
)

// A manager upgraded before its CRDs (Helm never upgrades a chart's CRDs)
// finds no KickHold kind: it says so, starts, and restarts as before,
// instead of aborting on a watch of a kind the API server does not serve.
func TestManagerNewerThanItsCRDs(t *testing.T) {
	env := cluster.Get(t)
	ctx := context.Background()
	crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "kickholds.kick.corewire.io"}}
	if err := env.Client.Delete(ctx, crd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		root, err := cluster.RepoRoot()
		if err == nil {
			err = controlplane.InstallCRDs(ctx, env.Config, filepath.Join(root, "deploy", "crds"))
		}
		if err != nil {
			t.Errorf("reinstall KICK's CRDs: %v", err)
		}
	})
	cluster.Eventually(t, time.Minute, "the KickHold CRD to be gone", func() (bool, error) {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(crd), &apiextensionsv1.CustomResourceDefinition{})
		return apierrors.IsNotFound(err), err
	})

	f := fixture.Setup(t)
	f.Policy("all", "discovery: {workloadSelector: {}}\nrestart: {minInterval: 0s}")
	f.WebWithSecret()
	f.SetSecret("db", map[string]string{"password": "beta"})
	f.WaitPhase("deployment-web", kickv1alpha1.PhaseSucceeded, time.Minute)
	f.WaitReplicaSets("web", 2)
	if log := f.Mgr.Log(); !strings.Contains(log, "KickHolds are not served") {
		t.Errorf("the manager's log does not say KickHolds are not served")
	}
	if f.Mgr.Exited() {
		t.Errorf("the manager exited")
	}
}
