package observe

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kick-operator/kick/restart/discovery"
	"github.com/kick-operator/kick/restart/indexed"
	"github.com/kick-operator/kick/restart/workload"
)

// consumerIndex answers "does a workload of this kind consume the source?"
// straight from the workload informer's discovery.SourceIndex. followed
// asks it for every event of every Secret and ConfigMap in the cluster
// (at start-up once for each), and a typed List through the cache
// allocates an empty workload object per call to find its informer: at
// 150,000 sources that was most of what the manager allocated while it
// started. A kind whose informer does not expose that index is answered
// by the List, as before.
type consumerIndex struct {
	indexes *indexed.Indexes // nil: every kind goes through the List
}

// consumers returns the workloads of kind wk in namespace that consume the
// source whose discovery.IndexKey is key (the cache's objects: read only);
// answered is false when the index cannot be read directly.
func (c *consumerIndex) consumers(ctx context.Context, wk workload.Kind, namespace, key string) (objs []any, answered bool) {
	if c == nil {
		return nil, false
	}
	return c.indexes.Lookup(ctx, wk.Target, wk.New, namespace, discovery.SourceIndex, key)
}

// consumersOf returns the workloads of kind wk in namespace whose pod spec
// names the source indexKey (discovery.SourceIndex): from the cache's index
// when it can be read directly, else through a List. They are the cache's
// own objects (labels, annotations and pod template are read, never
// modified).
func (r *SourceReconciler) consumersOf(ctx context.Context, wk workload.Kind, namespace, indexKey string) ([]client.Object, error) {
	if objs, answered := r.consumerIndex.consumers(ctx, wk, namespace, indexKey); answered {
		out := make([]client.Object, 0, len(objs))
		for _, o := range objs {
			if w, ok := o.(client.Object); ok {
				out = append(out, w)
			}
		}
		return out, nil
	}
	list := wk.NewList()
	if err := r.Client.List(ctx, list, client.InNamespace(namespace), client.MatchingFields{discovery.SourceIndex: indexKey}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	out := make([]client.Object, 0, len(items))
	for _, o := range items {
		if w, ok := o.(client.Object); ok {
			out = append(out, w)
		}
	}
	return out, nil
}
