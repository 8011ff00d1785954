package workload

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/execute"
)

func TestBuiltinRegistry(t *testing.T) {
	var nilRegistry *Registry // means Builtin()
	for _, r := range []*Registry{Builtin(), nilRegistry} {
		if got := len(r.Kinds()); got != 3 {
			t.Fatalf("builtin kinds: %d", got)
		}
		for _, k := range []kickv1alpha1.TargetKind{kickv1alpha1.TargetDeployment, kickv1alpha1.TargetStatefulSet, kickv1alpha1.TargetDaemonSet} {
			obj, err := r.New(k)
			if err != nil || KindOf(obj) != k {
				t.Fatalf("New(%s) = %T, %v", k, obj, err)
			}
			if r.APIVersion(k) != "apps/v1" {
				t.Fatalf("APIVersion(%s)", k)
			}
		}
		if _, err := r.New(kickv1alpha1.TargetRollout); err == nil || !strings.Contains(err.Error(), "--enable-argo-rollouts") {
			t.Fatalf("New(Rollout) without the integration: %v", err)
		}
		if _, err := r.New("CronJob"); err == nil || !strings.Contains(err.Error(), `"CronJob"`) {
			t.Fatalf("New(CronJob): %v", err)
		}
	}
	if KindOf(&corev1.Pod{}) != "" {
		t.Fatal("a Pod is a workload")
	}
}

func TestItemsAndHandle(t *testing.T) {
	list := &appsv1.DeploymentList{Items: []appsv1.Deployment{{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, {ObjectMeta: metav1.ObjectMeta{Name: "b"}}}}
	items := Items(list)
	if len(items) != 2 || items[1].GetName() != "b" {
		t.Fatalf("Items = %v", items)
	}
	// Items point into the list.
	items[0].SetLabels(map[string]string{"x": "y"})
	if list.Items[0].Labels["x"] != "y" {
		t.Fatal("Items copied the objects")
	}

	d := &list.Items[1]
	h, err := Builtin().Handle(t.Context(), nil, d)
	if err != nil {
		t.Fatal(err)
	}
	if h.Redirected() || h.Object != d || h.Ref().String() != "Deployment /b" {
		t.Fatalf("handle %+v", h)
	}
	if _, ok := h.Kind.Restarter.(execute.PodTemplate); !ok {
		t.Fatalf("a Deployment restarts through %T", h.Kind.Restarter)
	}
	if _, err := Builtin().Handle(t.Context(), nil, &corev1.Pod{}); err == nil {
		t.Fatal("a Pod got a handle")
	}
}
