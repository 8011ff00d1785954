package request

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/gitops"
	"github.com/kick-operator/kick/restart/workload"
)

const (
	// TargetIndex indexes KickRequests by target ("Deployment/web"), so the
	// requests of a workload come from the cache.
	TargetIndex = "kick.corewire.io/target"

	// WakeIndex indexes open KickRequests by the GitOps wake keys of their
	// owner and target (gitops.RequestKeys), so a change to an Application,
	// Kustomization or Promotion re-evaluates only the requests it concerns.
	WakeIndex = "kick.corewire.io/gitops-wake"
)

// RegisterIndexes registers TargetIndex, HaltIndex and WakeIndex on
// KickRequests.
func RegisterIndexes(ctx context.Context, indexer client.FieldIndexer) error {
	if err := indexer.IndexField(ctx, &kickv1alpha1.KickRequest{}, TargetIndex, func(obj client.Object) []string {
		kr, ok := obj.(*kickv1alpha1.KickRequest)
		if !ok {
			return nil
		}
		return []string{workload.TargetKey(kr.Spec.TargetRef.Kind, kr.Spec.TargetRef.Name)}
	}); err != nil {
		return err
	}
	if err := registerHaltIndex(ctx, indexer); err != nil {
		return err
	}
	// Only open requests are indexed for waking: a finished request has
	// nothing to wait for, and the index stays as small as the open set.
	return indexer.IndexField(ctx, &kickv1alpha1.KickRequest{}, WakeIndex, func(obj client.Object) []string {
		kr, ok := obj.(*kickv1alpha1.KickRequest)
		if !ok || kr.Status.Phase.IsTerminal() {
			return nil
		}
		return gitops.RequestKeys(kr)
	})
}
