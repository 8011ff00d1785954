package observe

import (
	"context"
	"sync"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/discovery"
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
	informers informerGetter // nil: every kind goes through the List

	mu     sync.Mutex
	byKind map[kickv1alpha1.TargetKind]toolscache.Indexer // nil value: no direct index
}

type informerGetter interface {
	GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error)
}

// controller-runtime's field indexes are informer indexes named
// "field:NAME", keyed "NAMESPACE/VALUE" (its internal FieldIndexName and
// KeyToNamespacedKey). TestConsumerIndexReadsControllerRuntimesIndex
// registers the index through controller-runtime's own cache and fails if
// either changes (the lookup would otherwise fall back to the List, or miss
// consumers).
func fieldIndexName(field string) string { return "field:" + field }

func namespacedIndexKey(namespace, value string) string { return namespace + "/" + value }

// consumers returns the workloads of kind wk in namespace that consume the
// source whose discovery.IndexKey is key (the cache's objects: read only);
// answered is false when the index cannot be read directly.
func (c *consumerIndex) consumers(ctx context.Context, wk workload.Kind, namespace, key string) (objs []any, answered bool) {
	idx := c.indexer(ctx, wk)
	if idx == nil {
		return nil, false
	}
	objs, err := idx.ByIndex(fieldIndexName(discovery.SourceIndex), namespacedIndexKey(namespace, key))
	if err != nil {
		return nil, false
	}
	return objs, true
}

// indexer returns the synced indexer of wk's informer holding
// discovery.SourceIndex, or nil. GetInformer waits for the informer's
// first sync, as a List through the cache does, so the index is never read
// half-filled.
func (c *consumerIndex) indexer(ctx context.Context, wk workload.Kind) toolscache.Indexer {
	if c == nil || c.informers == nil {
		return nil
	}
	c.mu.Lock()
	idx, known := c.byKind[wk.Target]
	c.mu.Unlock()
	if known {
		return idx
	}
	inf, err := c.informers.GetInformer(ctx, wk.New())
	if err != nil {
		return nil // not remembered: the next event asks again
	}
	if s, ok := inf.(interface{ GetIndexer() toolscache.Indexer }); ok {
		if _, has := s.GetIndexer().GetIndexers()[fieldIndexName(discovery.SourceIndex)]; has {
			idx = s.GetIndexer()
		}
	}
	c.mu.Lock()
	if c.byKind == nil {
		c.byKind = map[kickv1alpha1.TargetKind]toolscache.Indexer{}
	}
	c.byKind[wk.Target] = idx
	c.mu.Unlock()
	return idx
}
