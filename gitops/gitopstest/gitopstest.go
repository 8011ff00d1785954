// Package gitopstest gives the providers' unit tests the workload kinds the
// manager would hand them (gitops.Workloads) without importing the restart
// pipeline: the apps/v1 kinds and a minimal stand-in for an Argo Rollout.
package gitopstest

import (
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/gitops"
)

// Builtin returns the apps/v1 workload kinds: Deployment, StatefulSet and
// DaemonSet.
func Builtin() gitops.Workloads {
	return gitops.Workloads{
		{Target: kickv1alpha1.TargetDeployment, APIVersion: kickv1alpha1.AppsV1APIVersion,
			New: func() client.Object { return &appsv1.Deployment{} }, NewList: func() client.ObjectList { return &appsv1.DeploymentList{} }},
		{Target: kickv1alpha1.TargetStatefulSet, APIVersion: kickv1alpha1.AppsV1APIVersion,
			New: func() client.Object { return &appsv1.StatefulSet{} }, NewList: func() client.ObjectList { return &appsv1.StatefulSetList{} }},
		{Target: kickv1alpha1.TargetDaemonSet, APIVersion: kickv1alpha1.AppsV1APIVersion,
			New: func() client.Object { return &appsv1.DaemonSet{} }, NewList: func() client.ObjectList { return &appsv1.DaemonSetList{} }},
	}
}

// WithRollouts returns Builtin plus the Rollout stand-in, as a manager
// running the Argo Rollouts integration would.
func WithRollouts() gitops.Workloads {
	return append(Builtin(), gitops.WorkloadKind{Target: kickv1alpha1.TargetRollout, APIVersion: kickv1alpha1.ArgoRolloutsAPIVersion,
		New: func() client.Object { return &Rollout{} }, NewList: func() client.ObjectList { return &RolloutList{} }})
}

// AddRolloutToScheme registers the Rollout stand-in under
// argoproj.io/v1alpha1.
func AddRolloutToScheme(s *runtime.Scheme) error {
	gv := schema.GroupVersion{Group: "argoproj.io", Version: "v1alpha1"}
	s.AddKnownTypes(gv, &Rollout{}, &RolloutList{})
	metav1.AddToGroupVersion(s, gv)
	return nil
}

// Rollout stands in for an Argo Rollout: metadata only, which is all the
// providers read of a workload.
type Rollout struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
}

// DeepCopyObject implements runtime.Object.
func (r *Rollout) DeepCopyObject() runtime.Object {
	out := &Rollout{TypeMeta: r.TypeMeta}
	r.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return out
}

// RolloutList is a list of Rollout stand-ins.
type RolloutList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Rollout `json:"items"`
}

// DeepCopyObject implements runtime.Object.
func (l *RolloutList) DeepCopyObject() runtime.Object {
	out := &RolloutList{TypeMeta: l.TypeMeta}
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	for i := range l.Items {
		out.Items = append(out.Items, *l.Items[i].DeepCopyObject().(*Rollout))
	}
	return out
}
