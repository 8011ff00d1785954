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
)

// Inspect reads a Rollout's rollout state. replicaSets may be any superset
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
func Inspect(ro *Rollout, replicaSets []appsv1.ReplicaSet) freshness.Rollout {
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

	desired := int32(1)
	if ro.Spec.Replicas != nil {
		desired = *ro.Spec.Replicas
	}
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
func currentReplicaSet(ro *Rollout, replicaSets []appsv1.ReplicaSet) *appsv1.ReplicaSet {
	hash := ro.Status.CurrentPodHash
	if hash == "" {
		return nil
	}
	for i := range replicaSets {
		rs := &replicaSets[i]
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
