package workload

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kick-operator/kick/restart/freshness"
	"github.com/kick-operator/kick/restart/indexed"
)

// OwnerIndex indexes ReplicaSets by the UID of their controlling owner, so a
// Deployment's (or a Rollout's) ReplicaSets come from the cache without a LIST.
const OwnerIndex = "kick.corewire.io/controller-uid"

// RegisterIndexes registers OwnerIndex on ReplicaSets.
func RegisterIndexes(ctx context.Context, indexer client.FieldIndexer) error {
	return indexer.IndexField(ctx, &appsv1.ReplicaSet{}, OwnerIndex, func(obj client.Object) []string {
		for _, ref := range obj.GetOwnerReferences() {
			if ref.Controller != nil && *ref.Controller {
				return []string{string(ref.UID)}
			}
		}
		return nil
	})
}

// ReplicaSetCacheOptions caches ReplicaSets cut down by
// freshness.CompactReplicaSet: a Deployment keeps up to ten old revisions,
// each a full copy of a pod template, and rollout decisions only compare
// templates, which the fingerprint does. Merge it into cache.Options.ByObject.
func ReplicaSetCacheOptions() cache.ByObject {
	return cache.ByObject{Transform: TransformReplicaSet}
}

// TransformReplicaSet is the cache transform of ReplicaSets (see
// ReplicaSetCacheOptions). Anything else, such as a deletion tombstone,
// passes through unchanged.
func TransformReplicaSet(in any) (any, error) {
	if rs, ok := in.(*appsv1.ReplicaSet); ok {
		freshness.CompactReplicaSet(rs)
	}
	return in, nil
}

// ControlledReplicaSets returns the ReplicaSets controlled by owner, read
// through OwnerIndex. They are the cache's own objects (not copies, which
// cost more than the inspection): read them, never modify them.
func ControlledReplicaSets(ctx context.Context, c client.Reader, owner client.Object) ([]*appsv1.ReplicaSet, error) {
	rss, err := indexed.ByField[appsv1.ReplicaSet](ctx, c, newReplicaSetList, owner.GetNamespace(), OwnerIndex, string(owner.GetUID()))
	if err != nil {
		return nil, fmt.Errorf("list ReplicaSets of %s/%s: %w", owner.GetNamespace(), owner.GetName(), err)
	}
	return rss, nil
}

func newReplicaSetList() client.ObjectList { return &appsv1.ReplicaSetList{} }
