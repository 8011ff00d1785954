package main

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/kick-operator/kick/restart/discovery"
)

// dependencyFields says where in a pod spec each dependency is referenced,
// e.g. "containers[app].envFrom" or "volumes[config]". It names
// containers and volumes only: never keys of a Secret or ConfigMap, nor
// environment variable names. discovery.FromPodSpec decides which
// dependencies count; this only labels them for people, so it walks the
// same references.
func dependencyFields(spec *corev1.PodSpec) map[discovery.Dependency][]string {
	out := map[discovery.Dependency][]string{}
	if spec == nil {
		return out
	}
	add := func(apiVersion, kind, name, field string) {
		if name == "" {
			return
		}
		d := discovery.Dependency{APIVersion: apiVersion, Kind: kind, Name: name}
		for _, f := range out[d] {
			if f == field {
				return
			}
		}
		out[d] = append(out[d], field)
	}
	secret := func(name, field string) { add(discovery.CoreAPIVersion, discovery.KindSecret, name, field) }
	configMap := func(name, field string) { add(discovery.CoreAPIVersion, discovery.KindConfigMap, name, field) }
	containers := func(list string, name string, env []corev1.EnvVar, envFrom []corev1.EnvFromSource) {
		prefix := list + "[" + name + "]"
		for i := range env {
			if from := env[i].ValueFrom; from != nil {
				if from.SecretKeyRef != nil {
					secret(from.SecretKeyRef.Name, prefix+".env")
				}
				if from.ConfigMapKeyRef != nil {
					configMap(from.ConfigMapKeyRef.Name, prefix+".env")
				}
			}
		}
		for i := range envFrom {
			if r := envFrom[i].SecretRef; r != nil {
				secret(r.Name, prefix+".envFrom")
			}
			if r := envFrom[i].ConfigMapRef; r != nil {
				configMap(r.Name, prefix+".envFrom")
			}
		}
	}
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		containers("initContainers", c.Name, c.Env, c.EnvFrom)
	}
	for i := range spec.Containers {
		c := &spec.Containers[i]
		containers("containers", c.Name, c.Env, c.EnvFrom)
	}
	for i := range spec.EphemeralContainers {
		c := &spec.EphemeralContainers[i]
		containers("ephemeralContainers", c.Name, c.Env, c.EnvFrom)
	}
	for i := range spec.Volumes {
		v := &spec.Volumes[i]
		field := "volumes[" + v.Name + "]"
		if v.Secret != nil {
			secret(v.Secret.SecretName, field)
		}
		if v.ConfigMap != nil {
			configMap(v.ConfigMap.Name, field)
		}
		if v.Projected != nil {
			for j := range v.Projected.Sources {
				p := &v.Projected.Sources[j]
				if p.Secret != nil {
					secret(p.Secret.Name, field+".projected")
				}
				if p.ConfigMap != nil {
					configMap(p.ConfigMap.Name, field+".projected")
				}
			}
		}
		if v.CSI != nil && v.CSI.Driver == discovery.SecretsStoreDriver {
			add(discovery.SecretsStoreAPIVersion, discovery.KindSecretProviderClass, v.CSI.VolumeAttributes[discovery.SecretProviderClassAttribute], field+".csi")
		}
	}
	return out
}
