package freshness

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestTemplateFingerprint(t *testing.T) {
	v1 := podTemplate("web:v1")
	fp := TemplateFingerprint(&v1)
	if fp == "" {
		t.Fatal("empty fingerprint")
	}
	hashed := replicaSet("web-1", depUID, at(1), v1).Spec.Template
	if got := TemplateFingerprint(&hashed); got != fp {
		t.Errorf("the pod-template-hash label changed the fingerprint")
	}
	if _, ok := hashed.Labels[podTemplateHashLabel]; !ok {
		t.Errorf("the template's own labels were modified")
	}
	for name, change := range map[string]func(*corev1.PodTemplateSpec){
		"image": func(p *corev1.PodTemplateSpec) { p.Spec.Containers[0].Image = "web:v2" },
		"restart stamp": func(p *corev1.PodTemplateSpec) {
			p.Annotations = map[string]string{RestartedAtAnnotation: FormatStamp(at(3))}
		},
		"another label":  func(p *corev1.PodTemplateSpec) { p.Labels["tier"] = "front" },
		"env deep down":  func(p *corev1.PodTemplateSpec) { p.Spec.Containers[0].Env[0].ValueFrom.SecretKeyRef.Key = "pw" },
		"a volume added": func(p *corev1.PodTemplateSpec) { p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "x"}) },
	} {
		other := *v1.DeepCopy()
		change(&other)
		if TemplateFingerprint(&other) == fp {
			t.Errorf("%s: fingerprint unchanged", name)
		}
	}
}

func TestCompactReplicaSet(t *testing.T) {
	tmpl := podTemplate("web:v1")
	rs := replicaSet("web-1", depUID, at(1), tmpl)
	rs.Annotations = map[string]string{"deployment.kubernetes.io/revision": "3"}
	rs.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kube-controller-manager"}}
	rs.Spec.Replicas = new(int32(3))
	rs.Status.ReadyReplicas = 3
	full := *rs.DeepCopy()

	CompactReplicaSet(&rs)
	if len(rs.Spec.Template.Spec.Containers) != 0 || len(rs.Spec.Template.Labels) != 0 || rs.ManagedFields != nil {
		t.Errorf("template or managedFields kept: %+v", rs)
	}
	if rs.Annotations["deployment.kubernetes.io/revision"] != "3" || *rs.Spec.Replicas != 3 || rs.Status.ReadyReplicas != 3 ||
		rs.Name != "web-1" || len(rs.OwnerReferences) != 1 || !rs.CreationTimestamp.Equal(&full.CreationTimestamp) {
		t.Errorf("metadata, replicas or status lost: %+v", rs)
	}
	if got, ok := compactFingerprint(&rs); !ok || got != TemplateFingerprint(&tmpl) {
		t.Errorf("compact fingerprint %q (%v), want the template's", got, ok)
	}
	again := *rs.DeepCopy()
	CompactReplicaSet(&again)
	if again.Annotations[TemplateFingerprintAnnotation] != rs.Annotations[TemplateFingerprintAnnotation] {
		t.Error("compacting twice changed the fingerprint")
	}
}

// TestForgedFingerprintDoesNotMatch plays a tenant who writes the
// fingerprint annotation on a ReplicaSet of their own: on a ReplicaSet
// read in full it is ignored (its template decides), and the cache's
// compaction overwrites it with the real one.
func TestForgedFingerprintDoesNotMatch(t *testing.T) {
	v2 := podTemplate("web:v2")
	d := deployment(v2)
	forged := replicaSet("web-1", depUID, at(1), podTemplate("web:v1"))
	forged.Annotations = map[string]string{TemplateFingerprintAnnotation: TemplateFingerprint(&v2)}

	if rs, reason, _ := CurrentReplicaSet(d, ReplicaSetRefs(forged)); rs != nil || reason != NoMatchingReplicaSet {
		t.Errorf("full ReplicaSet with a forged fingerprint matched: %v %s", rs, reason)
	}
	compact := *forged.DeepCopy()
	CompactReplicaSet(&compact)
	if rs, reason, _ := CurrentReplicaSet(d, ReplicaSetRefs(compact)); rs != nil || reason != NoMatchingReplicaSet {
		t.Errorf("compacted ReplicaSet with a forged fingerprint matched: %v %s", rs, reason)
	}
	// And mixed: a compact current ReplicaSet next to full old ones.
	cur := replicaSet("web-2", depUID, at(2), v2)
	CompactReplicaSet(&cur)
	if rs, _, _ := CurrentReplicaSet(d, ReplicaSetRefs(forged, cur)); rs == nil || rs.Name != "web-2" {
		t.Errorf("current ReplicaSet %v, want web-2", rs)
	}
}
