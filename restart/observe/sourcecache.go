package observe

import (
	"context"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kick-operator/kick/restart/discovery"
	"github.com/kick-operator/kick/restart/indexed"
)

// SourceCache keeps the manager's cache of Secrets and ConfigMaps down to the sources that
// matter: those a managed workload consumes, those with an observation record, and those
// named with Follow, within the bounds of SetFollowLimits. Most of a cluster's Secrets are
// consumed by nothing KICK watches (service account tokens, Helm release Secrets,
// certificates); caching their metadata cost about half a kilobyte each, the largest thing
// the manager held.
//
// It sits between the cache's informers and the API server (cache.Options.NewInformer): the
// list and the watch of a source kind pass only the sources the SourceReconciler follows. A
// source passed once stays followed while it exists, so its cached copy never goes stale; the
// events of the others become bookmarks, which only move the informer's resourceVersion on.
// A source that gains its first consumer after its last event is fetched once (Fetch) and
// put into the informer's store; its later events pass.
//
// Other components that watch sources through the same informers say which ones they need
// with Follow (by name) or Keep (by a predicate). Until a SourceReconciler adopts the cache
// (SetupWithManager with Options.SourceCache), every source passes, as without it.
type SourceCache struct {
	mu        sync.Mutex
	follows   func(kind string, src client.Object) bool // nil: every source passes
	informers indexed.Informers                         // waited on before the first list or watch
	waitFor   []client.Object                           // the informers follows and keepers read
	keepers   []func(kind string, src client.Object) bool
	readied   bool
	feeds     map[string]*sourceFeed
	always    map[sourceKey]struct{}
	// perNamespace and total bound the followed set of each kind (see SetFollowLimits).
	perNamespace, total int
}

// sourceKey names one source.
type sourceKey struct {
	kind            string
	namespace, name string
}

// sourceFeed is the state of one source kind's informer.
type sourceFeed struct {
	kind    string
	indexer toolscache.Indexer
	// followed are the sources whose events pass, whatever their consumers.
	followed map[types.NamespacedName]struct{}
	// perNamespace counts followed by namespace; capped are the namespaces at their bound.
	perNamespace map[string]int
	capped       map[string]bool
	refusals     int // sources not followed because of a bound
	// fetching counts, per source being fetched, the events of it that passed meanwhile.
	fetching map[types.NamespacedName]*fetch
}

type fetch struct{ waiters, passed int }

// NewSourceCache returns a SourceCache that passes every source until a SourceReconciler
// adopts it.
func NewSourceCache() *SourceCache {
	return &SourceCache{feeds: map[string]*sourceFeed{}, always: map[sourceKey]struct{}{}}
}

// Follow keeps a source in the cache whether or not anything consumes it, for a component that
// watches it by name (Argo CD's argocd-cm). Call it before the manager starts.
func (c *SourceCache) Follow(kind, namespace, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.always[sourceKey{kind, namespace, name}] = struct{}{}
}

// Keep keeps the sources keep accepts as well, for a component that watches sources for
// reasons of its own (the notification policies' credentials). keep reads the informers of
// waitFor, which are synced before the first source is judged. Call it before the manager
// starts.
func (c *SourceCache) Keep(keep func(kind string, src client.Object) bool, waitFor ...client.Object) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.keepers = append(c.keepers, keep)
	c.waitFor = append(c.waitFor, waitFor...)
}

// adopt makes the cache pass only the sources follows (or a keeper) accepts, once the
// informers of waitFor, which follows reads, are synced.
func (c *SourceCache) adopt(follows func(kind string, src client.Object) bool, informers indexed.Informers, waitFor []client.Object) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.follows, c.informers = follows, informers
	c.waitFor = append(c.waitFor, waitFor...)
}

// wanted reports whether follows or a keeper accepts a source.
func (c *SourceCache) wanted(follows func(string, client.Object) bool, keepers []func(string, client.Object) bool, kind string, src client.Object) bool {
	if follows(kind, src) {
		return true
	}
	for _, keep := range keepers {
		if keep(kind, src) {
			return true
		}
	}
	return false
}

// NewInformer is the manager cache's cache.Options.NewInformer: the informers of Secrets and
// ConfigMaps cached metadata-only list and watch through the filter; every other informer is
// client-go's, unchanged.
func (c *SourceCache) NewInformer(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
	kind := sourceKindOf(obj)
	if kind == "" {
		return toolscache.NewSharedIndexInformer(lw, obj, resync, indexers)
	}
	c.mu.Lock()
	feed := c.feedLocked(kind)
	c.mu.Unlock()
	inf := toolscache.NewSharedIndexInformer(&filteredListWatch{cache: c, feed: feed, lw: toolscache.ToListerWatcherWithContext(lw)}, obj, resync, indexers)
	c.mu.Lock()
	feed.indexer = inf.GetIndexer()
	c.mu.Unlock()
	return inf
}

func (c *SourceCache) feedLocked(kind string) *sourceFeed {
	f := c.feeds[kind]
	if f == nil {
		f = &sourceFeed{kind: kind, followed: map[types.NamespacedName]struct{}{}, fetching: map[types.NamespacedName]*fetch{},
			perNamespace: map[string]int{}, capped: map[string]bool{}}
		c.feeds[kind] = f
	}
	return f
}

// sourceKindOf returns "Secret" or "ConfigMap" for the metadata-only object of a source kind,
// else "".
func sourceKindOf(obj runtime.Object) string {
	if _, ok := obj.(*metav1.PartialObjectMetadata); !ok {
		return ""
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	if gvk.Group != "" || gvk.Version != discovery.CoreAPIVersion {
		return ""
	}
	for _, k := range sourceKinds {
		if gvk.Kind == k.name {
			return k.name
		}
	}
	return ""
}

// passes decides whether an object of the feed goes to the informer, and remembers it as
// followed when it does; a source the follow limits refuse does not pass (see
// followLocked). Called for every listed object and watch event.
func (c *SourceCache) passes(f *sourceFeed, obj client.Object) bool {
	key := types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
	c.mu.Lock()
	follows, keepers := c.follows, c.keepers
	_, followed := f.followed[key]
	_, always := c.always[sourceKey{f.kind, key.Namespace, key.Name}]
	c.mu.Unlock()
	if follows == nil {
		return true
	}
	pass := followed || always || c.wanted(follows, keepers, f.kind, obj)
	if !pass {
		return false
	}
	c.mu.Lock()
	first := false
	if !always {
		pass, first = c.followLocked(f, key)
	}
	if st := f.fetching[key]; st != nil && pass {
		st.passed++
	}
	c.mu.Unlock()
	if first {
		c.logRefused(f.kind, key)
	}
	return pass
}

// isFollowed reports whether the cache follows the source (its events pass); false for a nil
// cache, or a kind whose informer was not built through NewInformer.
func (c *SourceCache) isFollowed(kind string, src client.Object) bool {
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	f := c.feeds[kind]
	if f == nil || c.follows == nil {
		return false
	}
	_, ok := f.followed[types.NamespacedName{Namespace: src.GetNamespace(), Name: src.GetName()}]
	return ok
}

// forgetDeleted stops following a deleted source, so the followed set holds only sources that
// exist: it does not grow with every consumed Secret a tenant creates and deletes. A source
// created again under the name passes again if something follows it then.
func (c *SourceCache) forgetDeleted(f *sourceFeed, obj client.Object) {
	key := types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
	c.mu.Lock()
	defer c.mu.Unlock()
	if f.fetching[key] == nil {
		c.unfollowLocked(f, key)
	}
}

// waitReady waits, before the first list or watch, for the informers the filter reads.
func (c *SourceCache) waitReady(ctx context.Context) error {
	c.mu.Lock()
	informers, waitFor, done := c.informers, c.waitFor, c.readied
	c.mu.Unlock()
	if informers == nil || done {
		return nil
	}
	for _, obj := range waitFor {
		// The manager's cache returns an informer once it is synced.
		if _, err := informers.GetInformer(ctx, obj); err != nil {
			return err
		}
	}
	c.mu.Lock()
	c.readied = true
	c.mu.Unlock()
	return nil
}

// Fetch makes sure the cache holds a source that was not followed when its last event came:
// it reads the source's metadata through live (the API server) and, unless an event of it
// reached the informer meanwhile, puts it into the informer's store. From then on the source
// is followed. found reports whether the source exists; when it does, the cache holds it or
// an event on its way will. A source the cache holds already is not read. A source that does
// not exist is not followed (a name a workload references but nobody created costs nothing
// after the read), and one the follow limits refuse is not read: Fetch returns
// errFollowLimit.
func (c *SourceCache) Fetch(ctx context.Context, live client.Reader, kind string, key types.NamespacedName) (found bool, err error) {
	c.mu.Lock()
	f := c.feeds[kind]
	if f == nil || f.indexer == nil || c.follows == nil {
		c.mu.Unlock()
		return false, nil // nothing is filtered: the cache's answer stands
	}
	if _, held, _ := f.indexer.GetByKey(key.String()); held {
		c.mu.Unlock()
		return true, nil
	}
	ok, first := c.followLocked(f, key)
	if !ok {
		c.mu.Unlock()
		if first {
			c.logRefused(kind, key)
		}
		return false, errFollowLimit
	}
	st := f.fetching[key]
	if st == nil {
		st = &fetch{}
		f.fetching[key] = st
	}
	st.waiters++
	before := st.passed
	c.mu.Unlock()

	src := SourceMetadata(kind)
	// Quiet: client-go logs response bodies at high verbosity, and a source's metadata names
	// its data keys (managedFields) and may hold its content (last-applied-configuration).
	err = live.Get(logr.NewContext(ctx, logr.Discard()), key, src)

	c.mu.Lock()
	defer c.mu.Unlock()
	passed := st.passed != before
	if st.waiters--; st.waiters == 0 {
		delete(f.fetching, key)
		if err != nil && !passed {
			// Not there (or not read): nothing to follow unless another read stored it.
			if _, held, _ := f.indexer.GetByKey(key.String()); !held {
				c.unfollowLocked(f, key)
			}
		}
	}
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, err
	case passed:
		// The informer has (or is about to apply) a version at least as new as the read.
		return true, nil
	}
	if _, held, _ := f.indexer.GetByKey(key.String()); !held {
		slim, _ := TransformSourceMetadata(src)
		if err := f.indexer.Add(slim); err != nil {
			return false, err
		}
	}
	return true, nil
}

// held returns how many sources the cache holds, by kind.
func (c *SourceCache) held() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.feeds))
	for kind, f := range c.feeds {
		if f.indexer != nil {
			out[kind] = len(f.indexer.ListKeys())
		}
	}
	return out
}

// filteredListWatch lists and watches one source kind through the SourceCache's filter.
type filteredListWatch struct {
	cache *SourceCache
	feed  *sourceFeed
	lw    toolscache.ListerWatcherWithContext
}

var _ toolscache.ListerWatcherWithContext = (*filteredListWatch)(nil)

func (l *filteredListWatch) List(opts metav1.ListOptions) (runtime.Object, error) {
	return l.ListWithContext(context.Background(), opts)
}

func (l *filteredListWatch) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return l.WatchWithContext(context.Background(), opts)
}

// ListWithContext lists the sources and keeps the followed ones.
func (l *filteredListWatch) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	if err := l.cache.waitReady(ctx); err != nil {
		return nil, err
	}
	out, err := l.lw.ListWithContext(ctx, opts)
	if err != nil {
		return nil, err
	}
	if list, ok := out.(*metav1.PartialObjectMetadataList); ok {
		kept := list.Items[:0]
		for i := range list.Items {
			if l.cache.passes(l.feed, &list.Items[i]) {
				kept = append(kept, list.Items[i])
			}
		}
		clear(list.Items[len(kept):])
		list.Items = kept
	}
	return out, nil
}

// WatchWithContext watches the sources and passes the events of the followed ones. An event
// of any other source becomes a bookmark at its resourceVersion (the informer resumes from
// there after a broken watch instead of from its last followed event); an initial Added of
// a list streamed through the watch is dropped, as its resourceVersion says nothing of where
// the stream is.
func (l *filteredListWatch) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	if err := l.cache.waitReady(ctx); err != nil {
		return nil, err
	}
	w, err := l.lw.WatchWithContext(ctx, opts)
	if err != nil {
		return nil, err
	}
	return watch.Filter(w, func(in watch.Event) (watch.Event, bool) {
		src, ok := in.Object.(*metav1.PartialObjectMetadata)
		if !ok {
			return in, true
		}
		switch in.Type {
		case watch.Added, watch.Modified, watch.Deleted:
		default:
			return in, true // bookmarks and errors
		}
		if l.cache.passes(l.feed, src) {
			if in.Type == watch.Deleted {
				l.cache.forgetDeleted(l.feed, src)
			}
			return in, true
		}
		if in.Type == watch.Added {
			return in, false
		}
		mark := &metav1.PartialObjectMetadata{TypeMeta: src.TypeMeta}
		mark.ResourceVersion = src.ResourceVersion
		return watch.Event{Type: watch.Bookmark, Object: mark}, true
	}), nil
}
