package workload

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kick-operator/kick/restart/freshness"
)

// OwnerIndex indexes ReplicaSets by the UID of their controlling owner, so a
// Deployment's ReplicaSets come from the cache without a LIST.
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

// Inspect returns the rollout state of a workload (σ and completeness),
// reading a Deployment's ReplicaSets through OwnerIndex.
func Inspect(ctx context.Context, c client.Reader, obj client.Object) (freshness.Rollout, error) {
	switch w := obj.(type) {
	case *appsv1.Deployment:
		var rss appsv1.ReplicaSetList
		if err := c.List(ctx, &rss, client.InNamespace(w.Namespace), client.MatchingFields{OwnerIndex: string(w.UID)}); err != nil {
			return freshness.Rollout{}, fmt.Errorf("list ReplicaSets of %s/%s: %w", w.Namespace, w.Name, err)
		}
		return freshness.Deployment(w, rss.Items), nil
	case *appsv1.StatefulSet:
		return freshness.StatefulSet(w), nil
	case *appsv1.DaemonSet:
		return freshness.DaemonSet(w), nil
	}
	return freshness.Rollout{}, fmt.Errorf("cannot inspect the rollout of %T", obj)
}
