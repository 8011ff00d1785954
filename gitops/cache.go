package gitops

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// lastApplied is kubectl's copy of the whole manifest; no decision reads it.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// SlimMeta is the metadata a provider's cache transform keeps of a GitOps
// object: identity, generation and deletion; with labelsAndAnnotations
// also its labels and annotations (without kubectl's last-applied copy).
// managedFields and owner references are dropped.
func SlimMeta(m metav1.ObjectMeta, labelsAndAnnotations bool) metav1.ObjectMeta {
	out := metav1.ObjectMeta{
		Name:              m.Name,
		Namespace:         m.Namespace,
		UID:               m.UID,
		ResourceVersion:   m.ResourceVersion,
		Generation:        m.Generation,
		CreationTimestamp: m.CreationTimestamp,
		DeletionTimestamp: m.DeletionTimestamp,
	}
	if !labelsAndAnnotations {
		return out
	}
	out.Labels = m.Labels
	for k, v := range m.Annotations {
		if k == lastApplied {
			continue
		}
		if out.Annotations == nil {
			out.Annotations = map[string]string{}
		}
		out.Annotations[k] = v
	}
	return out
}
