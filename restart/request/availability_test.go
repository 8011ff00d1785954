package request

import (
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func statefulSet(ns, name string, available int32) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 2},
		Spec:       appsv1.StatefulSetSpec{Replicas: ptr.To[int32](2)},
		Status:     appsv1.StatefulSetStatus{ObservedGeneration: 2, AvailableReplicas: available},
	}
}

// The memory keeps the moment a StatefulSet or DaemonSet became available
// again, and says nothing while it is unavailable or for other kinds.
func TestAvailabilityMemory(t *testing.T) {
	var m availabilityMemory
	t0 := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	up, down := statefulSet("a", "db", 2), statefulSet("a", "db", 1)

	m.observe(up, up, t0)
	if got := m.since(up); !got.IsZero() {
		t.Fatalf("an update that stays available is remembered at %s", got)
	}
	m.observe(up, down, t0.Add(time.Second))
	if got := m.since(down); !got.IsZero() {
		t.Fatalf("an unavailable StatefulSet is said available since %s", got)
	}
	m.observe(down, up, t0.Add(5*time.Second))
	if got := m.since(up); !got.Equal(t0.Add(5 * time.Second)) {
		t.Fatalf("back at %s, remembered %s", t0.Add(5*time.Second), got)
	}
	// Its spec not yet seen by its controller: not available.
	newer := statefulSet("a", "db", 2)
	newer.Generation = 3
	if got := m.since(newer); !got.IsZero() {
		t.Fatalf("a StatefulSet whose controller has not seen its spec is said available since %s", got)
	}

	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "agent"},
		Status: appsv1.DaemonSetStatus{DesiredNumberScheduled: 3, NumberAvailable: 2, NumberUnavailable: 1}}
	dsUp := ds.DeepCopy()
	dsUp.Status.NumberAvailable, dsUp.Status.NumberUnavailable = 3, 0
	m.observe(ds, dsUp, t0.Add(7*time.Second))
	if got := m.since(dsUp); !got.Equal(t0.Add(7 * time.Second)) {
		t.Fatalf("DaemonSet back at %s, remembered %s", t0.Add(7*time.Second), got)
	}
	m.forget(dsUp)
	if got := m.since(dsUp); !got.IsZero() {
		t.Fatalf("a deleted DaemonSet is remembered at %s", got)
	}
	var none *availabilityMemory
	if got := none.since(up); !got.IsZero() {
		t.Fatalf("no memory remembers %s", got)
	}
	if got := m.since(&appsv1.Deployment{}); !got.IsZero() {
		t.Fatalf("a Deployment is remembered at %s; it records its own moment", got)
	}
}

// One namespace's flapping workloads fill only its own share; entries past
// the TTL make room again.
func TestAvailabilityMemoryBounds(t *testing.T) {
	var m availabilityMemory
	t0 := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	for i := range availabilityNamespaceMax + 10 {
		name := fmt.Sprintf("s-%05d", i)
		m.observe(statefulSet("flood", name, 0), statefulSet("flood", name, 2), t0)
	}
	if n := m.inNamespace["flood"]; n != availabilityNamespaceMax {
		t.Fatalf("the flooding namespace holds %d entries, want its bound %d", n, availabilityNamespaceMax)
	}
	m.observe(statefulSet("quiet", "db", 0), statefulSet("quiet", "db", 2), t0)
	if got := m.since(statefulSet("quiet", "db", 2)); !got.Equal(t0) {
		t.Fatalf("another namespace's StatefulSet is not remembered (got %s)", got)
	}
	later := t0.Add(availabilityTTL + time.Minute)
	m.observe(statefulSet("flood", "late", 0), statefulSet("flood", "late", 2), later)
	if got := m.since(statefulSet("flood", "late", 2)); !got.Equal(later) {
		t.Fatalf("after the TTL the namespace has no room again (got %s)", got)
	}
	if n := m.inNamespace["flood"]; n != 1 {
		t.Fatalf("expired entries left: %d in the namespace, want 1", n)
	}
}
