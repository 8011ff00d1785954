package argocd

import (
	"context"

	argov1alpha1 "github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kick-operator/kick/gitops"
)

// Wakes implements gitops.Provider. An Application change wakes the
// requests it owns, the requests of the workloads it lists in
// status.resources and of the workloads (of every kind in
// Options.Workloads) whose tracking metadata names it, so a request waiting
// for an owner is re-evaluated when one appears. An AppProject change wakes
// the requests owned by its Applications. Nothing polls; only sync-window
// boundaries use timers (Decision.RequeueAt).
func (p *Provider) Wakes() []gitops.Wake {
	return []gitops.Wake{
		{Object: &argov1alpha1.Application{}, Keys: p.applicationKeys},
		{Object: &argov1alpha1.AppProject{}, Keys: p.projectKeys},
	}
}

func (p *Provider) applicationKeys(ctx context.Context, obj client.Object) []string {
	app, ok := obj.(*argov1alpha1.Application)
	if !ok {
		return nil
	}
	keys := []string{gitops.OwnerKey("Application", app.Namespace, app.Name)}
	for _, id := range managedWorkloads(app) {
		keys = append(keys, gitops.TargetKey(id.Namespace, workloadKinds[[2]string{id.Group, id.Kind}], id.Name))
	}
	ref := AppRef{Namespace: app.Namespace, Name: app.Name}
	return append(keys, p.opts.Workloads.TargetKeys(ctx, p.reader, ClaimIndex, ref.String())...)
}

func (p *Provider) projectKeys(ctx context.Context, obj client.Object) []string {
	proj, ok := obj.(*argov1alpha1.AppProject)
	if !ok || proj.Namespace != p.opts.Namespace {
		return nil
	}
	var list argov1alpha1.ApplicationList
	if err := p.reader.List(ctx, &list, client.MatchingFields{ProjectIndex: proj.Name}); err != nil {
		return nil
	}
	keys := make([]string, 0, len(list.Items))
	for _, app := range list.Items {
		keys = append(keys, gitops.OwnerKey("Application", app.Namespace, app.Name))
	}
	return keys
}
