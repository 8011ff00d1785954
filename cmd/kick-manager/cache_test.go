package main

import (
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kick-operator/kick/restart/freshness"
)

// TestCacheCompactsReplicaSets: the manager's cache keeps ReplicaSets
// without their pod templates (a fingerprint instead).
func TestCacheCompactsReplicaSets(t *testing.T) {
	opts := parsed(t)
	active, err := probeIntegrations(opts, served(), func(string, schema.GroupVersionKind) {})
	if err != nil {
		t.Fatal(err)
	}
	byObject := cacheByObject(active, opts)
	var transform func(any) (any, error)
	for obj, o := range byObject {
		if _, ok := obj.(*appsv1.ReplicaSet); ok {
			transform = o.Transform
		}
	}
	if transform == nil {
		t.Fatalf("no ReplicaSet transform in the cache options %v", keys(byObject))
	}
	rs := &appsv1.ReplicaSet{}
	rs.Spec.Template.Labels = map[string]string{"app": "web"}
	rs.Spec.Template.Spec.Containers = []corev1.Container{{Name: "web", Image: "web:v1"}}
	out, err := transform(rs)
	if err != nil {
		t.Fatal(err)
	}
	if got := out.(*appsv1.ReplicaSet); len(got.Spec.Template.Spec.Containers) != 0 || got.Annotations[freshness.TemplateFingerprintAnnotation] == "" {
		t.Errorf("the cache keeps ReplicaSets in full: %+v", got)
	}
}

func keys(m map[client.Object]cache.ByObject) []string {
	var out []string
	for obj := range m {
		out = append(out, fmt.Sprintf("%T", obj))
	}
	return out
}
