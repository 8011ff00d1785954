package discovery

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// SourceIndex is the cache field index that files each workload under the
// IndexKey of every source it consumes. A source's consumers are then one
// cached List with client.MatchingFields{SourceIndex: IndexKey(kind, name)}
// in the source's namespace; the cache scopes field indexes per namespace.
const SourceIndex = "kick.corewire.io/consumes"

// IndexKey returns the SourceIndex value for a source, "Kind/name".
func IndexKey(kind, name string) string { return kind + "/" + name }

// IndexFunc is the client.IndexerFunc for SourceIndex: the index keys of the
// workload's dependencies, nil for an unsupported object.
func IndexFunc(obj client.Object) []string {
	deps := FromWorkload(obj)
	if len(deps) == 0 {
		return nil
	}
	keys := make([]string, len(deps))
	for i, d := range deps {
		keys[i] = d.IndexKey()
	}
	return keys
}

// indexedWorkloads returns one empty object per workload kind that
// RegisterIndexes indexes.
func indexedWorkloads() []client.Object {
	return []client.Object{&appsv1.Deployment{}, &appsv1.StatefulSet{}, &appsv1.DaemonSet{}}
}

// RegisterIndexes registers SourceIndex for Deployments, StatefulSets and
// DaemonSets. Call it before the manager's cache starts.
func RegisterIndexes(ctx context.Context, indexer client.FieldIndexer) error {
	return RegisterIndexesFor(ctx, indexer, indexedWorkloads()...)
}

// RegisterIndexesFor registers SourceIndex for the given workload kinds (one
// empty object each), e.g. the kinds of the manager's workload registry.
func RegisterIndexesFor(ctx context.Context, indexer client.FieldIndexer, workloads ...client.Object) error {
	for _, obj := range workloads {
		if err := indexer.IndexField(ctx, obj, SourceIndex, IndexFunc); err != nil {
			return fmt.Errorf("index %T by %s: %w", obj, SourceIndex, err)
		}
	}
	return nil
}
