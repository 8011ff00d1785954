package rollout

import (
	"encoding/json"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kick-operator/kick/restart/freshness"
)

// The statuses below are what the Argo Rollouts controller v1.10.2 wrote
// for a blue-green Rollout of two replicas (minReadySeconds 5) restarted
// at 01:10:35 (TestRolloutBlueGreenRestart in integration/e2e), trimmed to
// the fields KICK reads, with the second of each write.
const (
	// bgStale, written at 01:10:40.077, evicts the last old pod: it sets
	// restartedAt with the counts of before the eviction.
	bgStale = `{"observedGeneration":"3","replicas":2,"updatedReplicas":2,"readyReplicas":2,"availableReplicas":2,
		"currentPodHash":"74846cdc5f","stableRS":"74846cdc5f","restartedAt":"2026-12-05T01:10:35Z","phase":"Healthy",
		"blueGreen":{"activeSelector":"74846cdc5f"}}`
	// bgEvicted, 84 ms later, once the ReplicaSet reported the eviction.
	bgEvicted = `{"observedGeneration":"3","replicas":1,"updatedReplicas":1,"readyReplicas":1,"availableReplicas":1,
		"currentPodHash":"74846cdc5f","stableRS":"74846cdc5f","restartedAt":"2026-12-05T01:10:35Z","phase":"Progressing",
		"message":"more replicas need to be updated","blueGreen":{"activeSelector":"74846cdc5f"}}`
	// bgReplacing, 54 ms later: the replacement is Ready, not yet
	// available.
	bgReplacing = `{"observedGeneration":"3","replicas":2,"updatedReplicas":2,"readyReplicas":2,"availableReplicas":1,
		"currentPodHash":"74846cdc5f","stableRS":"74846cdc5f","restartedAt":"2026-12-05T01:10:35Z","phase":"Progressing",
		"message":"updated replicas are still becoming available","blueGreen":{"activeSelector":"74846cdc5f"}}`
	// bgDone, written at 01:10:45 (minReadySeconds later): the replacement
	// is available. Identical to bgStale but for when it was written.
	bgDone = bgStale
)

var (
	restartAt = time.Date(2026, 12, 5, 1, 10, 35, 0, time.UTC)
	staleAt   = time.Date(2026, 12, 5, 1, 10, 40, 0, time.UTC)
	doneAt    = time.Date(2026, 12, 5, 1, 10, 45, 0, time.UTC)
)

// blueGreen is the Rollout with status st, last written at written.
func blueGreen(t *testing.T, st string, written time.Time) *Rollout {
	t.Helper()
	ro := &Rollout{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "ro-uid", Generation: 3, CreationTimestamp: metav1.NewTime(created)}}
	ro.Spec.Replicas = ptr.To[int32](2)
	ro.Spec.RestartAt = ptr.To(metav1.NewTime(restartAt))
	if err := json.Unmarshal([]byte(st), &ro.Status); err != nil {
		t.Fatal(err)
	}
	ro.ManagedFields = []metav1.ManagedFieldsEntry{
		{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate, Time: ptr.To(metav1.NewTime(created))},
		{Manager: "kick-manager", Operation: metav1.ManagedFieldsOperationUpdate, Time: ptr.To(metav1.NewTime(restartAt.Add(-time.Second)))},
		{Manager: "rollouts-controller", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", Time: ptr.To(metav1.NewTime(written))},
	}
	return ro
}

// activeRS is the Rollout's ReplicaSet with its status counts.
func activeRS(replicas, ready, available int32) []*appsv1.ReplicaSet {
	rs := replicaSet("ro-uid", "74846cdc5f", rsBorn)
	rs.Generation = 1
	rs.Spec.Replicas = ptr.To[int32](2)
	rs.Status = appsv1.ReplicaSetStatus{Replicas: replicas, ReadyReplicas: ready, AvailableReplicas: available, ObservedGeneration: 1}
	return freshness.ReplicaSetRefs(rs)
}

func TestRestartNotCompleteUntilReplacementsAvailable(t *testing.T) {
	// KICK's cache already has the ReplicaSet's report of the eviction.
	r := InspectAt(blueGreen(t, bgStale, staleAt), activeRS(1, 1, 1), doneAt)
	if r.Complete || r.Reason != freshness.RolloutInProgress || r.Recheck != replicaSetRecheck {
		t.Fatalf("evicting write, ReplicaSet one short: %+v, want in progress, looked at again in %s", r, replicaSetRecheck)
	}
	// A pod still terminating is not replaced yet.
	rss := activeRS(2, 2, 2)
	rss[0].Status.TerminatingReplicas = ptr.To[int32](1)
	if r = InspectAt(blueGreen(t, bgStale, staleAt), rss, doneAt); r.Complete {
		t.Fatalf("a pod terminating: %+v, want in progress", r)
	}
	// A ReplicaSet status of an older generation counts nothing.
	rss = activeRS(2, 2, 2)
	rss[0].Generation = 2
	if r = InspectAt(blueGreen(t, bgStale, staleAt), rss, doneAt); r.Complete {
		t.Fatalf("ReplicaSet generation not observed: %+v, want in progress", r)
	}

	// Neither cache has seen the eviction yet: the status must hold for
	// RestartSettle first, and says when to look again.
	r = InspectAt(blueGreen(t, bgStale, staleAt), activeRS(2, 2, 2), staleAt.Add(time.Second))
	if r.Complete || r.Reason != RestartSettling || r.Recheck != RestartSettle-time.Second || r.Message == "" {
		t.Fatalf("evicting write: %+v, want RestartSettling for %s", r, RestartSettle-time.Second)
	}
	// The controller's next writes, within the same second.
	for _, st := range []string{bgEvicted, bgReplacing} {
		if r = InspectAt(blueGreen(t, st, staleAt), activeRS(2, 2, 1), staleAt.Add(RestartSettle)); r.Complete || r.Reason != freshness.RolloutInProgress {
			t.Fatalf("after the eviction: %+v, want in progress", r)
		}
	}
	// The replacement available: complete once that status has held.
	if r = InspectAt(blueGreen(t, bgDone, doneAt), activeRS(2, 2, 2), doneAt.Add(RestartSettle-time.Millisecond)); r.Complete {
		t.Fatalf("final status just written: %+v, want settling", r)
	}
	if r = InspectAt(blueGreen(t, bgDone, doneAt), activeRS(2, 2, 2), doneAt.Add(RestartSettle)); !r.Complete || r.Recheck != 0 || !r.Start.Equal(restartAt) {
		t.Fatalf("final status held: %+v, want complete from restartAt", r)
	}
}

func TestSettleOnlyForRestarts(t *testing.T) {
	now := restartAt.Add(time.Second)
	// No restart requested: a fresh status write is not waited for.
	ro := blueGreen(t, bgStale, now)
	ro.Spec.RestartAt, ro.Status.RestartedAt = nil, nil
	if r := InspectAt(ro, activeRS(2, 2, 2), now); !r.Complete {
		t.Fatalf("no restart: %+v, want complete", r)
	}
	// No status write recorded (managedFields dropped): the status alone.
	ro = blueGreen(t, bgStale, now)
	ro.ManagedFields = nil
	if r := InspectAt(ro, activeRS(2, 2, 2), now); !r.Complete {
		t.Fatalf("no managedFields: %+v, want complete", r)
	}
	// A hostile tenant writes a status entry into managedFields dated a
	// year ahead: it is not a status write KICK waits out.
	ro = blueGreen(t, bgStale, now)
	for i := range ro.ManagedFields {
		if ro.ManagedFields[i].Subresource == "status" {
			ro.ManagedFields[i].Time = &metav1.Time{Time: now.AddDate(1, 0, 0)}
		}
	}
	if r := InspectAt(ro, activeRS(2, 2, 2), now); !r.Complete {
		t.Fatalf("a status write dated a year ahead: %+v, want complete", r)
	}
	// Scaled to zero: nothing to replace.
	ro = blueGreen(t, `{"observedGeneration":"3","restartedAt":"2026-12-05T01:10:35Z","phase":"Healthy"}`, now)
	ro.Spec.Replicas = ptr.To[int32](0)
	if r := InspectAt(ro, nil, now); !r.Complete {
		t.Fatalf("scaled to zero: %+v, want complete", r)
	}
}

func TestTransformRolloutKeepsLastStatusWrite(t *testing.T) {
	written := staleAt
	ro := blueGreen(t, bgStale, written)
	ro.ManagedFields = append(ro.ManagedFields, metav1.ManagedFieldsEntry{Manager: "kubectl-argo-rollouts", Subresource: "status",
		Time: ptr.To(metav1.NewTime(restartAt)), FieldsV1: metav1.NewFieldsV1(`{"f:status":{}}`)})
	out, err := TransformRollout(ro)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*Rollout).ManagedFields
	if len(got) != 1 || got[0].FieldsV1 != nil || !got[0].Time.Time.Equal(written) {
		t.Fatalf("managedFields after the transform: %+v, want only the last status write's time", got)
	}
	if last, ok := LastStatusWrite(out.(*Rollout)); !ok || !last.Equal(written) {
		t.Fatalf("LastStatusWrite = %s, %t", last, ok)
	}
	ro = blueGreen(t, bgStale, written)
	ro.ManagedFields = ro.ManagedFields[:2]
	if out, _ = TransformRollout(ro); out.(*Rollout).ManagedFields != nil {
		t.Fatal("a Rollout without a status write keeps managedFields")
	}
	if out, _ = TransformRollout("tombstone"); out != "tombstone" {
		t.Fatal("a non-Rollout changed")
	}
}
