package workload

import (
	"fmt"
	"runtime"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// productionTemplate is a pod template of the size platform teams run: an
// application and a sidecar, environment from Secrets and ConfigMaps,
// probes, resources, mounts, affinity and tolerations.
func productionTemplate() corev1.PodTemplateSpec {
	env := make([]corev1.EnvVar, 0, 16)
	for i := range 12 {
		env = append(env, corev1.EnvVar{Name: fmt.Sprintf("APP_SETTING_%02d", i), Value: fmt.Sprintf("value-of-setting-%02d", i)})
	}
	for i := range 4 {
		env = append(env, corev1.EnvVar{Name: fmt.Sprintf("APP_SECRET_%d", i), ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "app-credentials"}, Key: fmt.Sprintf("key-%d", i)}}})
	}
	probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}},
		InitialDelaySeconds: 5, PeriodSeconds: 10, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3}
	res := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")},
	}
	mounts := []corev1.VolumeMount{{Name: "config", MountPath: "/etc/app"}, {Name: "tls", MountPath: "/etc/tls", ReadOnly: true}, {Name: "tmp", MountPath: "/tmp"}}
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{
			Labels:      map[string]string{"app.kubernetes.io/name": "checkout", "app.kubernetes.io/instance": "checkout-prod", "app.kubernetes.io/part-of": "shop", "app.kubernetes.io/version": "4.18.2", "team": "payments", "pod-template-hash": "7d9f8c6b5"},
			Annotations: map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": "9090", "kubectl.kubernetes.io/restartedAt": "2026-11-30T10:00:00Z"},
		},
		Spec: corev1.PodSpec{
			ServiceAccountName: "checkout",
			SecurityContext:    &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](10001), FSGroup: ptr.To[int64](10001)},
			Containers: []corev1.Container{{
				Name: "checkout", Image: "registry.example.com/shop/checkout:4.18.2", Env: env,
				EnvFrom:   []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "checkout-config"}}}},
				Ports:     []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}, {Name: "metrics", ContainerPort: 9090, Protocol: corev1.ProtocolTCP}},
				Resources: res, LivenessProbe: probe, ReadinessProbe: probe, VolumeMounts: mounts,
				SecurityContext:        &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
				TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: corev1.TerminationMessageReadFile, ImagePullPolicy: corev1.PullIfNotPresent,
			}, {
				Name: "proxy", Image: "registry.example.com/mesh/proxy:1.24.1", Args: []string{"proxy", "sidecar", "--log-level=warn"},
				Resources: res, VolumeMounts: mounts[:2], TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: corev1.TerminationMessageReadFile, ImagePullPolicy: corev1.PullIfNotPresent,
			}},
			Volumes: []corev1.Volume{
				{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "checkout-files"}, DefaultMode: ptr.To[int32](420)}}},
				{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "checkout-tls", DefaultMode: ptr.To[int32](420)}}},
				{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			},
			Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
				Weight: 100, PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: "kubernetes.io/hostname", LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": "checkout"}}},
			}}}},
			Tolerations:                   []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "shop", Effect: corev1.TaintEffectNoSchedule}},
			RestartPolicy:                 corev1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: ptr.To[int64](30),
			DNSPolicy:                     corev1.DNSClusterFirst,
			SchedulerName:                 "default-scheduler",
		},
	}
}

// BenchmarkReplicaSetCacheMemory reports the heap one cached ReplicaSet
// holds, decoded from its protobuf encoding as the informer decodes it,
// in full and after TransformReplicaSet.
func BenchmarkReplicaSetCacheMemory(b *testing.B) {
	rs := appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "checkout-7d9f8c6b5", UID: "3f0c2a8e-8d5b-4c41-9a57-0b6f8c1d2e3f", ResourceVersion: "18446744",
			Labels:          map[string]string{"app.kubernetes.io/name": "checkout", "pod-template-hash": "7d9f8c6b5"},
			Annotations:     map[string]string{"deployment.kubernetes.io/desired-replicas": "3", "deployment.kubernetes.io/max-replicas": "4", "deployment.kubernetes.io/revision": "12"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "checkout", UID: "9a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}},
		Spec:   appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](0), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": "checkout", "pod-template-hash": "7d9f8c6b5"}}, Template: productionTemplate()},
		Status: appsv1.ReplicaSetStatus{ObservedGeneration: 3},
	}
	wire, err := rs.Marshal()
	if err != nil {
		b.Fatal(err)
	}
	const n = 2000
	for _, mode := range []struct {
		name      string
		transform bool
	}{{"full", false}, {"compact", true}} {
		b.Run(mode.name, func(b *testing.B) {
			for b.Loop() {
				before := heapInUse()
				kept := make([]*appsv1.ReplicaSet, n)
				for i := range kept {
					var got appsv1.ReplicaSet
					if err := got.Unmarshal(wire); err != nil {
						b.Fatal(err)
					}
					if mode.transform {
						if _, err := TransformReplicaSet(&got); err != nil {
							b.Fatal(err)
						}
					}
					kept[i] = &got
				}
				after := heapInUse()
				b.ReportMetric(float64(after-before)/n, "heap-bytes/ReplicaSet")
				runtime.KeepAlive(kept)
			}
			b.ReportMetric(float64(len(wire)), "wire-bytes")
		})
	}
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
