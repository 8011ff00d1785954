package discovery

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// PodTemplate returns the Pod template of a supported workload and true, or
// nil and false for any other object (including a typed nil pointer).
//
// Supported: *appsv1.Deployment, *appsv1.StatefulSet, *appsv1.DaemonSet,
// and any type implementing Templated (an Argo Rollout).
func PodTemplate(obj client.Object) (*corev1.PodTemplateSpec, bool) {
	switch w := obj.(type) {
	case *appsv1.Deployment:
		if w != nil {
			return &w.Spec.Template, true
		}
	case *appsv1.StatefulSet:
		if w != nil {
			return &w.Spec.Template, true
		}
	case *appsv1.DaemonSet:
		if w != nil {
			return &w.Spec.Template, true
		}
	case Templated:
		if t := w.PodTemplate(); t != nil {
			return t, true
		}
	}
	return nil, false
}

// Templated is implemented by workload types outside apps/v1 that carry a
// pod template (an Argo Rollout's spec.template). PodTemplate returns nil
// when the object has none of its own (a Rollout with spec.workloadRef),
// and must be safe to call on a nil pointer.
type Templated interface {
	PodTemplate() *corev1.PodTemplateSpec
}

// FromWorkload returns the dependencies of a supported workload, nil for any
// other object.
func FromWorkload(obj client.Object) []Dependency {
	tmpl, ok := PodTemplate(obj)
	if !ok {
		return nil
	}
	return FromPodSpec(&tmpl.Spec)
}
