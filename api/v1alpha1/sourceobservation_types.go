/*
Copyright 2026 The KICK Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package v1alpha1

import (
	"bytes"
	"crypto/sha256"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SourceKind is a kind of object whose content KICK observes.
// +kubebuilder:validation:Enum=Secret;ConfigMap;SecretProviderClass
type SourceKind string

const (
	SourceSecret    SourceKind = "Secret"
	SourceConfigMap SourceKind = "ConfigMap"
	// SourceSecretProviderClass is a Secrets Store CSI class; its content is
	// the set of object versions its pods report as mounted.
	SourceSecretProviderClass SourceKind = "SecretProviderClass"
)

// ObservationClass is how the last recorded observation was classified.
// +kubebuilder:validation:Enum=Baseline;Relevant
type ObservationClass string

const (
	// ObservationBaseline: first sighting; the change time is the source's
	// last recorded write, not the moment KICK saw it.
	ObservationBaseline ObservationClass = "Baseline"
	// ObservationRelevant: the content fingerprint changed; the change time
	// is when KICK observed it.
	ObservationRelevant ObservationClass = "Relevant"
)

// ObservedSource identifies the observed object; its namespace is the
// namespace of the record.
type ObservedSource struct {
	// APIVersion of the source, e.g. v1 or secrets-store.csi.x-k8s.io/v1.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	APIVersion string `json:"apiVersion"`
	// Kind of the source.
	// +required
	Kind SourceKind `json:"kind"`
	// Name of the source.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// SourceObservationSpec is everything KICK remembers about one source. It
// never holds source content: only resource versions, a change time and a
// keyed fingerprint.
type SourceObservationSpec struct {
	// Source is the observed object.
	// +required
	Source ObservedSource `json:"source"`

	// LastSeenResourceVersion is the resourceVersion of the latest
	// observation, relevant or not.
	// +optional
	LastSeenResourceVersion string `json:"lastSeenResourceVersion,omitempty"`

	// LastRelevantResourceVersion is the resourceVersion at which the
	// content fingerprint last changed (or was first recorded).
	// +optional
	LastRelevantResourceVersion string `json:"lastRelevantResourceVersion,omitempty"`

	// LastRelevantChangeTime is when the current content came to be, with
	// nanosecond precision: the source's last recorded write for a baseline,
	// or the moment KICK saw the content change.
	// +optional
	LastRelevantChangeTime *NanoTime `json:"lastRelevantChangeTime,omitempty"`

	// BaselineObservedAt is, for a baseline, the moment KICK first recorded
	// the content. The API server dates writes only to the second, so the
	// content came to be somewhere between lastRelevantChangeTime and the
	// end of that second, and no later than this moment; KICK uses that
	// bound against its own sub-second restart stamps.
	// +optional
	BaselineObservedAt *NanoTime `json:"baselineObservedAt,omitempty"`

	// RelevantFingerprint is the hex HMAC of the content that matters
	// (data, type, immutability), keyed with the installation's secret key.
	// It is never a plain hash of the data.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[0-9a-f]*$`
	RelevantFingerprint string `json:"relevantFingerprint,omitempty"`

	// FingerprintKeyID identifies the key that produced RelevantFingerprint
	// (not the key itself). When the key changes, fingerprints cannot be
	// compared and the observer records a new baseline instead of reporting
	// a change.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	FingerprintKeyID string `json:"fingerprintKeyID,omitempty"`

	// Class is how the observation that last set the relevant fields was
	// classified.
	// +optional
	Class ObservationClass `json:"class,omitempty"`

	// Keys is the per-key memory of a Secret or ConfigMap: when each key
	// last changed, under keyed hashes of the key names and values. It is
	// absent in records written before KICK kept it (the observer adds it
	// at its next look, without announcing a change) and for
	// SecretProviderClasses, whose mounts KICK sees only as a whole.
	// +optional
	Keys *KeyHistory `json:"keys,omitempty"`
}

// MaxKeyEntries bounds the per-key entries of one record. A source with
// more keys is remembered as a whole (KeyHistory.Count only), and every
// change of it counts for every consumer, as with spec.restart.keys All.
const MaxKeyEntries = 256

// KeyHistory is what KICK remembers about the keys of one source. It never
// holds a key name or value: entries are named by an HMAC of the key name
// and carry an HMAC of the value, both keyed with the installation's
// fingerprint key (fingerprintKeyID).
type KeyHistory struct {
	// Count is how many keys the source held at the last observation.
	// +kubebuilder:validation:Minimum=0
	Count int32 `json:"count"`

	// BaselineFrom and BaselineTo bound when the keys whose entries carry
	// no change time came to be: the record's change when its per-key
	// history began (a first observation, an upgrade from a record
	// without one, or a new fingerprint key). BaselineTo is omitted when
	// the moment is exact.
	// +optional
	BaselineFrom *NanoTime `json:"baselineFrom,omitempty"`
	// +optional
	BaselineTo *NanoTime `json:"baselineTo,omitempty"`

	// Removed is when a key last disappeared from the source. A workload
	// that reads a key the source does not hold counts it.
	// +optional
	Removed *NanoTime `json:"removed,omitempty"`

	// Order is how Entries are ordered. NameSHA256: by the SHA-256 of the
	// key names (see SortKeyNames), so that whoever can read the source can
	// line its keys up with the entries (kubectl kick explain does, with
	// the caller's own rights) while a rank says nothing useful about a
	// name to anyone else. Empty in records written by the first manager
	// that kept per-key history (entries in the order of their ids); the
	// observer reorders them at its next look, without announcing a change.
	// +optional
	Order KeyOrder `json:"order,omitempty"`

	// Entries are the keys, in Order; empty when Count exceeds
	// MaxKeyEntries (256).
	// +optional
	// +kubebuilder:validation:MaxItems=256
	Entries []KeyObservation `json:"entries,omitempty"`
}

// KeyOrder is an order of a KeyHistory's entries.
// +kubebuilder:validation:Enum=NameSHA256
type KeyOrder string

// KeyOrderNameSHA256 orders entries by the SHA-256 of their key names.
const KeyOrderNameSHA256 KeyOrder = "NameSHA256"

// SortKeyNames sorts the key names of a source into the order of a
// KeyHistory's entries (KeyOrderNameSHA256): entry i is the key names[i].
// The digest is not keyed, and is never stored: the order tells a reader
// of the record who cannot read the source the number of keys and, for a
// key whose entry it can single out, where its digest ranks, which can
// rule out a guessed name but never confirm one.
func SortKeyNames(names []string) {
	digests := make(map[string][sha256.Size]byte, len(names))
	for _, n := range names {
		digests[n] = sha256.Sum256([]byte(n))
	}
	slices.SortFunc(names, func(a, b string) int {
		da, db := digests[a], digests[b]
		if c := bytes.Compare(da[:], db[:]); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
}

// Ordered reports whether the history's entries are in the order of
// SortKeyNames, so that a reader of the source can find a key's entry.
func (h *KeyHistory) Ordered() bool {
	return h.Usable() && h.Order == KeyOrderNameSHA256
}

// Usable reports whether the history can be compared key by key: it exists
// and lists every key of the source.
func (h *KeyHistory) Usable() bool {
	return h != nil && h.Count <= MaxKeyEntries && len(h.Entries) == int(h.Count)
}

// KeyObservation is one key of a source.
type KeyObservation struct {
	// ID is 16 hex digits of an HMAC of the key name, bound to the source's
	// namespace, kind and name.
	// +kubebuilder:validation:Pattern=`^[0-9a-f]{16}$`
	ID string `json:"id"`
	// Fingerprint is 16 hex digits of an HMAC of the key's value, bound to
	// the source object.
	// +kubebuilder:validation:Pattern=`^[0-9a-f]{16}$`
	Fingerprint string `json:"fp"`
	// Changed is when KICK saw this key's value change or the key appear;
	// absent when it has not changed since the history began (see
	// BaselineFrom).
	// +optional
	Changed *NanoTime `json:"changed,omitempty"`
}

// SourceObservation is KICK's durable memory of one Secret, ConfigMap or
// SecretProviderClass, kept in the source's namespace so that changes made
// while the manager was down are still recognised. The manager owns these
// objects and rewrites them whole; they have no status.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=kobs
// +kubebuilder:printcolumn:name="Kind",type=string,JSONPath=`.spec.source.kind`
// +kubebuilder:printcolumn:name="Source",type=string,JSONPath=`.spec.source.name`
// +kubebuilder:printcolumn:name="Changed",type=date,JSONPath=`.spec.lastRelevantChangeTime`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type SourceObservation struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the recorded observation.
	// +required
	Spec SourceObservationSpec `json:"spec"`
}

// SourceObservationList is a list of SourceObservation.
// +kubebuilder:object:root=true
type SourceObservationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SourceObservation `json:"items"`
}

func init() {
	register(&SourceObservation{}, &SourceObservationList{})
}
