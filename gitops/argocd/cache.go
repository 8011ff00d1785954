package argocd

import (
	argov1alpha1 "github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kick-operator/kick/gitops"
)

// CacheOptions restricts the manager's cache of Applications and
// AppProjects to the configured namespaces and keeps only what decisions
// read: an Application's project, destination, tracking-relevant metadata,
// sync and operation state and the identity of the workloads it lists; an
// AppProject's sync windows, source namespaces and the namespace patterns
// of its destinations.
func CacheOptions(opts Options) map[client.Object]cache.ByObject {
	apps := map[string]cache.Config{opts.Namespace: {}}
	for _, ns := range opts.ApplicationNamespaces {
		if ns != "" {
			apps[ns] = cache.Config{}
		}
	}
	return map[client.Object]cache.ByObject{
		&argov1alpha1.Application{}: {Namespaces: apps, Transform: slimApplication},
		&argov1alpha1.AppProject{}:  {Namespaces: map[string]cache.Config{opts.Namespace: {}}, Transform: slimProject},
	}
}

// slimApplication is the cache transform of Applications.
func slimApplication(in any) (any, error) {
	app, ok := in.(*argov1alpha1.Application)
	if !ok {
		return in, nil
	}
	out := &argov1alpha1.Application{TypeMeta: app.TypeMeta, ObjectMeta: gitops.SlimMeta(app.ObjectMeta, true)}
	out.Spec.Project = app.Spec.Project
	out.Spec.Destination = app.Spec.Destination
	if app.Operation != nil {
		out.Operation = &argov1alpha1.Operation{InitiatedBy: app.Operation.InitiatedBy}
	}
	out.Status.Sync.Status = app.Status.Sync.Status
	out.Status.ReconciledAt = app.Status.ReconciledAt
	if st := app.Status.OperationState; st != nil {
		out.Status.OperationState = &argov1alpha1.OperationState{Phase: st.Phase, StartedAt: st.StartedAt, FinishedAt: st.FinishedAt}
	}
	for _, r := range app.Status.Resources {
		if _, ok := workloadKinds[[2]string{r.Group, r.Kind}]; ok {
			out.Status.Resources = append(out.Status.Resources, argov1alpha1.ResourceStatus{
				Group: r.Group, Version: r.Version, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name,
			})
		}
	}
	return out, nil
}

// slimProject is the cache transform of AppProjects.
func slimProject(in any) (any, error) {
	proj, ok := in.(*argov1alpha1.AppProject)
	if !ok {
		return in, nil
	}
	out := &argov1alpha1.AppProject{TypeMeta: proj.TypeMeta, ObjectMeta: gitops.SlimMeta(proj.ObjectMeta, true)}
	out.Spec.SyncWindows = proj.Spec.SyncWindows
	out.Spec.SourceNamespaces = proj.Spec.SourceNamespaces
	for _, d := range proj.Spec.Destinations {
		out.Spec.Destinations = append(out.Spec.Destinations, argov1alpha1.ApplicationDestination{Namespace: d.Namespace})
	}
	return out, nil
}
