package discovery

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// realisticPodSpec is a typical production pod: an init container, an app
// with a sidecar and a log shipper, plain env, downward API, service account
// token, emptyDir and image pull secrets next to 20 distinct data sources
// (several referenced more than once).
func realisticPodSpec() *corev1.PodSpec {
	plain := []corev1.EnvVar{
		{Name: "LOG_LEVEL", Value: "info"},
		{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		{Name: "MEM", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.memory"}}},
	}
	with := func(extra ...corev1.EnvVar) []corev1.EnvVar {
		return append(append([]corev1.EnvVar{}, plain...), extra...)
	}
	return &corev1.PodSpec{
		ImagePullSecrets: []corev1.LocalObjectReference{{Name: "registry"}, {Name: "mirror"}},
		InitContainers: []corev1.Container{{
			Name:    "migrate",
			Env:     with(secretEnv("db-admin"), secretEnv("db"), configMapEnv("migrations")),
			EnvFrom: []corev1.EnvFromSource{configMapEnvFrom("app-env")},
		}},
		Containers: []corev1.Container{
			{
				Name: "app",
				Env: with(secretEnv("db"), secretEnv("redis"), secretEnv("smtp"), secretEnv("oauth"), secretEnv("sentry"),
					configMapEnv("features"), configMapEnv("limits")),
				EnvFrom: []corev1.EnvFromSource{configMapEnvFrom("app-env"), secretEnvFrom("app-secrets")},
			},
			{
				Name:    "proxy",
				Env:     with(secretEnv("oauth"), configMapEnv("proxy-routes")),
				EnvFrom: []corev1.EnvFromSource{secretEnvFrom("proxy-tls")},
			},
			{
				Name: "logs",
				Env:  with(secretEnv("log-token"), configMapEnv("log-format")),
			},
		},
		Volumes: []corev1.Volume{
			{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			secretVolume("tls"),
			secretVolume("proxy-tls"),
			configMapVolume("nginx-conf"),
			configMapVolume("log-format"),
			{Name: "bundle", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "ca"}}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "trust"}}},
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
				{DownwardAPI: &corev1.DownwardAPIProjection{}},
			}}}},
			csiVolume("secrets-store.csi.k8s.io", map[string]string{"secretProviderClass": "vault-app"}),
		},
	}
}

func BenchmarkFromPodSpec(b *testing.B) {
	spec := realisticPodSpec()
	b.ReportAllocs()
	for b.Loop() {
		if deps := FromPodSpec(spec); len(deps) != 20 {
			b.Fatalf("got %d dependencies", len(deps))
		}
	}
}

func BenchmarkIndexFunc(b *testing.B) {
	d := deployment(realisticPodSpec())
	b.ReportAllocs()
	for b.Loop() {
		if keys := IndexFunc(d); len(keys) != 20 {
			b.Fatalf("got %d keys", len(keys))
		}
	}
}

func BenchmarkKeysRead(b *testing.B) {
	spec := realisticPodSpec()
	b.ReportAllocs()
	for b.Loop() {
		if reads := KeysRead(spec); len(reads) != 19 {
			b.Fatalf("got %d sources", len(reads))
		}
	}
}
