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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KickRequestSpec names the workload to restart.
type KickRequestSpec struct {
	// TargetRef is the workload to restart, in the request's namespace. It
	// cannot be changed after creation.
	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="targetRef is immutable; create a new KickRequest for a different workload"
	TargetRef TargetRef `json:"targetRef"`

	// Reason says why a person or CI job asked for the restart. It is copied
	// into events and notifications; do not put secrets in it.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Reason string `json:"reason,omitempty"`
}

// TargetKind is a workload kind KICK can restart.
// +kubebuilder:validation:Enum=Deployment;StatefulSet;DaemonSet;Rollout
type TargetKind string

const (
	TargetDeployment  TargetKind = "Deployment"
	TargetStatefulSet TargetKind = "StatefulSet"
	TargetDaemonSet   TargetKind = "DaemonSet"
	// TargetRollout is an Argo Rollout (argoproj.io/v1alpha1); it needs the
	// manager's Argo Rollouts integration.
	TargetRollout TargetKind = "Rollout"
)

// API versions accepted in a TargetRef.
const (
	AppsV1APIVersion        = "apps/v1"
	ArgoRolloutsAPIVersion  = "argoproj.io/v1alpha1"
	DefaultTargetAPIVersion = AppsV1APIVersion
)

// TargetRef identifies a workload in the same namespace.
// +kubebuilder:validation:XValidation:rule="self.kind != 'Rollout' || (has(self.apiVersion) && self.apiVersion == 'argoproj.io/v1alpha1')",message="kind Rollout requires apiVersion argoproj.io/v1alpha1"
// +kubebuilder:validation:XValidation:rule="self.kind == 'Rollout' || !has(self.apiVersion) || self.apiVersion == 'apps/v1'",message="kinds Deployment, StatefulSet and DaemonSet require apiVersion apps/v1"
type TargetRef struct {
	// APIVersion of the workload: apps/v1, or argoproj.io/v1alpha1 for a
	// Rollout.
	// +optional
	// +kubebuilder:default="apps/v1"
	// +kubebuilder:validation:MaxLength=64
	APIVersion string `json:"apiVersion,omitempty"`

	// Kind of the workload: Deployment, StatefulSet, DaemonSet or Rollout.
	// +required
	Kind TargetKind `json:"kind"`

	// Name of the workload.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`
}

// GitOpsOwner is the GitOps object resolved as owner of the target.
type GitOpsOwner struct {
	// Provider that resolved the owner (ArgoCD, Flux or Kargo).
	Provider GitOpsProvider `json:"provider"`
	// APIVersion of the owning object.
	APIVersion string `json:"apiVersion"`
	// Kind of the owning object, e.g. Application, Kustomization, HelmRelease.
	Kind string `json:"kind"`
	// Namespace of the owning object.
	Namespace string `json:"namespace"`
	// Name of the owning object.
	Name string `json:"name"`
	// Project is the Argo CD AppProject of an owning Application.
	// +optional
	Project string `json:"project,omitempty"`
	// Stage is the authorised Kargo Stage as "project:stage".
	// +optional
	Stage string `json:"stage,omitempty"`
}

// GateStatus records the last gate decision.
type GateStatus struct {
	// Reason is Allowed or the reason the restart is held back (see the
	// GateReason values: OutsideSchedule, OwnerUnknown, AmbiguousOwner, ...).
	// +optional
	Reason GateReason `json:"reason,omitempty"`
	// Stage is the gate that holds the restart back, in the order they are
	// evaluated: Suspend, Hold, Settle, Schedule, MinInterval, Halt, Wave,
	// GitOps or Budget; empty when every gate is open.
	// +optional
	Stage string `json:"stage,omitempty"`
	// Message explains the decision for humans.
	// +optional
	Message string `json:"message,omitempty"`
	// RequeueAt is when the gate is evaluated again at the latest, e.g. the
	// next window boundary or the end of minInterval.
	// +optional
	RequeueAt *metav1.Time `json:"requeueAt,omitempty"`
	// LastEvaluated is when the gate was last evaluated.
	// +optional
	LastEvaluated *metav1.Time `json:"lastEvaluated,omitempty"`
	// Cause is the object whose state holds the restart back, when the
	// stage names one: the KickHold of the Hold stage, the workload whose
	// failed rollout halted the fan-out (Halt stage).
	// +optional
	Cause *GateCause `json:"cause,omitempty"`
}

// GateCause names the object a gate decision comes from.
type GateCause struct {
	// +optional
	// +kubebuilder:validation:MaxLength=128
	APIVersion string `json:"apiVersion,omitempty"`
	// +kubebuilder:validation:MaxLength=64
	Kind string `json:"kind"`
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// String is "Kind namespace/name".
func (c GateCause) String() string {
	if c.Namespace == "" {
		return c.Kind + " " + c.Name
	}
	return c.Kind + " " + c.Namespace + "/" + c.Name
}

// RolloutMarker describes the rollout this request started: the one it is
// following while open, the last one it completed or gave up on once
// finished. A nil marker means the request has not started one since it was
// created or last reopened.
type RolloutMarker struct {
	// StartedAt is the restart time KICK stamped on the workload.
	// +optional
	StartedAt *metav1.MicroTime `json:"startedAt,omitempty"`
	// RestartedAt is the exact value KICK wrote (the
	// kubectl.kubernetes.io/restartedAt pod-template annotation, or
	// spec.restartAt of a Rollout), so KICK can recognise its own rollout.
	// +optional
	RestartedAt string `json:"restartedAt,omitempty"`
	// WorkloadGeneration is the workload's metadata.generation after the
	// restart patch: until the cached workload shows it, KICK's own patch is
	// not visible yet and the rollout is not judged.
	// +optional
	WorkloadGeneration int64 `json:"workloadGeneration,omitempty"`
	// ReplicaSet is the ReplicaSet the restart rolled out to (Deployments),
	// recorded when the rollout completes; the marker is kept on the
	// finished request.
	// +optional
	ReplicaSet string `json:"replicaSet,omitempty"`
}

// SourceChange is one recorded change of a Secret or ConfigMap.
type SourceChange struct {
	// Kind is Secret or ConfigMap.
	Kind SourceKind `json:"kind"`
	// Name is the source's name, in the request's namespace.
	Name string `json:"name"`
	// ChangedAt is the change's time as its observation record has it.
	ChangedAt NanoTime `json:"changedAt"`
}

// String is "Kind/name".
func (c *SourceChange) String() string { return string(c.Kind) + "/" + c.Name }

// HaltsFanOut reports whether the request halts the fan-out of the change
// it answered: its restart failed its rollout (ProgressDeadlineExceeded or
// RolloutTimeout), it restarted for a source's change, and no one released
// it with the ReleaseHaltAnnotation.
func (kr *KickRequest) HaltsFanOut() bool {
	if kr.Status.Phase != PhaseFailed || kr.Status.RestartedFor == nil {
		return false
	}
	if _, released := kr.Annotations[ReleaseHaltAnnotation]; released {
		return false
	}
	for _, c := range kr.Status.Conditions {
		if c.Type == ConditionCompleted {
			return c.Reason == ReasonProgressDeadlineExceeded || c.Reason == ReasonRolloutTimeout
		}
	}
	return false
}

// KickRequestStatus is written by the request controller.
type KickRequestStatus struct {
	// ObservedGeneration is the spec generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Phase is the request's place in its lifecycle.
	// +optional
	Phase KickRequestPhase `json:"phase,omitempty"`

	// PolicyRef is the name of the KickPolicy that selects the target.
	// +optional
	PolicyRef string `json:"policyRef,omitempty"`

	// Provider is the GitOps provider in effect for this request (after
	// Auto detection).
	// +optional
	Provider GitOpsProvider `json:"provider,omitempty"`

	// Owner is the GitOps owner resolved for the target, if any.
	// +optional
	Owner *GitOpsOwner `json:"owner,omitempty"`

	// Gate is the last gate decision.
	// +optional
	Gate *GateStatus `json:"gate,omitempty"`

	// LatestObservedDependencyChange is the newest relevant change seen for
	// any in-scope dependency of the target. It has microsecond precision,
	// because a change in the same second as the rollout must still count
	// as newer, and it never moves backwards.
	// +optional
	LatestObservedDependencyChange *metav1.MicroTime `json:"latestObservedDependencyChange,omitempty"`

	// RestartedFor is the newest change of a Secret or ConfigMap the last
	// restart answered. If that restart fails its rollout, the other
	// restarts that would bring in the same change of that source are held
	// (gate reason RolloutHalted) until it changes again.
	// +optional
	RestartedFor *SourceChange `json:"restartedFor,omitempty"`

	// CurrentRollout is the rollout this request started and is following.
	// +optional
	CurrentRollout *RolloutMarker `json:"currentRollout,omitempty"`

	// LastRestartTime is when KICK last restarted the target for this request.
	// +optional
	LastRestartTime *metav1.MicroTime `json:"lastRestartTime,omitempty"`

	// CompletionTime is when the request last reached a terminal phase.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// ObservedChange is the value of the kick.corewire.io/change annotation
	// this status has answered. A client that writes the annotation (for
	// example kubectl kick restart on a finished request) waits until this
	// field shows its value, then reads the Reopened condition.
	// +optional
	ObservedChange string `json:"observedChange,omitempty"`

	// RestartCount counts the restarts issued for this request over its
	// lifetime, reopenings included.
	// +optional
	RestartCount int32 `json:"restartCount,omitempty"`

	// History keeps the request's earlier finished cycles, newest first and
	// at most 10, so a request reopened for a new change still shows what
	// it did before. It is written with the status write that reopens the
	// request, never on its own.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10
	History []RequestCycle `json:"history,omitempty"`

	// Reason says in one word why the request is in its phase (the REASON
	// column of kubectl get): the gate reason that holds it back while it
	// waits, why its rollout is not complete while it executes, and its
	// outcome (the Completed condition's reason) once it has finished.
	// +optional
	Reason string `json:"reason,omitempty"`

	// Conditions record the gate, freshness and rollout decisions.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`
}

// KickRequest asks KICK to restart one workload once its gates allow it and
// only if the workload is older than the newest relevant change of its
// dependencies. KICK creates and reopens these itself; people and CI may
// create them too, but only for workloads a KickPolicy selects.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName={kreq,kr},categories=kick
// +kubebuilder:printcolumn:name="Kind",type=string,JSONPath=`.spec.targetRef.kind`
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.spec.targetRef.name`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type KickRequest struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec names the workload.
	// +required
	Spec KickRequestSpec `json:"spec"`

	// Status is the observed state.
	// +optional
	Status KickRequestStatus `json:"status,omitempty"`
}

// KickRequestList is a list of KickRequest.
// +kubebuilder:object:root=true
type KickRequestList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []KickRequest `json:"items"`
}

func init() {
	register(&KickRequest{}, &KickRequestList{})
}

// PhaseReason is the Reason the status should carry for its phase (see
// KickRequestStatus.Reason).
func (s *KickRequestStatus) PhaseReason() string {
	condition := func(typ string) *metav1.Condition {
		for i := range s.Conditions {
			if s.Conditions[i].Type == typ {
				return &s.Conditions[i]
			}
		}
		return nil
	}
	switch {
	case s.Phase.IsTerminal():
		if c := condition(ConditionCompleted); c != nil {
			return c.Reason
		}
	case s.Phase == PhaseExecuting || s.Phase == PhaseWaitingForRollout:
		if c := condition(ConditionRolloutComplete); c != nil && c.Status == metav1.ConditionFalse {
			return c.Reason
		}
	case s.Phase.IsWaiting():
		if s.Gate != nil {
			return string(s.Gate.Reason)
		}
	}
	return ""
}
