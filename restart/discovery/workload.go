package discovery

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// PodTemplate returns the Pod template of a supported workload and true, or
// nil and false for any other object (including a typed nil pointer).
//
// Supported: *appsv1.Deployment, *appsv1.StatefulSet, *appsv1.DaemonSet.
// Another kind (for example an Argo Rollout read as unstructured, converted
// from spec.template) is added here as one more case and, to be indexed, as
// one more prototype in indexedWorkloads.
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
	}
	return nil, false
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
