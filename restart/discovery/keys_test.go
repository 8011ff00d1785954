package discovery

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func keyRef(secretName, key string, optional bool) corev1.EnvVar {
	sel := &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: secretName}, Key: key}
	if optional {
		sel.Optional = ptr.To(true)
	}
	return corev1.EnvVar{Name: "E_" + key, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: sel}}
}

func names(n ...string) Keys { return Keys{Names: n} }

var every = Keys{All: true}

func TestKeysRead(t *testing.T) {
	items := func(kv ...string) []corev1.KeyToPath {
		var out []corev1.KeyToPath
		for i := 0; i < len(kv); i += 2 {
			out = append(out, corev1.KeyToPath{Key: kv[i], Path: kv[i+1]})
		}
		return out
	}
	secretVol := func(vol, secret string, it []corev1.KeyToPath) corev1.Volume {
		return corev1.Volume{Name: vol, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret, Items: it}}}
	}
	mountAt := func(vol, subPath string) corev1.VolumeMount {
		return corev1.VolumeMount{Name: vol, MountPath: "/m/" + subPath, SubPath: subPath}
	}
	tests := []struct {
		name string
		spec *corev1.PodSpec
		want map[Dependency]Keys
	}{
		{name: "nil", spec: nil, want: nil},
		{name: "nothing consumed", spec: &corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}, want: nil},
		{
			name: "secretKeyRef and configMapKeyRef read one key each, sorted and once",
			spec: &corev1.PodSpec{Containers: []corev1.Container{{Env: []corev1.EnvVar{
				keyRef("db", "password", false), keyRef("db", "host", false), keyRef("db", "password", false),
				{Name: "C", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}, Key: "level"}}},
			}}}},
			want: map[Dependency]Keys{secret("db"): names("host", "password"), configMap("settings"): names("level")},
		},
		{
			name: "envFrom reads every key and absorbs single keys",
			spec: &corev1.PodSpec{Containers: []corev1.Container{
				{Env: []corev1.EnvVar{keyRef("db", "password", false)}},
				{EnvFrom: []corev1.EnvFromSource{secretEnvFrom("db"), configMapEnvFrom("flags")}},
				{Env: []corev1.EnvVar{keyRef("db", "host", false)}},
			}},
			want: map[Dependency]Keys{secret("db"): every, configMap("flags"): every},
		},
		{
			name: "init containers (sidecars) and ephemeral containers count",
			spec: &corev1.PodSpec{
				InitContainers: []corev1.Container{{Name: "proxy", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways),
					Env: []corev1.EnvVar{keyRef("db", "tls", false)}}},
				EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
					Env: []corev1.EnvVar{keyRef("debug", "token", false)}}}},
			},
			want: map[Dependency]Keys{secret("db"): names("tls"), secret("debug"): names("token")},
		},
		{
			name: "optional key refs count",
			spec: &corev1.PodSpec{Containers: []corev1.Container{{Env: []corev1.EnvVar{keyRef("db", "later", true)}}}},
			want: map[Dependency]Keys{secret("db"): names("later")},
		},
		{
			name: "volume with items reads the listed keys",
			spec: &corev1.PodSpec{
				Containers: []corev1.Container{{VolumeMounts: []corev1.VolumeMount{{Name: "tls", MountPath: "/tls"}}}},
				Volumes:    []corev1.Volume{secretVol("tls", "certs", items("tls.crt", "cert.pem", "tls.key", "key.pem"))},
			},
			want: map[Dependency]Keys{secret("certs"): names("tls.crt", "tls.key")},
		},
		{
			name: "whole volume mounted without subPath reads every key",
			spec: &corev1.PodSpec{
				Containers: []corev1.Container{{VolumeMounts: []corev1.VolumeMount{{Name: "tls", MountPath: "/tls"}}}},
				Volumes:    []corev1.Volume{secretVol("tls", "certs", nil)},
			},
			want: map[Dependency]Keys{secret("certs"): every},
		},
		{
			name: "a volume no container mounts reads every key (the safe side)",
			spec: &corev1.PodSpec{Volumes: []corev1.Volume{secretVol("tls", "certs", nil)}},
			want: map[Dependency]Keys{secret("certs"): every},
		},
		{
			name: "subPath of a whole volume reads the key its first element names",
			spec: &corev1.PodSpec{
				InitContainers: []corev1.Container{{VolumeMounts: []corev1.VolumeMount{mountAt("cfg", "./app.yaml")}}},
				Containers:     []corev1.Container{{VolumeMounts: []corev1.VolumeMount{mountAt("cfg", "log.yaml"), mountAt("cfg", "dir/inner")}}},
				Volumes: []corev1.Volume{{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: "conf"}}}}},
			},
			want: map[Dependency]Keys{configMap("conf"): names("app.yaml", "dir", "log.yaml")},
		},
		{
			name: "one whole mount next to subPath mounts reads every key",
			spec: &corev1.PodSpec{
				Containers: []corev1.Container{
					{VolumeMounts: []corev1.VolumeMount{mountAt("tls", "tls.crt")}},
					{VolumeMounts: []corev1.VolumeMount{{Name: "tls", MountPath: "/all"}}},
				},
				Volumes: []corev1.Volume{secretVol("tls", "certs", nil)},
			},
			want: map[Dependency]Keys{secret("certs"): every},
		},
		{
			name: "subPathExpr and the kubelet's ..data read every key",
			spec: &corev1.PodSpec{
				Containers: []corev1.Container{{VolumeMounts: []corev1.VolumeMount{
					{Name: "a", MountPath: "/a", SubPathExpr: "$(POD)"}, mountAt("b", "..data/x"),
				}}},
				Volumes: []corev1.Volume{secretVol("a", "one", nil), secretVol("b", "two", nil)},
			},
			want: map[Dependency]Keys{secret("one"): every, secret("two"): every},
		},
		{
			name: "subPath into a volume with items reads the items under it",
			spec: &corev1.PodSpec{
				Containers: []corev1.Container{{VolumeMounts: []corev1.VolumeMount{mountAt("tls", "pem")}}},
				Volumes:    []corev1.Volume{secretVol("tls", "certs", items("tls.crt", "pem/cert", "tls.key", "pem/key", "ca.crt", "ca"))},
			},
			want: map[Dependency]Keys{secret("certs"): names("tls.crt", "tls.key")},
		},
		{
			name: "projected sources with and without items",
			spec: &corev1.PodSpec{
				Containers: []corev1.Container{{VolumeMounts: []corev1.VolumeMount{{Name: "p", MountPath: "/p"}}}},
				Volumes: []corev1.Volume{{Name: "p", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
					{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Items: items("a", "a")}},
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "c"}}},
				}}}}},
			},
			want: map[Dependency]Keys{secret("s"): names("a"), configMap("c"): every},
		},
		{
			name: "binaryData keys are keys like the others",
			spec: &corev1.PodSpec{
				Containers: []corev1.Container{{VolumeMounts: []corev1.VolumeMount{mountAt("bin", "logo.png")}}},
				Volumes: []corev1.Volume{{Name: "bin", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: "assets"}}}}},
			},
			want: map[Dependency]Keys{configMap("assets"): names("logo.png")},
		},
		{
			name: "CSI classes and image pull secrets carry no keys",
			spec: &corev1.PodSpec{
				ImagePullSecrets: []corev1.LocalObjectReference{{Name: "registry"}},
				Volumes:          []corev1.Volume{csiVolume(SecretsStoreDriver, map[string]string{SecretProviderClassAttribute: "vault"})},
			},
			want: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := KeysRead(tt.spec); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("KeysRead() = %v, want %v", got, tt.want)
			}
		})
	}
}

// Every Secret and ConfigMap that FromPodSpec returns has an entry in
// KeysRead, and nothing else has.
func TestKeysReadCoversDependencies(t *testing.T) {
	spec := realisticPodSpec()
	reads := KeysRead(spec)
	n := 0
	for _, d := range FromPodSpec(spec) {
		if d.Kind == KindSecretProviderClass {
			continue
		}
		n++
		if _, ok := reads[d]; !ok {
			t.Errorf("KeysRead lacks %s", d)
		}
	}
	if len(reads) != n {
		t.Fatalf("KeysRead has %d entries, want %d: %v", len(reads), n, reads)
	}
}

func TestKeysReads(t *testing.T) {
	if !every.Reads("x") || !names("a", "b").Reads("b") || names("a", "b").Reads("c") || (Keys{}).Reads("a") {
		t.Fatal("Keys.Reads")
	}
}
