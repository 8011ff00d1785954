package discovery

import (
	"cmp"
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func secret(name string) Dependency {
	return Dependency{APIVersion: "v1", Kind: "Secret", Name: name}
}

func configMap(name string) Dependency {
	return Dependency{APIVersion: "v1", Kind: "ConfigMap", Name: name}
}

func spc(name string) Dependency {
	return Dependency{APIVersion: "secrets-store.csi.x-k8s.io/v1", Kind: "SecretProviderClass", Name: name}
}

func secretEnv(name string) corev1.EnvVar {
	return corev1.EnvVar{Name: "S_" + name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: "k",
	}}}
}

func configMapEnv(name string) corev1.EnvVar {
	return corev1.EnvVar{Name: "C_" + name, ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: "k",
	}}}
}

func secretEnvFrom(name string) corev1.EnvFromSource {
	return corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}}
}

func configMapEnvFrom(name string) corev1.EnvFromSource {
	return corev1.EnvFromSource{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}}
}

func secretVolume(name string) corev1.Volume {
	return corev1.Volume{Name: "v-" + name, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: name}}}
}

func configMapVolume(name string) corev1.Volume {
	return corev1.Volume{Name: "v-" + name, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: name},
	}}}
}

func csiVolume(driver string, attrs map[string]string) corev1.Volume {
	return corev1.Volume{Name: "csi", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: driver, VolumeAttributes: attrs}}}
}

func TestFromPodSpec(t *testing.T) {
	tests := []struct {
		name string
		spec *corev1.PodSpec
		want []Dependency
	}{
		{name: "nil spec", spec: nil, want: nil},
		{name: "empty spec", spec: &corev1.PodSpec{}, want: nil},
		{
			name: "env valueFrom in a container",
			spec: &corev1.PodSpec{Containers: []corev1.Container{{Env: []corev1.EnvVar{
				{Name: "PLAIN", Value: "x"},
				secretEnv("db"),
				configMapEnv("settings"),
				{Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
			}}}},
			want: []Dependency{configMap("settings"), secret("db")},
		},
		{
			name: "envFrom in a container",
			spec: &corev1.PodSpec{Containers: []corev1.Container{{EnvFrom: []corev1.EnvFromSource{
				secretEnvFrom("creds"), configMapEnvFrom("flags"),
			}}}},
			want: []Dependency{configMap("flags"), secret("creds")},
		},
		{
			name: "init container env and envFrom",
			spec: &corev1.PodSpec{InitContainers: []corev1.Container{{
				Env:     []corev1.EnvVar{secretEnv("migrate")},
				EnvFrom: []corev1.EnvFromSource{configMapEnvFrom("init-flags")},
			}}},
			want: []Dependency{configMap("init-flags"), secret("migrate")},
		},
		{
			name: "ephemeral container env",
			spec: &corev1.PodSpec{EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
				Env:     []corev1.EnvVar{secretEnv("debug")},
				EnvFrom: []corev1.EnvFromSource{configMapEnvFrom("debug-flags")},
			}}}},
			want: []Dependency{configMap("debug-flags"), secret("debug")},
		},
		{
			name: "secret and configMap volumes",
			spec: &corev1.PodSpec{Volumes: []corev1.Volume{secretVolume("tls"), configMapVolume("nginx-conf")}},
			want: []Dependency{configMap("nginx-conf"), secret("tls")},
		},
		{
			name: "projected volume sources",
			spec: &corev1.PodSpec{Volumes: []corev1.Volume{{Name: "all", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{
					{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "p-secret"}}},
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "p-config"}}},
					{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
					{DownwardAPI: &corev1.DownwardAPIProjection{}},
				},
			}}}}},
			want: []Dependency{configMap("p-config"), secret("p-secret")},
		},
		{
			name: "secrets store CSI volume yields its SecretProviderClass",
			spec: &corev1.PodSpec{Volumes: []corev1.Volume{csiVolume("secrets-store.csi.k8s.io", map[string]string{"secretProviderClass": "vault-db"})}},
			want: []Dependency{spc("vault-db")},
		},
		{
			name: "secrets store CSI volume without the class attribute is skipped",
			spec: &corev1.PodSpec{Volumes: []corev1.Volume{csiVolume("secrets-store.csi.k8s.io", map[string]string{"other": "x"})}},
			want: nil,
		},
		{
			name: "other CSI drivers and their credential secret are not dependencies",
			spec: &corev1.PodSpec{Volumes: []corev1.Volume{{Name: "ebs", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{
				Driver:               "ebs.csi.aws.com",
				VolumeAttributes:     map[string]string{"secretProviderClass": "not-a-class"},
				NodePublishSecretRef: &corev1.LocalObjectReference{Name: "driver-creds"},
			}}}}},
			want: nil,
		},
		{
			name: "secrets store CSI nodePublishSecretRef is not a dependency",
			spec: &corev1.PodSpec{Volumes: []corev1.Volume{{Name: "ss", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{
				Driver:               "secrets-store.csi.k8s.io",
				VolumeAttributes:     map[string]string{"secretProviderClass": "azure-kv"},
				NodePublishSecretRef: &corev1.LocalObjectReference{Name: "kv-creds"},
			}}}}},
			want: []Dependency{spc("azure-kv")},
		},
		{
			name: "imagePullSecrets are never dependencies",
			spec: &corev1.PodSpec{
				ImagePullSecrets: []corev1.LocalObjectReference{{Name: "registry"}},
				Containers:       []corev1.Container{{Image: "x"}},
			},
			want: nil,
		},
		{
			name: "optional references still count",
			spec: &corev1.PodSpec{
				Containers: []corev1.Container{{
					Env: []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
						LocalObjectReference: corev1.LocalObjectReference{Name: "later"}, Key: "k", Optional: ptr.To(true),
					}}}},
					EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{
						LocalObjectReference: corev1.LocalObjectReference{Name: "maybe"}, Optional: ptr.To(true),
					}}},
				}},
				Volumes: []corev1.Volume{{Name: "o", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
					SecretName: "opt-vol", Optional: ptr.To(true),
				}}}},
			},
			want: []Dependency{configMap("maybe"), secret("later"), secret("opt-vol")},
		},
		{
			name: "empty names are ignored",
			spec: &corev1.PodSpec{
				Containers: []corev1.Container{{
					Env:     []corev1.EnvVar{secretEnv(""), configMapEnv("")},
					EnvFrom: []corev1.EnvFromSource{secretEnvFrom(""), configMapEnvFrom("")},
				}},
				Volumes: []corev1.Volume{secretVolume(""), configMapVolume(""), csiVolume("secrets-store.csi.k8s.io", map[string]string{"secretProviderClass": ""})},
			},
			want: nil,
		},
		{
			name: "duplicates across containers and volumes collapse, output sorted",
			spec: &corev1.PodSpec{
				InitContainers: []corev1.Container{{Env: []corev1.EnvVar{secretEnv("db")}}},
				Containers: []corev1.Container{
					{Env: []corev1.EnvVar{secretEnv("db"), configMapEnv("z")}, EnvFrom: []corev1.EnvFromSource{secretEnvFrom("db")}},
					{Env: []corev1.EnvVar{configMapEnv("a")}, EnvFrom: []corev1.EnvFromSource{configMapEnvFrom("z")}},
				},
				Volumes: []corev1.Volume{secretVolume("db"), configMapVolume("a"), secretVolume("b")},
			},
			want: []Dependency{configMap("a"), configMap("z"), secret("b"), secret("db")},
		},
		{
			name: "same name in different kinds are distinct",
			spec: &corev1.PodSpec{
				Containers: []corev1.Container{{Env: []corev1.EnvVar{secretEnv("app"), configMapEnv("app")}}},
				Volumes:    []corev1.Volume{csiVolume("secrets-store.csi.k8s.io", map[string]string{"secretProviderClass": "app"})},
			},
			want: []Dependency{configMap("app"), secret("app"), spc("app")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := FromPodSpec(tt.spec)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("FromPodSpec() = %v, want %v", got, tt.want)
			}
		})
	}
}

func compareDependency(a, b Dependency) int {
	if c := cmp.Compare(a.Kind, b.Kind); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Name, b.Name); c != 0 {
		return c
	}
	return cmp.Compare(a.APIVersion, b.APIVersion)
}

func TestFromPodSpecDeterministic(t *testing.T) {
	spec := realisticPodSpec()
	first := FromPodSpec(spec)
	if len(first) != 20 {
		t.Fatalf("realistic spec: got %d dependencies, want 20: %v", len(first), first)
	}
	if !slices.IsSortedFunc(first, compareDependency) {
		t.Fatalf("output not sorted: %v", first)
	}
	// Reversing the order of containers and volumes must not change the result.
	rev := spec.DeepCopy()
	slices.Reverse(rev.Containers)
	slices.Reverse(rev.Volumes)
	if got := FromPodSpec(rev); !slices.Equal(got, first) {
		t.Fatalf("order-dependent output:\n got %v\nwant %v", got, first)
	}
}

func TestFromPodSpecDoesNotMutateInput(t *testing.T) {
	spec := realisticPodSpec()
	before := spec.DeepCopy()
	_ = FromPodSpec(spec)
	if !reflect.DeepEqual(before, spec) {
		t.Fatal("FromPodSpec changed its input")
	}
}

func TestDependencyString(t *testing.T) {
	tests := []struct {
		dep  Dependency
		want string
	}{
		{secret("db"), "Secret/db"},
		{configMap("settings"), "ConfigMap/settings"},
		{spc("vault"), "SecretProviderClass/vault"},
	}
	for _, tt := range tests {
		if got := tt.dep.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
		if got := tt.dep.IndexKey(); got != tt.want {
			t.Errorf("IndexKey() = %q, want %q", got, tt.want)
		}
	}
}
