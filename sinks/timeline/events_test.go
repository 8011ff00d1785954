package timeline

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
)

func TestEventCacheOptions(t *testing.T) {
	sel := EventCacheOptions().Field
	for _, c := range []struct {
		apiVersion, kind string
		cached           bool
	}{
		{"apps/v1", "Deployment", true},
		{"kick.corewire.io/v1alpha1", "KickRequest", true},
		{"argoproj.io/v1alpha1", "Rollout", true},
		{"v1", "Pod", false},
		{"apps/v1", "ReplicaSet", false},
	} {
		got := sel.Matches(fields.Set{"involvedObject.apiVersion": c.apiVersion, "involvedObject.kind": c.kind})
		if got != c.cached {
			t.Errorf("%s %s: cached %v, want %v", c.apiVersion, c.kind, got, c.cached)
		}
	}
}

func TestStripEvent(t *testing.T) {
	long := strings.Repeat("x", 2000)
	in := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web.1", UID: "u", ResourceVersion: "7",
			Annotations:   map[string]string{"a": "b"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kube-controller-manager"}}},
		InvolvedObject: corev1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "ns", Name: "web", UID: "dep-uid", FieldPath: "spec"},
		Reason:         "ScalingReplicaSet", Message: long, Type: corev1.EventTypeNormal, Count: 2,
		Source:              corev1.EventSource{Component: "deployment-controller"},
		ReportingController: "deployment-controller",
		Series:              &corev1.EventSeries{Count: 3},
	}
	out, err := stripEvent(in)
	if err != nil {
		t.Fatal(err)
	}
	ev, ok := out.(*corev1.Event)
	if !ok || ev != in {
		t.Fatalf("stripEvent returned %T %p, want the same *Event %p cut down in place", out, out, in)
	}
	want := corev1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "ns", Name: "web"}
	if ev.InvolvedObject != want || ev.Reason != "ScalingReplicaSet" || ev.Count != 2 || ev.Series == nil || ev.Series.Count != 3 ||
		ev.Name != "web.1" || ev.ResourceVersion != "7" {
		t.Errorf("kept fields lost: %+v", ev)
	}
	if ev.Annotations != nil || ev.ManagedFields != nil || ev.Source != (corev1.EventSource{}) || ev.ReportingController != "" {
		t.Errorf("dropped fields kept: %+v", ev)
	}
	if len(ev.Message) != 1024 {
		t.Errorf("message of %d bytes, want it cut to 1024", len(ev.Message))
	}
	if other, _ := stripEvent("not an event"); other != "not an event" {
		t.Errorf("a non-Event came back as %v", other)
	}
}
