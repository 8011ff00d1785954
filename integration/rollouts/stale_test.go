package rollouts

import (
	"encoding/json"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/integration/fixture"
	"github.com/kick-operator/kick/restart/freshness"
	"github.com/kick-operator/kick/restart/rollout"
)

// writeStatus merges fields into the Rollout's status, through the status
// subresource, as the Rollouts controller does.
func writeStatus(f *fixture.F, name string, fields map[string]any) {
	f.T.Helper()
	patch, err := json.Marshal(map[string]any{"status": fields})
	if err != nil {
		f.T.Fatal(err)
	}
	if err := f.Env.Client.Status().Patch(f.Ctx, getRollout(f, name), client.RawPatch(types.MergePatchType, patch)); err != nil {
		f.T.Fatalf("write Rollout status: %v", err)
	}
}

// TestRestartedAtWithStaleCountsIsNotCompletion replays what the real
// blue-green controller writes while it restarts (integration/e2e
// TestRolloutBlueGreenRestart): the write that evicts the last old pod sets
// status.restartedAt with the counts of before the eviction (Healthy, all
// available); the next says one replica is unavailable; the last, Healthy
// again, comes once the replacement is available. KICK must not take the
// first for a finished restart: the request waits (RestartSettling, then
// RolloutInProgress) and succeeds only after the last has held for
// rollout.RestartSettle.
func TestRestartedAtWithStaleCountsIsNotCompletion(t *testing.T) {
	f := fixture.Setup(t, "--enable-argo-rollouts")
	f.Policy("all", selectAll+"\nrestart: {minInterval: 0s}")
	f.Secret("db", map[string]string{"password": "alpha"}, nil)
	createRollout(f, "web", 2, map[string]any{"template": template("web", "db")})
	f.WaitObservation("db")

	f.SetSecret("db", map[string]string{"password": "bravo"})
	restartAt := waitRestartAt(f, "web", time.Time{})
	observe(f, "web")
	waitCondition(f, "rollout-web", kickv1alpha1.ConditionRolloutComplete, metav1.ConditionFalse, rollout.RestartPending)

	// The evicting write: restartedAt with the old, full counts.
	settle(f, "web")
	kr := waitCondition(f, "rollout-web", kickv1alpha1.ConditionRolloutComplete, metav1.ConditionFalse, rollout.RestartSettling)
	if kr.Status.Phase != kickv1alpha1.PhaseExecuting {
		t.Fatalf("phase %s on the evicting write, want Executing", kr.Status.Phase)
	}
	// The controller's next write, once the ReplicaSet reported the
	// eviction.
	writeStatus(f, "web", map[string]any{"readyReplicas": 1, "availableReplicas": 1, "phase": "Progressing", "message": "more replicas need to be updated"})
	waitCondition(f, "rollout-web", kickv1alpha1.ConditionRolloutComplete, metav1.ConditionFalse, freshness.RolloutInProgress)
	// The replacement available.
	healthy := time.Now()
	writeStatus(f, "web", map[string]any{"readyReplicas": 2, "availableReplicas": 2, "phase": "Healthy", "message": nil})
	kr = f.WaitPhase("rollout-web", kickv1alpha1.PhaseSucceeded, 60*time.Second)
	// managedFields keep whole seconds: the settle counts from the second
	// of the last write.
	if done := kr.Status.CompletionTime.Time; done.Before(healthy.Truncate(time.Second).Add(rollout.RestartSettle - time.Second)) {
		t.Fatalf("succeeded at %s, before the status written at %s had held for %s", done.Format(time.RFC3339), healthy.Format(time.RFC3339Nano), rollout.RestartSettle)
	}
	if kr.Status.RestartCount != 1 || !getRollout(f, "web").Spec.RestartAt.Time.Equal(restartAt) {
		t.Fatalf("restartCount %d: want one restart at %s", kr.Status.RestartCount, restartAt)
	}
}
