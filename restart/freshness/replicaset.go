package freshness

import (
	"crypto/sha256"
	"encoding/base64"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TemplateFingerprintAnnotation holds, on a ReplicaSet cut down by
// CompactReplicaSet, the fingerprint of the pod template it no longer
// carries. It exists only in the manager's memory; no object is written
// with it, and on a ReplicaSet read from the API server (with its
// template) it is ignored.
const TemplateFingerprintAnnotation = "kick.corewire.io/template-fingerprint"

// TemplateFingerprint is a digest of a pod template with the
// pod-template-hash label left out: the protobuf encoding that the API
// server's own objects round-trip through (fields in a fixed order, map
// keys sorted, quantities in canonical form, nil and empty alike), hashed.
// Two templates decoded from the API server have the same fingerprint
// exactly when the Deployment controller considers them equal, which is
// how a ReplicaSet is matched to its Deployment's template. It is "" only
// for a template that cannot be encoded, which matches nothing.
func TemplateFingerprint(t *corev1.PodTemplateSpec) string {
	c := corev1.PodTemplateSpec{ObjectMeta: t.ObjectMeta, Spec: t.Spec} // shallow: t is not modified
	if _, ok := c.Labels[podTemplateHashLabel]; ok {
		labels := make(map[string]string, len(c.Labels)-1)
		for k, v := range c.Labels {
			if k != podTemplateHashLabel {
				labels[k] = v
			}
		}
		c.Labels = labels
	}
	b, err := c.Marshal()
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// CompactReplicaSet cuts a ReplicaSet down to what rollout decisions read:
// its metadata (without managedFields), replicas, selector and status. The
// pod template, most of a ReplicaSet's size and kept for every revision a
// Deployment remembers (ten by default), is replaced by its fingerprint in
// TemplateFingerprintAnnotation, which CurrentReplicaSet compares instead.
// A fingerprint already present on a ReplicaSet that still has its
// template (anyone may write annotations) is overwritten. It modifies rs
// in place; compacting a compacted ReplicaSet changes nothing.
func CompactReplicaSet(rs *appsv1.ReplicaSet) {
	if _, ok := compactFingerprint(rs); ok {
		return
	}
	fp := TemplateFingerprint(&rs.Spec.Template)
	annotations := make(map[string]string, len(rs.Annotations)+1)
	for k, v := range rs.Annotations {
		annotations[k] = v
	}
	annotations[TemplateFingerprintAnnotation] = fp
	rs.Annotations = annotations
	rs.ManagedFields = nil
	rs.Spec.Template = corev1.PodTemplateSpec{}
}

// compactFingerprint returns the fingerprint of a ReplicaSet cut down by
// CompactReplicaSet. A ReplicaSet with its template (the API server admits
// none without containers) is not compact, whatever its annotations say.
func compactFingerprint(rs *appsv1.ReplicaSet) (string, bool) {
	if len(rs.Spec.Template.Spec.Containers) > 0 || !isZeroMeta(&rs.Spec.Template.ObjectMeta) {
		return "", false
	}
	fp, ok := rs.Annotations[TemplateFingerprintAnnotation]
	return fp, ok
}

func isZeroMeta(m *metav1.ObjectMeta) bool {
	return len(m.Labels) == 0 && len(m.Annotations) == 0 && m.Name == "" && m.Namespace == ""
}
