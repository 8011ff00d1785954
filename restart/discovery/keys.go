package discovery

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Keys says which keys of a Secret or ConfigMap a workload reads.
type Keys struct {
	// All is set when the workload reads every key (envFrom, a volume
	// without items mounted whole): a key added or removed then changes
	// what it reads, as does any key's value.
	All bool
	// Names are the keys read, sorted, each once; empty when All.
	Names []string
}

// Reads reports whether k includes the key name.
func (k Keys) Reads(name string) bool {
	if k.All {
		return true
	}
	_, found := slices.BinarySearch(k.Names, name)
	return found
}

// KeysRead returns, for every Secret and ConfigMap the pod spec consumes
// (as FromPodSpec names it), the keys it reads:
//
//   - env[].valueFrom.secretKeyRef / configMapKeyRef read their key;
//   - a volume or projected source with items reads the listed keys;
//   - a volume without items that every container mounts with a subPath
//     reads the key that each subPath's first element names;
//   - envFrom, and a volume without items mounted whole (or with a
//     subPathExpr, or not mounted at all), read every key.
//
// Containers, init containers (sidecars among them) and ephemeral
// containers all count; optional references count like the others (a key
// that appears later is then a change). The result covers exactly the
// Secrets and ConfigMaps of FromPodSpec; it is nil for a spec without any.
func KeysRead(spec *corev1.PodSpec) map[Dependency]Keys {
	if spec == nil {
		return nil
	}
	r := keyReader{}
	if len(spec.Volumes) > 0 {
		r.mounts = mountsOf(spec)
	}
	for i := range spec.InitContainers {
		r.env(spec.InitContainers[i].Env, spec.InitContainers[i].EnvFrom)
	}
	for i := range spec.Containers {
		r.env(spec.Containers[i].Env, spec.Containers[i].EnvFrom)
	}
	for i := range spec.EphemeralContainers {
		r.env(spec.EphemeralContainers[i].Env, spec.EphemeralContainers[i].EnvFrom)
	}
	for i := range spec.Volumes {
		r.volume(&spec.Volumes[i])
	}
	if len(r.out) == 0 {
		return nil
	}
	for k, v := range r.out {
		if !v.All && len(v.Names) > 1 {
			slices.Sort(v.Names)
			v.Names = slices.Compact(v.Names)
			r.out[k] = v
		}
	}
	return r.out
}

// mount is how a volume is mounted across the pod's containers.
type mount struct {
	// whole: some container mounts the whole volume (no subPath, or a
	// subPathExpr KICK cannot evaluate).
	whole bool
	// firsts are the first path elements of the subPaths it is mounted at.
	firsts []string
}

// mountsOf collects the mounts of every volume, by volume name.
func mountsOf(spec *corev1.PodSpec) map[string]*mount {
	m := map[string]*mount{}
	add := func(vms []corev1.VolumeMount) {
		for i := range vms {
			vm := &vms[i]
			e := m[vm.Name]
			if e == nil {
				e = &mount{}
				m[vm.Name] = e
			}
			first, ok := firstElement(vm.SubPath)
			if vm.SubPathExpr != "" || !ok {
				e.whole = true
				continue
			}
			e.firsts = append(e.firsts, first)
		}
	}
	for i := range spec.InitContainers {
		add(spec.InitContainers[i].VolumeMounts)
	}
	for i := range spec.Containers {
		add(spec.Containers[i].VolumeMounts)
	}
	for i := range spec.EphemeralContainers {
		add(spec.EphemeralContainers[i].VolumeMounts)
	}
	return m
}

// firstElement is the first element of a subPath, and false when the
// subPath selects the whole volume or the kubelet's own layout (the
// "..data" link and the timestamped directories behind it).
func firstElement(subPath string) (string, bool) {
	p := strings.TrimLeft(subPath, "/")
	for strings.HasPrefix(p, "./") {
		p = strings.TrimLeft(p[2:], "/")
	}
	first, _, _ := strings.Cut(p, "/")
	if first == "" || first == "." || strings.HasPrefix(first, "..") {
		return "", false
	}
	return first, true
}

type keyReader struct {
	mounts map[string]*mount
	out    map[Dependency]Keys
}

func source(kind, name string) Dependency {
	return Dependency{APIVersion: CoreAPIVersion, Kind: kind, Name: name}
}

func (r *keyReader) all(kind, name string) {
	if name == "" {
		return
	}
	if r.out == nil {
		r.out = map[Dependency]Keys{}
	}
	r.out[source(kind, name)] = Keys{All: true}
}

func (r *keyReader) key(kind, name string, keys ...string) {
	if name == "" {
		return
	}
	if r.out == nil {
		r.out = map[Dependency]Keys{}
	}
	k := source(kind, name)
	cur, seen := r.out[k]
	if cur.All {
		return
	}
	if !seen {
		cur.Names = make([]string, 0, len(keys))
	}
	cur.Names = append(cur.Names, keys...)
	r.out[k] = cur
}

func (r *keyReader) env(env []corev1.EnvVar, envFrom []corev1.EnvFromSource) {
	for i := range env {
		from := env[i].ValueFrom
		if from == nil {
			continue
		}
		if s := from.SecretKeyRef; s != nil {
			r.key(KindSecret, s.Name, s.Key)
		}
		if c := from.ConfigMapKeyRef; c != nil {
			r.key(KindConfigMap, c.Name, c.Key)
		}
	}
	for i := range envFrom {
		if s := envFrom[i].SecretRef; s != nil {
			r.all(KindSecret, s.Name)
		}
		if c := envFrom[i].ConfigMapRef; c != nil {
			r.all(KindConfigMap, c.Name)
		}
	}
}

func (r *keyReader) volume(v *corev1.Volume) {
	m := r.mounts[v.Name]
	src := &v.VolumeSource
	if s := src.Secret; s != nil {
		r.source(KindSecret, s.SecretName, s.Items, m)
	}
	if c := src.ConfigMap; c != nil {
		r.source(KindConfigMap, c.Name, c.Items, m)
	}
	if p := src.Projected; p != nil {
		for i := range p.Sources {
			ps := &p.Sources[i]
			if ps.Secret != nil {
				r.source(KindSecret, ps.Secret.Name, ps.Secret.Items, m)
			}
			if ps.ConfigMap != nil {
				r.source(KindConfigMap, ps.ConfigMap.Name, ps.ConfigMap.Items, m)
			}
		}
	}
}

// source records what one volume source reads given how the volume is
// mounted (m nil: not mounted by any container).
func (r *keyReader) source(kind, name string, items []corev1.KeyToPath, m *mount) {
	whole := m == nil || m.whole
	switch {
	case len(items) == 0 && whole:
		r.all(kind, name)
	case len(items) == 0:
		// Files are named after their keys: the subPath names the key.
		r.key(kind, name, m.firsts...)
	case whole:
		for i := range items {
			r.key(kind, name, items[i].Key)
		}
	default:
		// Only the items under a mounted subPath are visible.
		read := false
		for i := range items {
			if first, ok := firstElement(items[i].Path); ok && slices.Contains(m.firsts, first) {
				r.key(kind, name, items[i].Key)
				read = true
			}
		}
		if !read {
			r.key(kind, name) // consumed, no key of it visible
		}
	}
}
