package rollout

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
)

// GroupVersion of the Rollout kind.
var GroupVersion = schema.GroupVersion{Group: "argoproj.io", Version: "v1alpha1"}

// GVK is the Rollout kind, probed at start-up.
var GVK = GroupVersion.WithKind("Rollout")

// AddToScheme registers Rollout and RolloutList under argoproj.io/v1alpha1.
// It coexists with the Argo CD types of the same group and version.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &Rollout{}, &RolloutList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}

// Rollout is the part of an argoproj.io/v1alpha1 Rollout that KICK reads:
// fields KICK does not need are dropped when it is decoded, which keeps the
// cache small. KICK writes a Rollout only with a merge patch of
// spec.restartAt, never with an update of this partial object.
// +kubebuilder:object:root=true
type Rollout struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   Spec   `json:"spec,omitempty"`
	Status Status `json:"status,omitempty"`
}

// Spec is the part of the Rollout spec KICK reads.
type Spec struct {
	Replicas *int32 `json:"replicas,omitempty"`
	// Template is the pod template; empty when WorkloadRef is set.
	Template corev1.PodTemplateSpec `json:"template,omitempty"`
	// WorkloadRef names the workload whose pod template the Rollout runs.
	WorkloadRef *WorkloadRef `json:"workloadRef,omitempty"`
	Paused      bool         `json:"paused,omitempty"`
	// RestartAt asks the Rollouts controller to replace every pod created
	// before this time.
	RestartAt *metav1.Time `json:"restartAt,omitempty"`
}

// WorkloadRef references the workload a Rollout takes its template from.
type WorkloadRef struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`
	Name       string `json:"name,omitempty"`
	ScaleDown  string `json:"scaleDown,omitempty"`
}

// Status is the part of the Rollout status KICK reads.
type Status struct {
	// ObservedGeneration is the observed metadata.generation, as a string.
	ObservedGeneration string `json:"observedGeneration,omitempty"`
	// WorkloadObservedGeneration is the observed generation of the
	// workloadRef workload, as a string.
	WorkloadObservedGeneration string `json:"workloadObservedGeneration,omitempty"`
	Replicas                   int32  `json:"replicas,omitempty"`
	UpdatedReplicas            int32  `json:"updatedReplicas,omitempty"`
	ReadyReplicas              int32  `json:"readyReplicas,omitempty"`
	AvailableReplicas          int32  `json:"availableReplicas,omitempty"`
	// CurrentPodHash is the pod-template hash of the desired revision;
	// StableRS that of the revision the rollout last completed.
	CurrentPodHash string `json:"currentPodHash,omitempty"`
	StableRS       string `json:"stableRS,omitempty"`
	// RestartedAt is the spec.restartAt the controller last finished.
	RestartedAt     *metav1.Time     `json:"restartedAt,omitempty"`
	Abort           bool             `json:"abort,omitempty"`
	ControllerPause bool             `json:"controllerPause,omitempty"`
	PauseConditions []PauseCondition `json:"pauseConditions,omitempty"`
	// Phase is Healthy, Progressing, Paused or Degraded.
	Phase      string      `json:"phase,omitempty"`
	Message    string      `json:"message,omitempty"`
	Conditions []Condition `json:"conditions,omitempty"`
	BlueGreen  *BlueGreen  `json:"blueGreen,omitempty"`
}

// PauseCondition is why and since when a Rollout is paused.
type PauseCondition struct {
	Reason    string      `json:"reason"`
	StartTime metav1.Time `json:"startTime"`
}

// Condition is a Rollout status condition.
type Condition struct {
	Type               string      `json:"type"`
	Status             string      `json:"status"`
	Reason             string      `json:"reason,omitempty"`
	Message            string      `json:"message,omitempty"`
	LastUpdateTime     metav1.Time `json:"lastUpdateTime,omitempty"`
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
}

// BlueGreen is the blue-green part of the status.
type BlueGreen struct {
	ActiveSelector string `json:"activeSelector,omitempty"`
}

// RolloutList is a list of Rollouts.
// +kubebuilder:object:root=true
type RolloutList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Rollout `json:"items"`
}

// TargetKind makes Rollouts known to workload.KindOf.
func (*Rollout) TargetKind() kickv1alpha1.TargetKind { return kickv1alpha1.TargetRollout }

// PodTemplate returns spec.template, nil for a Rollout that takes its
// template from spec.workloadRef (or a nil Rollout). It makes discovery
// read a Rollout's dependencies.
func (r *Rollout) PodTemplate() *corev1.PodTemplateSpec {
	if r == nil || r.Spec.WorkloadRef != nil {
		return nil
	}
	return &r.Spec.Template
}

// RestartAt returns spec.restartAt.
func (r *Rollout) RestartAt() *metav1.Time { return r.Spec.RestartAt }

// ReferencedDeployment returns the name of the Deployment the Rollout runs
// through spec.workloadRef, "" when it references none.
func (r *Rollout) ReferencedDeployment() string {
	ref := r.Spec.WorkloadRef
	if ref == nil || ref.Kind != "Deployment" || ref.Name == "" {
		return ""
	}
	if ref.APIVersion != "" && ref.APIVersion != "apps/v1" {
		return ""
	}
	return ref.Name
}
