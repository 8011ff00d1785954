package kargo

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/cmd/kick-devcluster/controlplane"
	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/integration/fixture"
)

// kargoShard is the shard the real controller is started for: it watches
// only Stages and Promotions labelled with it, so it leaves alone the ones
// TestKargo writes statuses for by hand.
const kargoShard = "kick-test"

// startKargo installs Kargo's CRDs (kargo-crds/ next to the binary) and runs
// `kargo controller` for kargoShard, with state and its heartbeat Lease in
// namespace ns. Only the controller runs: no API server, no webhooks, no
// Argo CD or Rollouts integration, no management controller.
func startKargo(t *testing.T, env *cluster.Env, bin, ns string) *controlplane.Process {
	t.Helper()
	crds := filepath.Join(filepath.Dir(bin), "kargo-crds")
	if err := controlplane.InstallCRDs(context.Background(), env.Config, crds); err != nil {
		t.Fatalf("install the Kargo CRDs from %s (hack/gitops/build-kargo.sh writes them): %v", crds, err)
	}
	tmp := t.TempDir()
	p, err := controlplane.StartProcess("kargo-controller-"+ns, bin, []string{"controller"}, []string{
		"KUBECONFIG=" + env.Cluster.Kubeconfig, "HOME=" + tmp, "TMPDIR=" + tmp,
		"SHARD_NAME=" + kargoShard, "IS_DEFAULT_CONTROLLER=false", "KARGO_NAMESPACE=" + ns,
		"ARGOCD_INTEGRATION_ENABLED=false", "ROLLOUTS_INTEGRATION_ENABLED=false",
		"METRICS_BIND_ADDRESS=0", "LOG_LEVEL=debug",
	}, env.Cluster.LogDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("----- %s -----\n%s", p.LogPath(), p.Tail(6000))
		}
		p.Stop(5 * time.Second)
	})
	return p
}

// sharded creates a Kargo object of the project labelled for kargoShard,
// and deletes it when the test ends, while the controller (started
// earlier) still runs to remove its finalizers.
func (p *project) sharded(u *unstructured.Unstructured) *unstructured.Unstructured {
	p.T.Helper()
	u.SetLabels(map[string]string{"kargo.akuity.io/shard": kargoShard})
	if err := p.Env.Client.Create(p.Ctx, u); err != nil {
		p.T.Fatalf("create %s %s: %v", u.GetKind(), u.GetName(), err)
	}
	p.T.Cleanup(func() {
		_ = p.Env.Client.Delete(context.Background(), u)
		_ = cluster.Poll(60*time.Second, u.GetKind()+" "+u.GetName()+" to be gone", func() (bool, error) {
			err := p.Env.Client.Get(context.Background(), client.ObjectKeyFromObject(u), u.DeepCopy())
			return apierrors.IsNotFound(err), err
		})
	})
	return u
}

// read returns the current state of a Kargo object.
func (p *project) read(u *unstructured.Unstructured) *unstructured.Unstructured {
	p.T.Helper()
	cur := &unstructured.Unstructured{}
	cur.SetGroupVersionKind(u.GroupVersionKind())
	if err := p.Env.Client.Get(p.Ctx, client.ObjectKeyFromObject(u), cur); err != nil {
		p.T.Fatal(err)
	}
	return cur
}

// waitPromotion waits until Kargo moved the Promotion to phase.
func (p *project) waitPromotion(pr *unstructured.Unstructured, phase string, timeout time.Duration) {
	p.T.Helper()
	cluster.Eventually(p.T, timeout, "Kargo to move Promotion "+pr.GetName()+" to "+phase, func() (bool, error) {
		status, _, _ := unstructured.NestedMap(p.read(pr).Object, "status")
		return status["phase"] == phase, fmt.Errorf("status %v", status)
	})
}

// gateServer is what the Promotion's http step polls: 202 while held (the
// step keeps running), 200 once released (the step, and the Promotion,
// succeed).
type gateServer struct {
	*httptest.Server
	released atomic.Bool
	polls    atomic.Int64
}

func newGateServer(t *testing.T) *gateServer {
	g := &gateServer{}
	g.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		g.polls.Add(1)
		if g.released.Load() {
			w.WriteHeader(http.StatusOK)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(g.Close)
	return g
}

// waitPolls waits until the step polled the server more than n times.
func (g *gateServer) waitPolls(t *testing.T, n int64, timeout time.Duration) int64 {
	t.Helper()
	cluster.Eventually(t, timeout, fmt.Sprintf("Kargo's http step to poll more than %d times", n), func() (bool, error) {
		got := g.polls.Load()
		return got > n, fmt.Errorf("%d polls", got)
	})
	return g.polls.Load()
}

// TestKargoController runs the real Kargo controller (v1.11.2, built from
// its source by hack/gitops/build-kargo.sh: the module proxy cannot build
// it, so CI cannot either and the test is opt-in). A Promotion whose only
// step polls a local HTTP server stays Running until the test releases it;
// a Secret change meanwhile waits in WaitingForGate for PromotionRunning,
// and the restart follows exactly once when Kargo finishes the Promotion.
// The Application's sync status is written by the test (Argo CD does not
// run here; integration/e2e covers the Argo CD gate with the real Argo CD).
func TestKargoController(t *testing.T) {
	bin := os.Getenv("KICK_KARGO_BIN")
	if bin == "" {
		t.Skip("the real Kargo controller is opt-in: build it with `make kargo-controller KARGO_SRC=<git repository of github.com/akuity/kargo>` " +
			"and run with KICK_KARGO_BIN=bin/kargo/kargo (make integration-kargo); see docs/guides/kargo.md")
	}
	e := setup(t)
	p := &project{F: &fixture.F{T: t, Env: e.Env, NS: e.Env.Namespace(t), Ctx: e.Ctx, Mgr: e.Mgr}, argo: e.argo}
	p.Policy("kargo", kargoPolicy)
	kargoCtl := startKargo(t, e.Env, bin, p.NS)
	gate := newGateServer(t)

	stage := p.NS + ":prod"
	p.app("promoted", stage, argov1alpha1.SyncStatusCodeSynced)
	p.workload("promoted")

	// The smallest promotion Kargo runs: Freight from a Warehouse (which
	// need not exist: nothing here discovers artifacts), a Stage that takes
	// it directly, and a Promotion with one http step. The Stage needs a
	// promotion template with a step too: without one Kargo treats it as a
	// control-flow Stage, which never runs a Promotion.
	origin := map[string]any{"kind": "Warehouse", "name": "images"}
	freight := kargoObject("Freight", p.NS, "f1", nil)
	delete(freight.Object, "spec")
	freight.Object["origin"] = origin
	p.sharded(freight)
	steps := []any{map[string]any{"uses": "http", "as": "wait", "config": map[string]any{
		"url":               gate.URL,
		"successExpression": "response.status == 200",
		"failureExpression": "response.status >= 400",
		"pollInterval":      "10s", // Kargo's floor
	}}}
	st := p.sharded(kargoObject("Stage", p.NS, "prod", map[string]any{
		"shard":             kargoShard,
		"requestedFreight":  []any{map[string]any{"origin": origin, "sources": map[string]any{"direct": true}}},
		"promotionTemplate": map[string]any{"spec": map[string]any{"steps": steps}},
	}))
	// What Kargo's admission webhook, which does not run here, adds to a new
	// Promotion: the Stage's steps, and the Stage as its controlling owner
	// (the Stage reconciler finds finished Promotions through it).
	pr := kargoObject("Promotion", p.NS, "prod-1", map[string]any{"stage": "prod", "freight": "f1", "steps": steps})
	pr.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "kargo.akuity.io/v1alpha1", Kind: "Stage", Name: st.GetName(),
		UID: st.GetUID(), Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}})
	pr = p.sharded(pr)
	p.waitPromotion(pr, "Running", 2*time.Minute)
	polls := gate.waitPolls(t, 0, time.Minute)
	if done, err := kargoCtl.Exited(); done {
		t.Fatalf("the Kargo controller exited: %v", err)
	}

	p.change("promoted")
	kr := p.waitGate("promoted", kickv1alpha1.GatePromotionRunning, "prod-1")
	p.owner(kr, "promoted", stage)
	// Kargo polls again (at most every 10 s) and the Promotion is still
	// Running: the restart is still held.
	gate.waitPolls(t, polls, time.Minute)
	p.waitGate("promoted", kickv1alpha1.GatePromotionRunning, "prod-1")

	gate.released.Store(true)
	p.waitPromotion(pr, "Succeeded", 2*time.Minute)
	// Kargo then clears the Stage's current promotion and records it as the
	// last one; until it does, the Stage check keeps the restart held.
	cluster.Eventually(t, time.Minute, "Kargo to record prod-1 as the Stage's last promotion", func() (bool, error) {
		st := p.read(kargoObject("Stage", p.NS, "prod", nil))
		last, _, _ := unstructured.NestedString(st.Object, "status", "lastPromotion", "name")
		_, current, _ := unstructured.NestedMap(st.Object, "status", "currentPromotion")
		return last == "prod-1" && !current, fmt.Errorf("lastPromotion %q, currentPromotion set: %v", last, current)
	})
	kr = p.WaitPhase("deployment-promoted", kickv1alpha1.PhaseSucceeded, 2*time.Minute)
	p.owner(kr, "promoted", stage)
	if kr.Status.RestartCount != 1 || kr.Status.Gate == nil || kr.Status.Gate.Reason != kickv1alpha1.GateAllowed {
		t.Fatalf("request: restartCount %d, gate %+v; want one restart through an Allowed gate", kr.Status.RestartCount, kr.Status.Gate)
	}
	p.WaitReplicaSets("promoted", 2)
}
