package rollout

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kick-operator/kick/restart/discovery"
	"github.com/kick-operator/kick/restart/freshness"
)

var (
	created  = time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	rsBorn   = time.Date(2026, 5, 1, 11, 0, 0, 0, time.UTC)
	restart1 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
)

// healthy is a 3-replica Rollout whose status says its controller finished.
func healthy() *Rollout {
	ro := &Rollout{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "ro-uid", Generation: 4, CreationTimestamp: metav1.NewTime(created)}}
	ro.Spec.Replicas = ptr.To[int32](3)
	ro.Status = Status{
		ObservedGeneration: "4", Replicas: 3, UpdatedReplicas: 3, ReadyReplicas: 3, AvailableReplicas: 3,
		CurrentPodHash: "abc", StableRS: "abc", Phase: "Healthy",
	}
	return ro
}

func replicaSet(owner string, hash string, born time.Time) appsv1.ReplicaSet {
	return appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{
		Name: "web-" + hash, Namespace: "shop", CreationTimestamp: metav1.NewTime(born),
		Labels:          map[string]string{PodTemplateHashLabel: hash},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "argoproj.io/v1alpha1", Kind: "Rollout", Name: "web", UID: "ro-uid", Controller: ptr.To(owner == "ro-uid")}},
	}}
}

func TestInspectStart(t *testing.T) {
	rss := freshness.ReplicaSetRefs(replicaSet("ro-uid", "old", created), replicaSet("ro-uid", "abc", rsBorn), replicaSet("other", "abc", restart1.Add(time.Hour)))
	rss[1].Status = appsv1.ReplicaSetStatus{Replicas: 3, ReadyReplicas: 3, AvailableReplicas: 3}

	r := Inspect(healthy(), rss)
	if !r.Complete || !r.Start.Equal(rsBorn) || !r.Since.Equal(rsBorn) || r.ReplicaSet != "web-abc" {
		t.Fatalf("no restart: %+v, want complete from the current ReplicaSet's creation", r)
	}

	// A finished restart moves σ to spec.restartAt.
	ro := healthy()
	ro.Spec.RestartAt = ptr.To(metav1.NewTime(restart1))
	ro.Status.RestartedAt = ptr.To(metav1.NewTime(restart1))
	r = Inspect(ro, rss)
	if !r.Complete || !r.Start.Equal(restart1) || !r.Since.Equal(restart1) {
		t.Fatalf("finished restart: %+v, want σ = restartAt", r)
	}
	if freshness.Decide(freshness.At(restart1.Add(-time.Millisecond)), r) != freshness.Fresh {
		t.Fatal("a change just before the restart time is not carried")
	}
	if freshness.Decide(freshness.At(restart1.Add(time.Millisecond)), r) != freshness.Stale {
		t.Fatal("a change just after the restart time is carried")
	}

	// A pending restart: σ is the requested time, but the rollout is not
	// complete and Since stays at what is provably in place.
	ro.Spec.RestartAt = ptr.To(metav1.NewTime(restart1.Add(time.Hour)))
	r = Inspect(ro, rss)
	if r.Complete || r.Reason != RestartPending || !r.Since.Equal(restart1) {
		t.Fatalf("pending restart: %+v", r)
	}

	// Nothing identifies the running revision: the Rollout's creation.
	r = Inspect(healthy(), nil)
	if !r.Complete || !r.Start.Equal(created) || !r.Since.Equal(created) {
		t.Fatalf("no ReplicaSets: %+v, want σ = creation", r)
	}
}

func TestInspectCompleteness(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*Rollout)
		reason string
	}{
		{"healthy", func(*Rollout) {}, ""},
		{"scaled to zero", func(r *Rollout) {
			r.Spec.Replicas = ptr.To[int32](0)
			r.Status.Replicas, r.Status.UpdatedReplicas, r.Status.AvailableReplicas = 0, 0, 0
		}, ""},
		{"replicas default to one", func(r *Rollout) {
			r.Spec.Replicas = nil
			r.Status.Replicas, r.Status.UpdatedReplicas, r.Status.AvailableReplicas = 1, 1, 1
		}, ""},
		{"spec paused", func(r *Rollout) { r.Spec.Paused = true }, freshness.Paused},
		{"generation not observed", func(r *Rollout) { r.Status.ObservedGeneration = "3" }, freshness.GenerationNotObserved},
		{"generation never observed", func(r *Rollout) { r.Status.ObservedGeneration = "" }, freshness.GenerationNotObserved},
		{"aborted", func(r *Rollout) { r.Status.Abort = true }, Aborted},
		{"paused at a step", func(r *Rollout) {
			r.Status.PauseConditions = []PauseCondition{{Reason: "CanaryPauseStep"}}
		}, freshness.Paused},
		{"controller pause", func(r *Rollout) { r.Status.ControllerPause = true }, freshness.Paused},
		{"restart never finished", func(r *Rollout) { r.Spec.RestartAt = ptr.To(metav1.NewTime(restart1)) }, RestartPending},
		{"restart finished earlier", func(r *Rollout) {
			r.Spec.RestartAt = ptr.To(metav1.NewTime(restart1))
			r.Status.RestartedAt = ptr.To(metav1.NewTime(restart1.Add(-time.Hour)))
		}, RestartPending},
		{"degraded", func(r *Rollout) { r.Status.Phase, r.Status.Message = "Degraded", "ProgressDeadlineExceeded" }, Degraded},
		{"progressing", func(r *Rollout) { r.Status.Phase = "Progressing" }, freshness.RolloutInProgress},
		{"phase paused", func(r *Rollout) { r.Status.Phase = "Paused" }, freshness.Paused},
		{"not all updated", func(r *Rollout) { r.Status.UpdatedReplicas = 2 }, freshness.RolloutInProgress},
		{"old replicas left", func(r *Rollout) { r.Status.Replicas = 4 }, freshness.RolloutInProgress},
		{"not all available", func(r *Rollout) { r.Status.AvailableReplicas = 2 }, freshness.RolloutInProgress},
		{"steps pending", func(r *Rollout) { r.Status.CurrentPodHash = "def" }, freshness.RolloutInProgress},
		{"blue-green cutover pending", func(r *Rollout) {
			r.Status.BlueGreen = &BlueGreen{ActiveSelector: "old"}
		}, freshness.RolloutInProgress},
		{"no phase reported, counts complete", func(r *Rollout) { r.Status.Phase = "" }, ""},
	} {
		ro := healthy()
		tc.mutate(ro)
		r := Inspect(ro, nil)
		if r.Complete != (tc.reason == "") || r.Reason != tc.reason {
			t.Errorf("%s: complete=%v reason=%q (%s), want reason %q", tc.name, r.Complete, r.Reason, r.Message, tc.reason)
		}
		if !r.Complete && r.Message == "" {
			t.Errorf("%s: no message", tc.name)
		}
	}
}

func TestRolloutTemplateAndWorkloadRef(t *testing.T) {
	ro := healthy()
	ro.Spec.Template = corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "app", EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}}}},
	}}}}
	deps := discovery.FromWorkload(ro)
	if len(deps) != 1 || deps[0].String() != "Secret/db" {
		t.Fatalf("dependencies of a Rollout = %v, want Secret/db", deps)
	}
	if got := discovery.IndexFunc(ro); strings.Join(got, ",") != "Secret/db" {
		t.Fatalf("index keys = %v", got)
	}
	if ro.ReferencedDeployment() != "" || Kind().Follows(ro) != nil {
		t.Fatal("a Rollout with its own template references a Deployment")
	}

	ro.Spec.WorkloadRef = &WorkloadRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "web-deploy"}
	if deps := discovery.FromWorkload(ro); deps != nil {
		t.Fatalf("a workloadRef Rollout has dependencies %v; they belong to the Deployment", deps)
	}
	if ro.ReferencedDeployment() != "web-deploy" {
		t.Fatalf("ReferencedDeployment = %q", ro.ReferencedDeployment())
	}
	if f := Kind().Follows(ro); len(f) != 1 || f[0].String() != "Deployment shop/web-deploy" {
		t.Fatalf("Follows = %v", f)
	}
	ro.Spec.WorkloadRef.Kind = "ReplicaSet"
	if ro.ReferencedDeployment() != "" {
		t.Fatal("a ReplicaSet reference counted as a Deployment")
	}
	var nilRollout *Rollout
	if _, ok := discovery.PodTemplate(nilRollout); ok {
		t.Fatal("a nil Rollout has a template")
	}
}
