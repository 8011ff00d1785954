package rollout

import (
	"fmt"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kick-operator/kick/restart/freshness"
)

// PodTemplateHashLabel is the label the Rollouts controller puts on the
// ReplicaSets (and pods) of each revision.
const PodTemplateHashLabel = "rollouts-pod-template-hash"

// Reasons a Rollout's rollout is not complete, besides freshness's own.
const (
	// Aborted: the rollout was aborted (status.abort); it is back on the
	// stable revision until someone retries it.
	Aborted = "RolloutAborted"
	// Degraded: the Rollouts controller reports the rollout Degraded.
	Degraded = "RolloutDegraded"
	// RestartPending: the Rollouts controller has not yet replaced every
	// pod older than spec.restartAt.
	RestartPending = "RestartPending"
	// RestartSettling: the controller reported the restart finished, but
	// that status is younger than RestartSettle, so it may still count a
	// pod it evicted in the same reconcile.
	RestartSettling = "RestartSettling"
)

// RestartSettle is how long a Rollout's status must stay unchanged after a
// restart before KICK takes the restart as finished.
//
// A blue-green Rollout's controller evicts the last pod older than
// spec.restartAt and, in the same status write, sets status.restartedAt
// with the availability counts of before that eviction (Healthy, every
// replica available). Nothing in that write tells it from the write that
// follows once the replacement is available. The eviction makes the
// ReplicaSet controller report one replica fewer available at once, and
// the Rollouts controller then writes Progressing; RestartSettle only has
// to cover that reaction, not the replacement's start or minReadySeconds.
// Waiting for a quiet status costs a finished restart this much time.
const RestartSettle = 5 * time.Second

// replicaSetRecheck is how soon a restart the Rollout's status reports
// finished, but its ReplicaSet's not, is looked at again.
const replicaSetRecheck = time.Second

// InspectAt reads a Rollout's rollout state at now. replicaSets may be any superset
// of the Rollout's ReplicaSets (those not controlled by it are ignored).
//
// σ (Start) is the later of spec.restartAt and the creation of the current
// revision's ReplicaSet (the one labelled with status.currentPodHash), each
// a lower bound of every running pod's start once the rollout is complete:
// the Rollouts controller has then replaced every pod created before
// restartAt. Without either it falls back to the Rollout's creation, the
// safe side (at most one extra restart). Since, valid while a rollout is in
// progress, uses status.restartedAt (a restart that finished) instead of
// spec.restartAt.
//
// The rollout is complete when the controller has observed the latest
// generation, finished the requested restart (status.restartedAt reached
// spec.restartAt), the Rollout is neither paused nor aborted, its phase (if
// reported) is Healthy, every desired replica is updated and available with
// no old replica left, and the desired revision is the stable (for
// blue-green: active) one.
//
// A requested restart is complete only once, in addition, the current
// ReplicaSet (when in replicaSets) reports every desired replica ready and
// available for its latest generation with none terminating, and the
// Rollout's status has not changed for RestartSettle (see there; the last
// status write is read from managedFields): the controller's
// status.restartedAt can come with counts from before its last eviction.
// While it settles, Recheck says when to look again.
func InspectAt(ro *Rollout, replicaSets []*appsv1.ReplicaSet, now time.Time) freshness.Rollout {
	r := inspectStatus(ro, replicaSets)
	if !r.Complete || ro.Spec.RestartAt == nil || ro.Spec.Replicas != nil && *ro.Spec.Replicas == 0 {
		return r
	}
	if cur := currentReplicaSet(ro, replicaSets); cur != nil {
		if reason := replicaSetShort(cur, replicasOf(ro)); reason != "" {
			// The Rollout's status says done, its ReplicaSet's not yet (or
			// no more): one of them is behind, and a ReplicaSet's status
			// change wakes no request, so look again soon.
			r.Complete, r.Reason, r.Message = false, freshness.RolloutInProgress, "ReplicaSet "+cur.Name+" "+reason
			r.Recheck = replicaSetRecheck
			return r
		}
	}
	// managedFields are the API server's record, but a client may write
	// them too: a status write dated further ahead of the manager's clock
	// than clock skew explains is ignored, so a forged time cannot keep a
	// restart settling until then.
	if last, ok := LastStatusWrite(ro); ok && !last.After(now.Add(RestartSettle)) {
		if wait := last.Add(RestartSettle).Sub(now); wait > 0 {
			r.Complete, r.Reason, r.Recheck = false, RestartSettling, wait
			r.Message = fmt.Sprintf("restart reported finished; waiting until the status written at %s has held for %s", last.UTC().Format(time.RFC3339), RestartSettle)
		}
	}
	return r
}

// Inspect is InspectAt now.
func Inspect(ro *Rollout, replicaSets []*appsv1.ReplicaSet) freshness.Rollout {
	return InspectAt(ro, replicaSets, time.Now())
}

// replicaSetShort says why a ReplicaSet does not yet run desired replicas
// that are all ready and available, "" when it does.
func replicaSetShort(rs *appsv1.ReplicaSet, desired int32) string {
	st := &rs.Status
	switch {
	case st.ObservedGeneration < rs.Generation:
		return fmt.Sprintf("status is of generation %d, not %d", st.ObservedGeneration, rs.Generation)
	case st.TerminatingReplicas != nil && *st.TerminatingReplicas > 0:
		return fmt.Sprintf("has %d pods terminating", *st.TerminatingReplicas)
	case st.Replicas != desired || st.ReadyReplicas < desired || st.AvailableReplicas < desired:
		return fmt.Sprintf("has %d of %d replicas available (%d ready, %d in all)", st.AvailableReplicas, desired, st.ReadyReplicas, st.Replicas)
	}
	return ""
}

// LastStatusWrite returns the time of the latest write of the Rollout's
// status subresource recorded in its managedFields (whole seconds), false
// when none is recorded.
func LastStatusWrite(ro *Rollout) (time.Time, bool) {
	var last time.Time
	for i := range ro.ManagedFields {
		if f := &ro.ManagedFields[i]; f.Subresource == "status" && f.Time != nil && f.Time.After(last) {
			last = f.Time.Time
		}
	}
	return last, !last.IsZero()
}

func replicasOf(ro *Rollout) int32 {
	if ro.Spec.Replicas != nil {
		return *ro.Spec.Replicas
	}
	return 1
}

// inspectStatus is the rule on the Rollout's status alone.
func inspectStatus(ro *Rollout, replicaSets []*appsv1.ReplicaSet) freshness.Rollout {
	var r freshness.Rollout
	st := &ro.Status
	var revision time.Time
	if cur := currentReplicaSet(ro, replicaSets); cur != nil {
		r.ReplicaSet = cur.Name
		revision = cur.CreationTimestamp.Time
	}
	restartAt := timeOf(ro.Spec.RestartAt)
	restartedAt := timeOf(st.RestartedAt)
	r.Start = later(revision, restartAt)
	r.Since = later(revision, restartedAt)
	if r.Start.IsZero() {
		r.Start = ro.CreationTimestamp.Time
	}
	if r.Since.IsZero() {
		r.Since = ro.CreationTimestamp.Time
	}

	desired := replicasOf(ro)
	observed, numeric := observedGeneration(st.ObservedGeneration)
	switch {
	case ro.Spec.Paused:
		r.Reason, r.Message = freshness.Paused, "rollout is paused; nothing rolls out until it is resumed"
	case !numeric || observed < ro.Generation:
		r.Reason, r.Message = freshness.GenerationNotObserved,
			fmt.Sprintf("rollouts controller has observed generation %q of %d", st.ObservedGeneration, ro.Generation)
	case st.Abort:
		r.Reason, r.Message = Aborted, "rollout was aborted; it completes once it is retried or its template reverted"
	case len(st.PauseConditions) > 0 || st.ControllerPause:
		r.Reason, r.Message = freshness.Paused, "rollout is paused at a step ("+pauseReasons(st.PauseConditions)+")"
	case !restartAt.IsZero() && restartedAt.Before(restartAt):
		r.Reason, r.Message = RestartPending,
			fmt.Sprintf("restart of the pods created before %s not finished (status.restartedAt %s)", restartAt.Format(time.RFC3339), formatOrNone(restartedAt))
	case st.Phase == "Degraded":
		r.Reason, r.Message = Degraded, "rollout is Degraded: "+st.Message
	case st.Phase == "Paused":
		r.Reason, r.Message = freshness.Paused, "rollout is Paused: "+st.Message
	case st.Phase != "" && st.Phase != "Healthy":
		r.Reason, r.Message = freshness.RolloutInProgress, "rollout is "+st.Phase+": "+st.Message
	case desired == 0:
		r.Complete, r.Message = true, "scaled to zero"
	case st.UpdatedReplicas < desired:
		r.Reason, r.Message = freshness.RolloutInProgress, fmt.Sprintf("%d of %d replicas updated", st.UpdatedReplicas, desired)
	case st.Replicas > st.UpdatedReplicas:
		r.Reason, r.Message = freshness.RolloutInProgress, fmt.Sprintf("%d old replicas pending termination", st.Replicas-st.UpdatedReplicas)
	case st.AvailableReplicas < desired:
		r.Reason, r.Message = freshness.RolloutInProgress, fmt.Sprintf("%d of %d replicas available", st.AvailableReplicas, desired)
	case st.CurrentPodHash != "" && st.StableRS != "" && st.CurrentPodHash != st.StableRS:
		r.Reason, r.Message = freshness.RolloutInProgress, "revision "+st.CurrentPodHash+" is not stable yet (steps or promotion pending)"
	case st.BlueGreen != nil && st.BlueGreen.ActiveSelector != "" && st.CurrentPodHash != "" && st.BlueGreen.ActiveSelector != st.CurrentPodHash:
		r.Reason, r.Message = freshness.RolloutInProgress, "active service not yet switched to revision "+st.CurrentPodHash
	default:
		r.Complete, r.Message = true, fmt.Sprintf("%d replicas updated and available", desired)
	}
	return r
}

// currentReplicaSet returns the ReplicaSet of the desired revision.
func currentReplicaSet(ro *Rollout, replicaSets []*appsv1.ReplicaSet) *appsv1.ReplicaSet {
	hash := ro.Status.CurrentPodHash
	if hash == "" {
		return nil
	}
	for i := range replicaSets {
		rs := replicaSets[i]
		ref := metav1.GetControllerOfNoCopy(rs)
		if ref != nil && ref.UID == ro.UID && rs.Labels[PodTemplateHashLabel] == hash {
			return rs
		}
	}
	return nil
}

// observedGeneration parses status.observedGeneration, which the Rollouts
// controller writes as a decimal string.
func observedGeneration(s string) (int64, bool) {
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

func pauseReasons(pcs []PauseCondition) string {
	if len(pcs) == 0 {
		return "controller pause"
	}
	out := ""
	for i, pc := range pcs {
		if i > 0 {
			out += ", "
		}
		out += pc.Reason
	}
	return out
}

func timeOf(t *metav1.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func formatOrNone(t time.Time) string {
	if t.IsZero() {
		return "unset"
	}
	return t.Format(time.RFC3339)
}
