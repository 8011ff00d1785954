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
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// HoldKind is what a KickHold freezes: every restart of its namespace, the
// restarts that would bring in a change of one source, or every restart of
// one workload.
// +kubebuilder:validation:Enum=Namespace;Secret;ConfigMap;SecretProviderClass;Deployment;StatefulSet;DaemonSet;Rollout
type HoldKind string

const (
	HoldNamespace           HoldKind = "Namespace"
	HoldSecret              HoldKind = "Secret"
	HoldConfigMap           HoldKind = "ConfigMap"
	HoldSecretProviderClass HoldKind = "SecretProviderClass"
	HoldDeployment          HoldKind = "Deployment"
	HoldStatefulSet         HoldKind = "StatefulSet"
	HoldDaemonSet           HoldKind = "DaemonSet"
	HoldRollout             HoldKind = "Rollout"
)

// HoldKinds lists every kind a hold can name, sources first.
func HoldKinds() []HoldKind {
	return []HoldKind{HoldNamespace, HoldSecret, HoldConfigMap, HoldSecretProviderClass,
		HoldDeployment, HoldStatefulSet, HoldDaemonSet, HoldRollout}
}

// IsSource reports whether the kind names a Secret, ConfigMap or
// SecretProviderClass: the hold then freezes the changes of that source.
func (k HoldKind) IsSource() bool {
	return k == HoldSecret || k == HoldConfigMap || k == HoldSecretProviderClass
}

// HoldTarget names what a hold freezes, always in the hold's own namespace.
// +kubebuilder:validation:XValidation:rule="self.kind == 'Namespace' ? !has(self.name) || size(self.name) == 0 : has(self.name) && size(self.name) > 0",message="name is required for every kind but Namespace, and must be empty for Namespace (a hold of kind Namespace freezes the hold's own namespace)"
type HoldTarget struct {
	// Kind is Namespace (every restart in the hold's namespace), a source
	// kind (Secret, ConfigMap, SecretProviderClass: the restarts that would
	// bring in a change of that source) or a workload kind (every restart
	// of that workload).
	// +required
	Kind HoldKind `json:"kind"`

	// Name is the source's or workload's name; empty for Namespace.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)?$`
	Name string `json:"name,omitempty"`
}

// String is "Kind/name", or "Namespace" for a namespace-wide hold.
func (t HoldTarget) String() string {
	if t.Kind == HoldNamespace {
		return string(HoldNamespace)
	}
	return string(t.Kind) + "/" + t.Name
}

// KickHoldSpec says what a hold freezes and why.
type KickHoldSpec struct {
	// Target is what the hold freezes, in the hold's namespace. It cannot
	// be changed: release the hold and create another.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="target is immutable; release this hold and create a new one"
	Target HoldTarget `json:"target"`

	// Reason says why restarts are frozen, for example an incident ticket.
	// Every restart the hold keeps waiting shows it; do not put secrets in
	// it.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Reason string `json:"reason"`

	// ExpiresAt ends the hold without anyone releasing it; unset, the hold
	// lasts until the KickHold is deleted.
	// +optional
	ExpiresAt *metav1.Time `json:"expiresAt,omitempty"`
}

// KickHold freezes KICK's restarts during an incident: while it exists
// (and has not expired), the restarts it names wait in phase
// WaitingForGate with reason Held, and run once it is deleted. It acts
// only in its own namespace.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName={khold},categories=kick
// +kubebuilder:printcolumn:name="Kind",type=string,JSONPath=`.spec.target.kind`
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.spec.target.name`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.spec.reason`
// +kubebuilder:printcolumn:name="Expires",type=string,JSONPath=`.spec.expiresAt`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type KickHold struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec says what is held and why.
	// +required
	Spec KickHoldSpec `json:"spec"`
}

// KickHoldList is a list of KickHold.
// +kubebuilder:object:root=true
type KickHoldList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []KickHold `json:"items"`
}

func init() {
	register(&KickHold{}, &KickHoldList{})
}

// Active reports whether the hold freezes restarts at now: it is not being
// deleted and has not expired.
func (h *KickHold) Active(now time.Time) bool {
	if h.DeletionTimestamp != nil {
		return false
	}
	return h.Spec.ExpiresAt == nil || now.Before(h.Spec.ExpiresAt.Time)
}

// HoldName is the name `kubectl kick hold` gives the hold of a target, so
// that `kubectl kick release` finds it again: "hold-namespace", or
// "hold-<kind>-<name>" (lower case), cut to a valid object name.
func HoldName(t HoldTarget) string {
	if t.Kind == HoldNamespace {
		return "hold-namespace"
	}
	name := "hold-" + strings.ToLower(string(t.Kind)) + "-" + t.Name
	if len(name) > 253 {
		name = strings.TrimRight(name[:253], "-.")
	}
	return name
}
