package csi

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion of the Secrets Store CSI kinds.
var GroupVersion = schema.GroupVersion{Group: "secrets-store.csi.x-k8s.io", Version: "v1"}

// Kinds the integration needs, probed at start-up.
var (
	PodStatusKind = GroupVersion.WithKind("SecretProviderClassPodStatus")
	ClassKind     = GroupVersion.WithKind("SecretProviderClass")
)

// AddToScheme registers SecretProviderClassPodStatus and its list.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &SecretProviderClassPodStatus{}, &SecretProviderClassPodStatusList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}

// SecretProviderClassPodStatus is the part of the CSI driver's per-pod,
// per-class mount record that KICK reads. The driver writes one for every
// pod that mounts a class, owned by the pod, and updates its objects when
// it rotates the mount.
// +kubebuilder:object:generate=true
// +kubebuilder:object:root=true
type SecretProviderClassPodStatus struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Status PodStatus `json:"status,omitempty"`
}

// PodStatus says which class a pod mounted and which object versions.
// +kubebuilder:object:generate=true
type PodStatus struct {
	PodName                 string   `json:"podName,omitempty"`
	SecretProviderClassName string   `json:"secretProviderClassName,omitempty"`
	Mounted                 bool     `json:"mounted,omitempty"`
	Objects                 []Object `json:"objects,omitempty"`
}

// Object is one mounted object and its version.
// +kubebuilder:object:generate=true
type Object struct {
	ID      string `json:"id,omitempty"`
	Version string `json:"version,omitempty"`
}

// SecretProviderClassPodStatusList is a list of SecretProviderClassPodStatus.
// +kubebuilder:object:generate=true
// +kubebuilder:object:root=true
type SecretProviderClassPodStatusList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SecretProviderClassPodStatus `json:"items"`
}
