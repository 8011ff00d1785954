package rollout

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// CacheOptions are the manager cache's settings for Rollouts: see
// TransformRollout.
func CacheOptions() cache.ByObject {
	return cache.ByObject{Transform: TransformRollout}
}

// TransformRollout is the cache transform of Rollouts: of the managedFields
// it keeps only the latest write of the status subresource, without its
// field set (LastStatusWrite reads its time); it drops the rest, as the
// cache does for other kinds. Anything else passes through unchanged.
func TransformRollout(in any) (any, error) {
	ro, ok := in.(*Rollout)
	if !ok {
		return in, nil
	}
	var keep []metav1.ManagedFieldsEntry
	if last, ok := LastStatusWrite(ro); ok {
		keep = []metav1.ManagedFieldsEntry{{Subresource: "status", Time: &metav1.Time{Time: last}}}
	}
	ro.ManagedFields = keep
	return ro, nil
}
