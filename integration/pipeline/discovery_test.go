package pipeline

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/integration/fixture"
)

// TestEveryDiscoveryPathTriggers changes, one at a time, a source reached
// through each kind of reference — env valueFrom (Secret and ConfigMap),
// envFrom in an init container, a Secret volume, a ConfigMap volume, a
// projected volume, and an optional reference to a Secret created later —
// and expects one restart per change; a change to an imagePullSecret
// restarts nothing.
func TestEveryDiscoveryPathTriggers(t *testing.T) {
	f := fixture.Setup(t)
	f.Policy("all", selectAll+"\nrestart: {minInterval: 0s}")
	for _, s := range []string{"env-secret", "init-secret", "vol-secret", "proj-secret", "pull-secret"} {
		f.Secret(s, map[string]string{"k": "1"}, nil)
	}
	for _, c := range []string{"env-cm", "vol-cm", "proj-cm"} {
		f.ConfigMap(c, map[string]string{"k": "1"})
	}
	spec := corev1.PodSpec{
		ImagePullSecrets: []corev1.LocalObjectReference{{Name: "pull-secret"}},
		InitContainers: []corev1.Container{{Name: "init", Image: "registry.k8s.io/pause:3.10",
			EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "init-secret"}}}}}},
		Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10", Env: []corev1.EnvVar{
			{Name: "A", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "env-secret"}, Key: "k"}}},
			{Name: "B", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "env-cm"}, Key: "k"}}},
			{Name: "C", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "later"}, Key: "k", Optional: ptr.To(true)}}},
		}}},
		Volumes: []corev1.Volume{
			{Name: "v1", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "vol-secret"}}},
			{Name: "v2", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "vol-cm"}}}},
			{Name: "v3", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "proj-secret"}}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "proj-cm"}}},
			}}}},
		},
	}
	f.Deployment("web", 1, spec)
	f.WaitAvailable("web")

	restarts := int32(0)
	expectRestart := func(what string, change func()) {
		t.Helper()
		change()
		restarts++
		want := restarts
		cluster.Eventually(t, 60*time.Second, fmt.Sprintf("restart %d after changing %s", want, what), func() (bool, error) {
			kr, err := f.Request("deployment-web")
			if err != nil {
				return false, err
			}
			return kr.Status.RestartCount == want && kr.Status.Phase == kickv1alpha1.PhaseSucceeded, fmt.Errorf("restartCount %d phase %s", kr.Status.RestartCount, kr.Status.Phase)
		})
	}
	for _, s := range []string{"env-secret", "init-secret", "vol-secret", "proj-secret"} {
		f.WaitObservation(s)
		expectRestart("Secret "+s, func() { f.SetSecret(s, map[string]string{"k": "2"}) })
	}
	for _, c := range []string{"env-cm", "vol-cm", "proj-cm"} {
		expectRestart("ConfigMap "+c, func() { f.SetConfigMap(c, map[string]string{"k": "2"}) })
	}
	expectRestart("the optional Secret, created now", func() { f.Secret("later", map[string]string{"k": "1"}, nil) })

	f.SetSecret("pull-secret", map[string]string{"k": "2"})
	f.Barrier()
	if kr, _ := f.Request("deployment-web"); kr.Status.RestartCount != restarts {
		t.Fatalf("an imagePullSecret change restarted the workload: restartCount %d, want %d", kr.Status.RestartCount, restarts)
	}
	var rec kickv1alpha1.SourceObservation
	if err := f.Env.Client.Get(f.Ctx, client.ObjectKey{Namespace: f.NS, Name: kickv1alpha1.ObservationName("Secret", "pull-secret")}, &rec); err == nil {
		t.Fatal("an imagePullSecret got an observation record")
	}
}
