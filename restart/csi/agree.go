package csi

import "github.com/kick-operator/kick/restart/observe"

// Mount is what one pod reports for one class: the keyed fingerprint of its
// mounted object versions (never the versions themselves).
type Mount struct {
	Fingerprint string
}

// MountOf reads a pod status: the fingerprint of its versions.
// ok is false when the status says nothing usable yet (not mounted).
func MountOf(keys *observe.Fingerprinter, s *SecretProviderClassPodStatus) (Mount, bool) {
	if !s.Status.Mounted || s.Status.PodName == "" {
		return Mount{}, false
	}
	objs := make([]observe.MountedObject, len(s.Status.Objects))
	for i, o := range s.Status.Objects {
		objs[i] = observe.MountedObject{ID: o.ID, Version: o.Version}
	}
	return Mount{Fingerprint: keys.Mounted(objs)}, true
}

// Agreement is the verdict over the current pods of one workload for one
// class.
type Agreement struct {
	// Agreed is set when every pod reports the same versions (and there is
	// at least one pod); Fingerprint is then that set's fingerprint.
	Agreed      bool
	Fingerprint string
	// Pods is the number of pods; Distinct the number of different version
	// sets among them (more than one while a rotation is under way).
	Pods, Distinct int
}

// Agree decides whether the pods of a workload agree on their mounted
// versions. A rotation reaches pods one at a time, so until they agree
// there is no single new content to compare with the record.
func Agree(mounts []Mount) Agreement {
	a := Agreement{Pods: len(mounts)}
	seen := map[string]bool{}
	for _, m := range mounts {
		if !seen[m.Fingerprint] {
			seen[m.Fingerprint] = true
			a.Distinct++
		}
	}
	if a.Distinct == 1 {
		a.Agreed, a.Fingerprint = true, mounts[0].Fingerprint
	}
	return a
}
