package observe

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/assess"
	"github.com/kick-operator/kick/restart/discovery"
	"github.com/kick-operator/kick/router"
)

// WithKeys upgrades a classification: content that did not change, under
// a record without any per-key history (written before KICK kept one) or
// with its entries in an older order, gets a current one now, quietly.
func WithKeys(c Class, rec *kickv1alpha1.SourceObservation, o Observed) Class {
	if (c == NoChange || c == MetaOnly) && rec != nil && !currentKeys(rec) && o.Keys != nil {
		return Upgrade
	}
	return c
}

// currentKeys reports whether a record's per-key history is in the current
// shape: present, with its entries in the order of SortKeyNames.
func currentKeys(rec *kickv1alpha1.SourceObservation) bool {
	return rec.Spec.Keys != nil && rec.Spec.Keys.Order == kickv1alpha1.KeyOrderNameSHA256
}

// nextKeys is the per-key history after an observation of class, with the
// relevant fields of spec already updated.
//
// Each key keeps its change time while its print stays the same; a key
// whose print changed, or that appeared, is dated like the observation
// (spec.lastRelevantChangeTime), and a key that disappeared dates Removed.
// Without a history to compare with (a first observation, a record
// written before KICK kept one, a new fingerprint key, more keys than the
// bound) every key starts as a baseline dated like the record's current
// change: the same moment a whole-object comparison would use, so the
// upgrade neither restarts anything nor hides a change.
func nextKeys(prev *kickv1alpha1.SourceObservationSpec, class Class, keys *KeyPrints, spec *kickv1alpha1.SourceObservationSpec) *kickv1alpha1.KeyHistory {
	h := &kickv1alpha1.KeyHistory{Count: int32(keys.Count), Order: kickv1alpha1.KeyOrderNameSHA256}
	if keys.Count > kickv1alpha1.MaxKeyEntries {
		return h // remembered as a whole
	}
	var old *kickv1alpha1.KeyHistory
	if prev != nil && class != Baseline && class != Rebaseline && prev.Keys.Usable() {
		old = prev.Keys
	}
	h.Entries = make([]kickv1alpha1.KeyObservation, len(keys.Entries))
	copy(h.Entries, keys.Entries)
	if old == nil {
		c := assess.RecordedChange(spec)
		h.BaselineFrom = nanoPtr(c.Earliest)
		if c.Latest.After(c.Earliest) {
			h.BaselineTo = nanoPtr(c.Latest)
		}
		return h
	}
	h.BaselineFrom, h.BaselineTo, h.Removed = old.BaselineFrom, old.BaselineTo, old.Removed
	var theta time.Time
	if spec.LastRelevantChangeTime != nil {
		theta = spec.LastRelevantChangeTime.Time
	}
	before := make(map[string]*kickv1alpha1.KeyObservation, len(old.Entries))
	for i := range old.Entries {
		before[old.Entries[i].ID] = &old.Entries[i]
	}
	for i := range h.Entries {
		e := &h.Entries[i]
		if p, ok := before[e.ID]; ok {
			delete(before, e.ID)
			if p.Fingerprint == e.Fingerprint {
				e.Changed = p.Changed.DeepCopy()
				continue
			}
		}
		e.Changed = nanoPtr(theta)
	}
	if len(before) > 0 {
		h.Removed = nanoPtr(theta)
	}
	return h
}

// KeysUnread returns, for a change from the record spec prev to spec, which
// of the consumers' reads it leaves untouched: reads[i] false when
// consumer i reads only keys whose value, presence and absence the change
// did not alter. Without a per-key history to compare (see nextKeys) every
// consumer is touched; so is every consumer that reads every key. nameID
// is the key id of a name (Fingerprinter.KeyName bound to the source).
func KeysUnread(prev, spec *kickv1alpha1.SourceObservationSpec, reads []discovery.Keys, nameID func(string) string) []bool {
	unread := make([]bool, len(reads))
	if prev == nil || !prev.Keys.Usable() || !spec.Keys.Usable() || spec.LastRelevantChangeTime == nil {
		return unread
	}
	now := spec.LastRelevantChangeTime
	changed := map[string]bool{}
	present := map[string]bool{}
	for _, e := range spec.Keys.Entries {
		present[e.ID] = true
		if e.Changed != nil && e.Changed.Equal(now.Time) {
			changed[e.ID] = true
		}
	}
	for _, e := range prev.Keys.Entries {
		if !present[e.ID] {
			changed[e.ID] = true // removed
		}
	}
	for i, r := range reads {
		if r.All {
			continue
		}
		touched := false
		for _, name := range r.Names {
			if changed[nameID(name)] {
				touched = true
				break
			}
		}
		unread[i] = !touched
	}
	return unread
}

// keysUnread returns the consumers that read only keys of the source
// (kind, key) that the change from prev to spec left alone.
func (r *SourceReconciler) keysUnread(prev, spec *kickv1alpha1.SourceObservationSpec, kind string, key types.NamespacedName, consumers []consumer) []router.ObjectRef {
	if prev == nil || !prev.Keys.Usable() {
		return nil
	}
	reads := make([]discovery.Keys, len(consumers))
	for i, c := range consumers {
		reads[i] = discovery.Keys{All: true} // the safe side for a workload without a template of its own
		if t, ok := discovery.PodTemplate(c.obj); ok {
			src := discovery.Dependency{APIVersion: discovery.CoreAPIVersion, Kind: kind, Name: key.Name}
			if k, ok := discovery.KeysRead(&t.Spec)[src]; ok {
				reads[i] = k
			}
		}
	}
	nameID := func(name string) string { return r.Keys.KeyName(key.Namespace, kind, key.Name, name) }
	var out []router.ObjectRef
	for i, u := range KeysUnread(prev, spec, reads, nameID) {
		if u {
			out = append(out, consumers[i].ref)
		}
	}
	return out
}

// PreviewPrev prepares a stored record for previewing a write (the
// admission preflight): it returns a copy of prev whose per-key prints are
// old's, the prints of the object the write replaces, with each key's
// change time kept. Next(result, Relevant, an observation with the written
// object's prints, made the same way) then dates exactly the keys the
// write changes, comparing the written object with the one it replaces,
// never with a stored print (a dry run must not tell whether a guessed
// value is the stored one). old nil (a create), or a record without a
// usable history, returns prev as it is.
func (f *Fingerprinter) PreviewPrev(prev *kickv1alpha1.SourceObservationSpec, old *KeyPrints) *kickv1alpha1.SourceObservationSpec {
	if prev == nil || old == nil || !prev.Keys.Usable() || old.Count > kickv1alpha1.MaxKeyEntries {
		return prev
	}
	out := prev.DeepCopy()
	changed := make(map[string]*kickv1alpha1.NanoTime, len(prev.Keys.Entries))
	for _, e := range prev.Keys.Entries {
		changed[e.ID] = e.Changed
	}
	out.Keys.Count, out.Keys.Entries = int32(old.Count), slices.Clone(old.Entries)
	for i := range out.Keys.Entries {
		out.Keys.Entries[i].Changed = changed[out.Keys.Entries[i].ID].DeepCopy()
	}
	return out
}

// Prints returns the per-key prints of a Secret or ConfigMap; false for
// any other object.
func Prints(f *Fingerprinter, obj client.Object) (KeyPrints, bool) {
	switch o := obj.(type) {
	case *corev1.Secret:
		return f.SecretKeys(o), true
	case *corev1.ConfigMap:
		return f.ConfigMapKeys(o), true
	}
	return KeyPrints{}, false
}
