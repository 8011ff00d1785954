package rollout

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/execute"
	"github.com/kick-operator/kick/restart/freshness"
	"github.com/kick-operator/kick/restart/workload"
)

// WorkloadRefIndex indexes Rollouts by the Deployment they run through
// spec.workloadRef ("Deployment/<name>").
const WorkloadRefIndex = "kick.corewire.io/rollout-workload-ref"

// Kind is the Rollout workload kind for a workload.Registry.
func Kind() workload.Kind {
	return workload.Kind{
		Target:     kickv1alpha1.TargetRollout,
		APIVersion: kickv1alpha1.ArgoRolloutsAPIVersion,
		New:        func() client.Object { return &Rollout{} },
		NewList:    func() client.ObjectList { return &RolloutList{} },
		Inspect: func(ctx context.Context, c client.Reader, obj client.Object) (freshness.Rollout, error) {
			ro, ok := obj.(*Rollout)
			if !ok {
				return freshness.Rollout{}, fmt.Errorf("cannot inspect %T as a Rollout", obj)
			}
			rss, err := workload.ControlledReplicaSets(ctx, c, ro)
			if err != nil {
				return freshness.Rollout{}, err
			}
			return Inspect(ro, rss), nil
		},
		Restarter: execute.RestartAt{},
		Follows: func(obj client.Object) []workload.Ref {
			ro, ok := obj.(*Rollout)
			if !ok {
				return nil
			}
			if d := ro.ReferencedDeployment(); d != "" {
				return []workload.Ref{{Kind: kickv1alpha1.TargetDeployment, Namespace: ro.Namespace, Name: d}}
			}
			return nil
		},
	}
}

// Register adds the Rollout kind, with RedirectReferencedDeployment, to a
// registry.
func Register(r *workload.Registry) *workload.Registry {
	return r.With(Kind(), RedirectReferencedDeployment)
}

// RegisterIndexes registers WorkloadRefIndex. Call it before the manager's
// cache starts, and only when the Rollout kind is served.
func RegisterIndexes(ctx context.Context, indexer client.FieldIndexer) error {
	return indexer.IndexField(ctx, &Rollout{}, WorkloadRefIndex, WorkloadRefIndexFunc)
}

// WorkloadRefIndexFunc is the client.IndexerFunc of WorkloadRefIndex.
func WorkloadRefIndexFunc(obj client.Object) []string {
	ro, ok := obj.(*Rollout)
	if !ok {
		return nil
	}
	if d := ro.ReferencedDeployment(); d != "" {
		return []string{"Deployment/" + d}
	}
	return nil
}

// RedirectReferencedDeployment is the workload.Redirect of a Deployment that
// a Rollout runs through spec.workloadRef.
//
// Such a Deployment is where the pod template, and so the dependencies,
// live; it is what a KickPolicy selects and what a KickRequest targets. Its
// pods, though, are run by the Rollout. Once the Deployment is scaled to
// zero (the Rollouts controller does it with workloadRef.scaleDown, or the
// owner does), restarting it through its template would make the Rollout
// roll a new revision through every canary or blue-green step; instead the
// request restarts and follows the Rollout through spec.restartAt. While the
// Deployment still runs pods of its own (a migration in progress), or when
// several Rollouts reference it, it is restarted as an ordinary Deployment.
// The one referencing Rollout is returned in that case too (not taking
// over), so a restart written to it is still followed there after the
// Deployment is scaled up.
func RedirectReferencedDeployment(ctx context.Context, c client.Reader, target client.Object) (client.Object, bool, error) {
	d, ok := target.(*appsv1.Deployment)
	if !ok {
		return nil, false, nil
	}
	var list RolloutList
	if err := c.List(ctx, &list, client.InNamespace(d.Namespace), client.MatchingFields{WorkloadRefIndex: "Deployment/" + d.Name}); err != nil {
		return nil, false, fmt.Errorf("list Rollouts referencing Deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	var found *Rollout
	for i := range list.Items {
		if list.Items[i].DeletionTimestamp != nil {
			continue
		}
		if found != nil {
			return nil, false, nil
		}
		found = &list.Items[i]
	}
	if found == nil {
		return nil, false, nil
	}
	return found, d.Spec.Replicas != nil && *d.Spec.Replicas == 0, nil
}
