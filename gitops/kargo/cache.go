package kargo

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CacheOptions keeps only what the gate reads of Stages (their current
// promotion) and Promotions (their Stage and phase): a Stage's freight
// history and a Promotion's steps are large and never consulted.
func CacheOptions() map[client.Object]cache.ByObject {
	return map[client.Object]cache.ByObject{
		newObject(StageKind):     {Transform: keep([]string{"status", "currentPromotion"})},
		newObject(PromotionKind): {Transform: keep([]string{"spec", "stage"}, []string{"status", "phase"})},
	}
}

// keep returns a transform that reduces an unstructured object to its
// identity, labels, annotations and the given fields.
func keep(paths ...[]string) func(any) (any, error) {
	return func(in any) (any, error) {
		u, ok := in.(*unstructured.Unstructured)
		if !ok {
			return in, nil
		}
		out := &unstructured.Unstructured{Object: map[string]any{}}
		out.SetAPIVersion(u.GetAPIVersion())
		out.SetKind(u.GetKind())
		out.SetName(u.GetName())
		out.SetNamespace(u.GetNamespace())
		out.SetUID(u.GetUID())
		out.SetResourceVersion(u.GetResourceVersion())
		out.SetGeneration(u.GetGeneration())
		out.SetCreationTimestamp(u.GetCreationTimestamp())
		out.SetDeletionTimestamp(u.GetDeletionTimestamp())
		out.SetLabels(u.GetLabels())
		out.SetAnnotations(u.GetAnnotations())
		for _, path := range paths {
			if v, found, err := unstructured.NestedFieldNoCopy(u.Object, path...); err == nil && found {
				_ = unstructured.SetNestedField(out.Object, v, path...)
			}
		}
		return out, nil
	}
}
