package workload

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/kick-operator/kick/restart/freshness"
)

func TestTransformReplicaSet(t *testing.T) {
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-1"}}
	rs.Spec.Template.Labels = map[string]string{"app": "web"}
	rs.Spec.Template.Spec.Containers = []corev1.Container{{Name: "web", Image: "web:v1"}}
	want := freshness.TemplateFingerprint(&rs.Spec.Template)

	out, err := TransformReplicaSet(rs)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*appsv1.ReplicaSet)
	if len(got.Spec.Template.Spec.Containers) != 0 || got.Annotations[freshness.TemplateFingerprintAnnotation] != want {
		t.Errorf("not compacted: %+v", got)
	}

	tomb := toolscache.DeletedFinalStateUnknown{Key: "shop/web-1", Obj: rs}
	if out, err := TransformReplicaSet(tomb); err != nil || out != any(tomb) {
		t.Errorf("a tombstone came back as %v, %v", out, err)
	}
}
