package workload

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
)

// Kinds lists the built-in workload kinds, as empty objects.
func Kinds() []client.Object {
	return []client.Object{&appsv1.Deployment{}, &appsv1.StatefulSet{}, &appsv1.DaemonSet{}}
}

// New returns an empty object of the given target kind, or an error naming
// the kind when KICK cannot restart it.
func New(kind kickv1alpha1.TargetKind) (client.Object, error) {
	switch kind {
	case kickv1alpha1.TargetDeployment:
		return &appsv1.Deployment{}, nil
	case kickv1alpha1.TargetStatefulSet:
		return &appsv1.StatefulSet{}, nil
	case kickv1alpha1.TargetDaemonSet:
		return &appsv1.DaemonSet{}, nil
	case kickv1alpha1.TargetRollout:
		return nil, fmt.Errorf("kind Rollout needs the manager's Argo Rollouts integration (--enable-argo-rollouts), which is not active")
	}
	return nil, fmt.Errorf("kind %q is not a workload KICK restarts (Deployment, StatefulSet, DaemonSet, Rollout)", kind)
}

// KindOf returns the target kind of a workload object, "" for others.
func KindOf(obj client.Object) kickv1alpha1.TargetKind {
	switch obj.(type) {
	case *appsv1.Deployment:
		return kickv1alpha1.TargetDeployment
	case *appsv1.StatefulSet:
		return kickv1alpha1.TargetStatefulSet
	case *appsv1.DaemonSet:
		return kickv1alpha1.TargetDaemonSet
	}
	return ""
}

// Ref names a workload in a namespace.
type Ref struct {
	Kind      kickv1alpha1.TargetKind
	Namespace string
	Name      string
}

// RefOf returns the Ref of a workload object.
func RefOf(obj client.Object) Ref {
	return Ref{Kind: KindOf(obj), Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

func (r Ref) String() string { return string(r.Kind) + " " + r.Namespace + "/" + r.Name }

// Key is the value of the request target index for this workload.
func (r Ref) Key() string { return TargetKey(r.Kind, r.Name) }

// TargetKey is the index value naming a workload within its namespace.
func TargetKey(kind kickv1alpha1.TargetKind, name string) string { return string(kind) + "/" + name }

// Lists returns an empty list object per built-in workload kind.
func Lists() []client.ObjectList {
	return []client.ObjectList{&appsv1.DeploymentList{}, &appsv1.StatefulSetList{}, &appsv1.DaemonSetList{}}
}

// Items returns the workloads held in a list from Lists.
func Items(list client.ObjectList) []client.Object {
	var out []client.Object
	switch l := list.(type) {
	case *appsv1.DeploymentList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *appsv1.StatefulSetList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *appsv1.DaemonSetList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	}
	return out
}
