// Package indexed reads the manager cache's field indexes straight from the
// informers' indexers, returning the cache's own objects.
//
// A List through controller-runtime's cache, even with
// client.UnsafeDisableDeepCopy, allocates an empty item to find the
// informer and copies every item into a new typed list. On the restart
// path that is paid for every event and every decision (a Deployment's
// ReplicaSets, a workload's KickRequests), and it was the largest part of
// what a burst of restarts allocated. Objects returned here are shared with
// the cache: read them, never modify them (DeepCopy first).
package indexed

import (
	"context"
	"reflect"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Informers hands out the cache's informers; controller-runtime's cache
// does.
type Informers interface {
	GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error)
}

// Indexes finds the indexer holding a field index for a type of object.
// The zero value finds none (every read goes through the List).
type Indexes struct {
	informers Informers

	mu     sync.Mutex
	byType map[indexKey]toolscache.Indexer // nil value: no direct index
}

type indexKey struct {
	typ  any    // names the type of object: a reflect.Type, or a caller's own key
	name string // of the informer index
}

// NewIndexes reads the indexes of informers (nil: none).
func NewIndexes(informers Informers) *Indexes { return &Indexes{informers: informers} }

// IndexName is the informer index controller-runtime keeps a field index
// in, and Key the key of value in namespace ("__all_namespaces" for a
// lookup across namespaces): its internal FieldIndexName and
// KeyToNamespacedKey. TestIndexesReadControllerRuntimesIndex registers an
// index through controller-runtime's own cache and fails if either changes.
func IndexName(field string) string { return "field:" + field }

// Key is the key of a field index value in namespace; see IndexName.
func Key(namespace, value string) string {
	if namespace == "" {
		namespace = "__all_namespaces"
	}
	return namespace + "/" + value
}

// Lookup returns the objects in namespace ("": every namespace) whose
// field index holds value, and whether the index could be read directly.
// typ names their type (the same key always for the same type), and newObj
// makes one, called only until the type's informer is known.
func (x *Indexes) Lookup(ctx context.Context, typ any, newObj func() client.Object, namespace, field, value string) ([]any, bool) {
	return x.lookup(ctx, typ, newObj, IndexName(field), Key(namespace, value))
}

// lookup reads the informer index name of the type typ at key; newObj
// makes an object of typ, only when its informer is not known yet.
func (x *Indexes) lookup(ctx context.Context, typ any, newObj func() client.Object, name, key string) ([]any, bool) {
	idx := x.indexer(ctx, typ, newObj, name)
	if idx == nil {
		return nil, false
	}
	objs, err := idx.ByIndex(name, key)
	if err != nil {
		return nil, false
	}
	return objs, true
}

// indexer returns the synced indexer of typ's informer when it holds the
// index name, or nil. GetInformer waits for the informer's first sync, as
// a List through the cache does, so an index is never read half-filled.
// A failed lookup is not remembered: the next call asks again.
func (x *Indexes) indexer(ctx context.Context, typ any, newObj func() client.Object, name string) toolscache.Indexer {
	if x == nil || x.informers == nil {
		return nil
	}
	key := indexKey{typ, name}
	x.mu.Lock()
	idx, known := x.byType[key]
	x.mu.Unlock()
	if known {
		return idx
	}
	inf, err := x.informers.GetInformer(ctx, newObj())
	if err != nil {
		return nil
	}
	if s, ok := inf.(interface{ GetIndexer() toolscache.Indexer }); ok {
		if _, has := s.GetIndexer().GetIndexers()[name]; has {
			idx = s.GetIndexer()
		}
	}
	x.mu.Lock()
	if x.byType == nil {
		x.byType = map[indexKey]toolscache.Indexer{}
	}
	x.byType[key] = idx
	x.mu.Unlock()
	return idx
}

// Client is the manager's client with its cache's Indexes beside it, so
// that ByField finds them behind a client.Reader.
type Client struct {
	client.Client
	Indexes *Indexes
}

// NewClient is a manager.Options.NewClient: controller-runtime's own client
// (reads from the cache), carrying the cache's indexes.
func NewClient(config *rest.Config, options client.Options) (client.Client, error) {
	c, err := client.New(config, options)
	if err != nil {
		return nil, err
	}
	var informers Informers
	if options.Cache != nil {
		informers, _ = options.Cache.Reader.(Informers)
	}
	return &Client{Client: c, Indexes: NewIndexes(informers)}, nil
}

// ByField returns the objects of type T in namespace ("": every namespace)
// whose field index holds value. When r is a Client whose cache exposes the
// index, they are the cache's own objects (read them, never modify them);
// otherwise they come from r.List into newList() with that field selector,
// without a deep copy.
func ByField[T any, PT interface {
	*T
	client.Object
}](ctx context.Context, r client.Reader, newList func() client.ObjectList, namespace, field, value string) ([]PT, error) {
	opts := []client.ListOption{client.MatchingFields{field: value}}
	return read[T, PT](ctx, r, newList, IndexName(field), Key(namespace, value), namespace, opts)
}

// InNamespace returns the objects of type T in namespace, like ByField,
// from the informer's namespace index.
func InNamespace[T any, PT interface {
	*T
	client.Object
}](ctx context.Context, r client.Reader, newList func() client.ObjectList, namespace string) ([]PT, error) {
	return read[T, PT](ctx, r, newList, toolscache.NamespaceIndex, namespace, namespace, nil)
}

// read reads the informer index name at key when r is a Client that can,
// else lists with opts in namespace ("": every namespace).
func read[T any, PT interface {
	*T
	client.Object
}](ctx context.Context, r client.Reader, newList func() client.ObjectList, name, key, namespace string, opts []client.ListOption) ([]PT, error) {
	if c, ok := r.(*Client); ok && key != "" {
		newObj := func() client.Object { return PT(new(T)) }
		if objs, answered := c.Indexes.lookup(ctx, reflect.TypeFor[PT](), newObj, name, key); answered {
			out := make([]PT, 0, len(objs))
			for _, o := range objs {
				if obj, ok := o.(PT); ok {
					out = append(out, obj)
				}
			}
			return out, nil
		}
	}
	list := newList()
	opts = append(opts, client.UnsafeDisableDeepCopy)
	if namespace != "" {
		opts = append(opts, client.InNamespace(namespace))
	}
	if err := r.List(ctx, list, opts...); err != nil {
		return nil, err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	out := make([]PT, 0, len(items))
	for _, o := range items {
		if obj, ok := o.(PT); ok {
			out = append(out, obj)
		}
	}
	return out, nil
}
