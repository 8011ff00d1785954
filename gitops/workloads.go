package gitops

import (
	"context"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
)

// WorkloadKind is one workload kind the manager restarts, as far as a
// provider needs to know it: to index workloads by the owner their metadata
// claims, to list them back, and to name them in wake keys.
type WorkloadKind struct {
	// Target is the kind as a KickRequest's targetRef names it.
	Target kickv1alpha1.TargetKind
	// APIVersion of the kind, e.g. apps/v1.
	APIVersion string
	// New returns an empty object of the kind; NewList an empty list.
	New     func() client.Object
	NewList func() client.ObjectList
}

// Group is the kind's API group ("" for the core group).
func (k WorkloadKind) Group() string {
	gv, err := schema.ParseGroupVersion(k.APIVersion)
	if err != nil {
		return ""
	}
	return gv.Group
}

// Workloads are the workload kinds active in the manager. The manager
// builds them from its workload registry (the apps/v1 kinds, plus Argo
// Rollouts when that integration runs) and hands them to the providers, so
// the gitops packages need nothing from the restart pipeline.
type Workloads []WorkloadKind

// Of returns the kind of a workload object (matched by its Go type); false
// for an object of no listed kind.
func (ws Workloads) Of(obj client.Object) (WorkloadKind, bool) {
	t := reflect.TypeOf(obj)
	for _, k := range ws {
		if reflect.TypeOf(k.New()) == t {
			return k, true
		}
	}
	return WorkloadKind{}, false
}

// IndexField registers the same field index on every kind.
func (ws Workloads) IndexField(ctx context.Context, indexer client.FieldIndexer, field string, fn client.IndexerFunc) error {
	for _, k := range ws {
		if err := indexer.IndexField(ctx, k.New(), field, fn); err != nil {
			return fmt.Errorf("index %s by %s: %w", k.Target, field, err)
		}
	}
	return nil
}

// TargetKeys returns the TargetKey of every workload, of any kind, that the
// field index holds under value. A kind that cannot be listed is skipped:
// a wake is best effort, and the request's own triggers remain.
func (ws Workloads) TargetKeys(ctx context.Context, r client.Reader, field, value string) []string {
	var keys []string
	for _, k := range ws {
		list := k.NewList()
		if err := r.List(ctx, list, client.MatchingFields{field: value}); err != nil {
			continue
		}
		_ = meta.EachListItem(list, func(o runtime.Object) error {
			if w, ok := o.(client.Object); ok {
				keys = append(keys, TargetKey(w.GetNamespace(), k.Target, w.GetName()))
			}
			return nil
		})
	}
	return keys
}
