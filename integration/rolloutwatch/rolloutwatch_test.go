package rolloutwatch

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kick-operator/kick/restart/freshness"
)

func deployment(name, stamp string, available bool) *appsv1.Deployment {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Generation: 2}}
	if stamp != "" {
		d.Spec.Template = corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{freshness.RestartedAtAnnotation: stamp}}}
	}
	if available {
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 1, UpdatedReplicas: 1, AvailableReplicas: 1}
	}
	return d
}

func TestSamplerCountsRolloutsFromStatus(t *testing.T) {
	s := &Sampler{state: map[string]*appsv1.Deployment{}, rolling: map[string]bool{}, stamps: map[string][]string{},
		startedAt: map[string]time.Time{}, availableAt: map[string]time.Time{}}
	clock := time.Unix(0, 0)
	s.now = func() time.Time { clock = clock.Add(time.Second); return clock }
	for _, step := range []struct {
		typ watch.EventType
		d   *appsv1.Deployment
	}{
		{watch.Added, deployment("a", "", true)},
		{watch.Added, deployment("b", "", true)},
		{watch.Modified, deployment("a", "s1", false)},
		{watch.Modified, deployment("b", "s1", false)},
		{watch.Modified, deployment("a", "s1", true)},
		{watch.Modified, deployment("a", "s2", false)},
		{watch.Deleted, deployment("b", "s1", false)},
		{watch.Modified, deployment("a", "s2", true)},
	} {
		s.observe(step.typ, step.d)
	}
	if peak, _ := s.Peak(); peak != 2 {
		t.Errorf("peak %d, want 2", peak)
	}
	if got := s.Restarts(); got["ns/a"] != 2 || got["ns/b"] != 1 {
		t.Errorf("restarts %v, want a twice and b once", got)
	}
	var counts []int
	for _, p := range s.Timeline() {
		counts = append(counts, p.InProgress)
	}
	want := []int{0, 1, 2, 1, 2, 1, 0}
	if len(counts) != len(want) {
		t.Fatalf("timeline %v, want %v", counts, want)
	}
	for i := range want {
		if counts[i] != want[i] {
			t.Fatalf("timeline %v, want %v", counts, want)
		}
	}
	if ok, err := s.Settled(2, "ns/a"); !ok {
		t.Errorf("a is settled after two restarts: %v", err)
	}
	if started, available := s.Times("ns/a"); !started.Equal(time.Unix(6, 0)) || !available.Equal(time.Unix(8, 0)) {
		t.Errorf("a's second restart started %v and was available %v, want the sixth and eighth events", started, available)
	}
	if !s.LastStart().Equal(time.Unix(6, 0)) {
		t.Errorf("last start %v, want the sixth event", s.LastStart())
	}
}
