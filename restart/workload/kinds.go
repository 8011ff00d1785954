package workload

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/execute"
	"github.com/kick-operator/kick/restart/freshness"
)

// Kind describes one workload kind KICK restarts.
type Kind struct {
	// Target is the kind as a KickRequest targetRef names it.
	Target kickv1alpha1.TargetKind
	// APIVersion of the kind, e.g. apps/v1.
	APIVersion string
	// New returns an empty object of the kind; NewList an empty list.
	New     func() client.Object
	NewList func() client.ObjectList
	// Inspect returns the rollout state (σ, completeness) of an object of
	// the kind, reading whatever else it needs from c (a cache).
	Inspect func(ctx context.Context, c client.Reader, obj client.Object) (freshness.Rollout, error)
	// Restarter writes and reads back the restart.
	Restarter execute.Restarter
	// Follows returns the other workloads whose KickRequests follow an
	// object of this kind (a Rollout runs the pods of the Deployment it
	// references); nil when none.
	Follows func(obj client.Object) []Ref
}

// Kinded is implemented by workload types outside apps/v1 (an Argo
// Rollout), so KindOf recognises them without knowing their package.
type Kinded interface {
	TargetKind() kickv1alpha1.TargetKind
}

// Deployments, StatefulSets and DaemonSets.
var (
	DeploymentKind = Kind{
		Target: kickv1alpha1.TargetDeployment, APIVersion: kickv1alpha1.AppsV1APIVersion,
		New:     func() client.Object { return &appsv1.Deployment{} },
		NewList: func() client.ObjectList { return &appsv1.DeploymentList{} },
		Inspect: func(ctx context.Context, c client.Reader, obj client.Object) (freshness.Rollout, error) {
			d, ok := obj.(*appsv1.Deployment)
			if !ok {
				return freshness.Rollout{}, fmt.Errorf("cannot inspect %T as a Deployment", obj)
			}
			rss, err := ControlledReplicaSets(ctx, c, d)
			if err != nil {
				return freshness.Rollout{}, err
			}
			return freshness.Deployment(d, rss), nil
		},
		Restarter: execute.PodTemplate{},
	}
	StatefulSetKind = Kind{
		Target: kickv1alpha1.TargetStatefulSet, APIVersion: kickv1alpha1.AppsV1APIVersion,
		New:     func() client.Object { return &appsv1.StatefulSet{} },
		NewList: func() client.ObjectList { return &appsv1.StatefulSetList{} },
		Inspect: func(_ context.Context, _ client.Reader, obj client.Object) (freshness.Rollout, error) {
			s, ok := obj.(*appsv1.StatefulSet)
			if !ok {
				return freshness.Rollout{}, fmt.Errorf("cannot inspect %T as a StatefulSet", obj)
			}
			return freshness.StatefulSet(s), nil
		},
		Restarter: execute.PodTemplate{},
	}
	DaemonSetKind = Kind{
		Target: kickv1alpha1.TargetDaemonSet, APIVersion: kickv1alpha1.AppsV1APIVersion,
		New:     func() client.Object { return &appsv1.DaemonSet{} },
		NewList: func() client.ObjectList { return &appsv1.DaemonSetList{} },
		Inspect: func(_ context.Context, _ client.Reader, obj client.Object) (freshness.Rollout, error) {
			d, ok := obj.(*appsv1.DaemonSet)
			if !ok {
				return freshness.Rollout{}, fmt.Errorf("cannot inspect %T as a DaemonSet", obj)
			}
			return freshness.DaemonSet(d), nil
		},
		Restarter: execute.PodTemplate{},
	}
)

// KindOf returns the target kind of a workload object, "" for others. It
// knows the apps/v1 kinds and every type implementing Kinded, whether or
// not a registry holds its kind.
func KindOf(obj client.Object) kickv1alpha1.TargetKind {
	switch obj.(type) {
	case *appsv1.Deployment:
		return kickv1alpha1.TargetDeployment
	case *appsv1.StatefulSet:
		return kickv1alpha1.TargetStatefulSet
	case *appsv1.DaemonSet:
		return kickv1alpha1.TargetDaemonSet
	}
	if k, ok := obj.(Kinded); ok {
		return k.TargetKind()
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

// Items returns the workloads held in a list of any workload kind.
func Items(list client.ObjectList) []client.Object {
	objs, err := meta.ExtractList(list)
	if err != nil {
		return nil
	}
	out := make([]client.Object, 0, len(objs))
	for _, o := range objs {
		if w, ok := o.(client.Object); ok {
			out = append(out, w)
		}
	}
	return out
}
