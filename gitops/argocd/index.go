package argocd

import (
	"context"
	"fmt"

	argov1alpha1 "github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/gitops"
)

// Field indexes the provider registers with the manager's cache.
const (
	// ResourceIndex indexes Applications by the workloads their
	// status.resources list (ResourceKey).
	ResourceIndex = "argocd.kick.corewire.io/resource"
	// ProjectIndex indexes Applications by AppProject name.
	ProjectIndex = "argocd.kick.corewire.io/project"
	// ClaimIndex indexes workloads by the Application their tracking
	// annotation or instance label names ("namespace/name").
	ClaimIndex = "argocd.kick.corewire.io/claimed-application"
)

// workloadKinds maps the group/kind of the workload kinds KICK restarts to
// their target kind.
var workloadKinds = map[[2]string]kickv1alpha1.TargetKind{
	{"apps", "Deployment"}:     kickv1alpha1.TargetDeployment,
	{"apps", "StatefulSet"}:    kickv1alpha1.TargetStatefulSet,
	{"apps", "DaemonSet"}:      kickv1alpha1.TargetDaemonSet,
	{"argoproj.io", "Rollout"}: kickv1alpha1.TargetRollout,
}

// ResourceKey is the ResourceIndex value of one workload.
func ResourceKey(id Identity) string {
	return id.Group + "/" + id.Kind + "/" + id.Namespace + "/" + id.Name
}

// IdentityOf returns the tracking identity of a workload object: its group,
// kind, namespace and name. An object without type information (as the
// cache returns typed objects) is recognised among kinds.
func IdentityOf(obj client.Object, kinds gitops.Workloads) (Identity, error) {
	gvk := obj.GetObjectKind().GroupVersionKind()
	group, kind := gvk.Group, gvk.Kind
	if kind == "" {
		k, ok := kinds.Of(obj)
		if !ok {
			return Identity{}, fmt.Errorf("%T is not a workload kind this manager restarts", obj)
		}
		group, kind = k.Group(), string(k.Target)
	}
	return Identity{Group: group, Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName()}, nil
}

// managedWorkloads lists the workload entries of an Application's
// status.resources.
func managedWorkloads(app *argov1alpha1.Application) []Identity {
	var out []Identity
	for _, r := range app.Status.Resources {
		if _, ok := workloadKinds[[2]string{r.Group, r.Kind}]; ok && r.Name != "" {
			out = append(out, Identity{Group: r.Group, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name})
		}
	}
	return out
}

func indexResources(obj client.Object) []string {
	app, ok := obj.(*argov1alpha1.Application)
	if !ok {
		return nil
	}
	var keys []string
	for _, id := range managedWorkloads(app) {
		keys = append(keys, ResourceKey(id))
	}
	return keys
}

// projectOf is the AppProject an Application belongs to.
func projectOf(app *argov1alpha1.Application) string {
	if app.Spec.Project == "" {
		return "default"
	}
	return app.Spec.Project
}

func indexProject(obj client.Object) []string {
	app, ok := obj.(*argov1alpha1.Application)
	if !ok {
		return nil
	}
	return []string{projectOf(app)}
}

// claimIndexer indexes a workload by every Application its metadata may
// name, whatever the tracking method in force: it only decides which
// requests an Application change wakes, never who owns a workload.
func claimIndexer(controlPlane string, labelKeys []string) client.IndexerFunc {
	return func(obj client.Object) []string {
		var keys []string
		if v, ok := obj.GetAnnotations()[TrackingIDAnnotation]; ok {
			if id, err := ParseTrackingID(v); err == nil {
				if app, err := ParseInstanceName(id.App, controlPlane); err == nil {
					keys = append(keys, app.String())
				}
			}
		}
		for _, key := range labelKeys {
			if v, ok := obj.GetLabels()[key]; ok {
				if app, err := ParseInstanceName(v, controlPlane); err == nil {
					keys = append(keys, app.String())
				}
			}
		}
		return keys
	}
}

// registerIndexes adds the provider's indexes to the manager's cache.
func registerIndexes(ctx context.Context, indexer client.FieldIndexer, opts Options) error {
	for _, ix := range IndexFuncs(opts) {
		if err := indexer.IndexField(ctx, ix.Object, ix.Field, ix.Func); err != nil {
			return fmt.Errorf("index %T by %s: %w", ix.Object, ix.Field, err)
		}
	}
	return nil
}

// IndexFuncs lists the field indexes the provider reads, by object kind and
// index name (ClaimIndex on every kind of opts.Workloads), for a reader that
// is not the manager's cache.
func IndexFuncs(opts Options) []IndexFunc {
	out := []IndexFunc{
		{Object: &argov1alpha1.Application{}, Field: ResourceIndex, Func: indexResources},
		{Object: &argov1alpha1.Application{}, Field: ProjectIndex, Func: indexProject},
	}
	labelKeys := []string{DefaultLabelKey}
	if opts.LabelKey != "" && opts.LabelKey != DefaultLabelKey {
		labelKeys = append(labelKeys, opts.LabelKey)
	}
	for _, kind := range opts.Workloads {
		out = append(out, IndexFunc{Object: kind.New(), Field: ClaimIndex, Func: claimIndexer(opts.Namespace, labelKeys)})
	}
	return out
}

// IndexFunc is one field index.
type IndexFunc struct {
	Object client.Object
	Field  string
	Func   client.IndexerFunc
}
