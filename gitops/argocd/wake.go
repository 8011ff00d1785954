package argocd

import (
	"context"

	argov1alpha1 "github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/gitops"
)

// Wakes implements gitops.Provider. An Application change wakes the
// requests it owns, the requests of the workloads it lists in
// status.resources and of the workloads (of every kind in
// Options.Workloads) whose tracking metadata names it, so a request waiting
// for an owner is re-evaluated when one appears. An AppProject change wakes
// what a change of each of its Applications would wake. A change to argocd-cm (tracking
// method, instance label key, installation id) wakes every open request
// that Argo CD's owner resolution decided. Nothing polls; only sync-window
// boundaries use timers (Decision.RequeueAt).
func (p *Provider) Wakes() []gitops.Wake {
	return []gitops.Wake{
		{Object: &argov1alpha1.Application{}, Keys: p.applicationKeys},
		{Object: &argov1alpha1.AppProject{}, Keys: p.projectKeys},
		{Object: settingsMetadata(), Keys: p.settingsKeys},
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

// projectKeys wakes, for each Application of the project, what an
// Application change wakes: its destinations take part in owner
// resolution, so a request waiting for an owner the project did not admit
// is re-evaluated too.
func (p *Provider) projectKeys(ctx context.Context, obj client.Object) []string {
	proj, ok := obj.(*argov1alpha1.AppProject)
	if !ok || proj.Namespace != p.opts.Namespace {
		return nil
	}
	var list argov1alpha1.ApplicationList
	if err := p.reader.List(ctx, &list, client.MatchingFields{ProjectIndex: proj.Name}); err != nil {
		return nil
	}
	var keys []string
	for i := range list.Items {
		keys = append(keys, p.applicationKeys(ctx, &list.Items[i])...)
	}
	return keys
}

// settingsMetadata is the object the argocd-cm wake watches: ConfigMaps as
// metadata only, the way the manager already caches every ConfigMap (their
// data never reaches the cache), so the wake adds no informer of its own.
// A change of argocd-cm's data changes its resourceVersion, which is enough
// to notice it; the settings themselves are read past the cache.
func settingsMetadata() *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: corev1.SchemeGroupVersion.String(), Kind: "ConfigMap"}}
}

// settingsKeys wakes, on a change to argocd-cm in the Argo CD namespace,
// every open request decided by a provider that resolves owners through
// this one: Argo CD itself, Kargo, and Auto (which may now find an Argo CD
// owner). It first drops the remembered settings so the re-evaluation
// reads the new ones.
func (p *Provider) settingsKeys(_ context.Context, obj client.Object) []string {
	if obj.GetNamespace() != p.opts.Namespace || obj.GetName() != SettingsConfigMap {
		return nil
	}
	p.settings.forget()
	return []string{
		gitops.ProviderKey(kickv1alpha1.ProviderArgoCD),
		gitops.ProviderKey(kickv1alpha1.ProviderKargo),
		gitops.ProviderKey(kickv1alpha1.ProviderAuto),
	}
}
