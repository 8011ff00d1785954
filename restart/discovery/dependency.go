package discovery

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Kinds and API versions of the sources a workload can consume.
const (
	KindSecret              = "Secret"
	KindConfigMap           = "ConfigMap"
	KindSecretProviderClass = "SecretProviderClass"

	CoreAPIVersion         = "v1"
	SecretsStoreAPIVersion = "secrets-store.csi.x-k8s.io/v1"

	// SecretsStoreDriver is the CSI driver name of the Secrets Store CSI driver.
	SecretsStoreDriver = "secrets-store.csi.k8s.io"
	// SecretProviderClassAttribute is the CSI volume attribute that names the class.
	SecretProviderClassAttribute = "secretProviderClass"
)

// Dependency is one source a workload consumes. It always lives in the
// workload's namespace, so the namespace is not part of it.
type Dependency struct {
	APIVersion string
	Kind       string
	Name       string
}

// String returns "Kind/name", e.g. "Secret/db".
func (d Dependency) String() string { return d.Kind + "/" + d.Name }

// IndexKey is the value under which the workload is filed in SourceIndex.
func (d Dependency) IndexKey() string { return IndexKey(d.Kind, d.Name) }

// FromPodSpec returns the sources the pod spec consumes as data, sorted by
// kind then name, each once.
//
// Counted: env[].valueFrom.secretKeyRef/configMapKeyRef and envFrom[] of
// containers, init containers and ephemeral containers; secret, configMap and
// projected (secret, configMap) volumes; CSI volumes of the Secrets Store
// driver, which yield their SecretProviderClass. References marked optional
// count too: the source may appear later and must then be evaluated.
//
// Not counted: imagePullSecrets and the credential Secrets of storage
// plugins (csi.nodePublishSecretRef, cephfs/rbd/iscsi/azureFile secrets, ...):
// they authenticate infrastructure and are not read by the application.
// Empty names are skipped.
func FromPodSpec(spec *corev1.PodSpec) []Dependency {
	if spec == nil {
		return nil
	}
	// Most pod specs reference a few sources (this runs on every workload
	// event, for the index and the handlers): start small.
	c := collector{refs: make([]ref, 0, 8)}
	for i := range spec.InitContainers {
		c.env(spec.InitContainers[i].Env, spec.InitContainers[i].EnvFrom)
	}
	for i := range spec.Containers {
		c.env(spec.Containers[i].Env, spec.Containers[i].EnvFrom)
	}
	for i := range spec.EphemeralContainers {
		c.env(spec.EphemeralContainers[i].Env, spec.EphemeralContainers[i].EnvFrom)
	}
	for i := range spec.Volumes {
		c.volume(&spec.Volumes[i])
	}
	if len(c.refs) == 0 {
		return nil
	}
	slices.SortFunc(c.refs, func(a, b ref) int {
		if a.kind != b.kind {
			return int(a.kind) - int(b.kind)
		}
		return strings.Compare(a.name, b.name)
	})
	c.refs = slices.Compact(c.refs)
	deps := make([]Dependency, len(c.refs))
	for i, r := range c.refs {
		deps[i] = Dependency{APIVersion: kinds[r.kind].apiVersion, Kind: kinds[r.kind].kind, Name: r.name}
	}
	return deps
}

// kindID numbers the source kinds in the order of their names, so sorting
// by (kindID, name) sorts by (Kind, Name).
type kindID uint8

const (
	configMapID kindID = iota
	secretID
	secretProviderClassID
)

var kinds = [...]struct{ apiVersion, kind string }{
	configMapID:           {CoreAPIVersion, KindConfigMap},
	secretID:              {CoreAPIVersion, KindSecret},
	secretProviderClassID: {SecretsStoreAPIVersion, KindSecretProviderClass},
}

// ref is a compact Dependency for collecting and sorting.
type ref struct {
	kind kindID
	name string
}

type collector struct{ refs []ref }

func (c *collector) add(kind kindID, name string) {
	if name != "" {
		c.refs = append(c.refs, ref{kind, name})
	}
}

func (c *collector) env(env []corev1.EnvVar, envFrom []corev1.EnvFromSource) {
	for i := range env {
		from := env[i].ValueFrom
		if from == nil {
			continue
		}
		if from.SecretKeyRef != nil {
			c.add(secretID, from.SecretKeyRef.Name)
		}
		if from.ConfigMapKeyRef != nil {
			c.add(configMapID, from.ConfigMapKeyRef.Name)
		}
	}
	for i := range envFrom {
		if r := envFrom[i].SecretRef; r != nil {
			c.add(secretID, r.Name)
		}
		if r := envFrom[i].ConfigMapRef; r != nil {
			c.add(configMapID, r.Name)
		}
	}
}

func (c *collector) volume(v *corev1.Volume) {
	src := &v.VolumeSource
	if src.Secret != nil {
		c.add(secretID, src.Secret.SecretName)
	}
	if src.ConfigMap != nil {
		c.add(configMapID, src.ConfigMap.Name)
	}
	if src.Projected != nil {
		for i := range src.Projected.Sources {
			p := &src.Projected.Sources[i]
			if p.Secret != nil {
				c.add(secretID, p.Secret.Name)
			}
			if p.ConfigMap != nil {
				c.add(configMapID, p.ConfigMap.Name)
			}
		}
	}
	if src.CSI != nil && src.CSI.Driver == SecretsStoreDriver {
		// A missing attribute yields an empty name, which add skips.
		c.add(secretProviderClassID, src.CSI.VolumeAttributes[SecretProviderClassAttribute])
	}
}
