package observe

import (
	"context"

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
