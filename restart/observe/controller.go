package observe

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/discovery"
	"github.com/kick-operator/kick/restart/inflight"
	"github.com/kick-operator/kick/restart/workload"
	"github.com/kick-operator/kick/router"
)

// +kubebuilder:rbac:groups="",resources=secrets;configmaps,verbs=get;list;watch
// +kubebuilder:rbac:groups=kick.corewire.io,resources=sourceobservations,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=apps,resources=deployments;statefulsets;daemonsets,verbs=get;list;watch
// (Rollouts, when that integration runs, are covered by its own role.)

// ManagedFunc says whether some KickPolicy manages a workload and, if so, which of its sources
// are in scope (the policy's dependencySelector applied to the source's labels). A nil inScope
// means every source is in scope.
type ManagedFunc func(ctx context.Context, workload client.Object) (managed bool, inScope func(sourceLabels map[string]string) bool)

// ManageAll is a ManagedFunc under which every workload is managed and every source in scope.
func ManageAll(context.Context, client.Object) (bool, func(map[string]string) bool) { return true, nil }

// SourceReconciler observes Secrets and ConfigMaps that managed workloads consume, keeps their
// SourceObservation records and publishes router.SourceChanged for Baseline and Relevant
// observations. Register it with SetupWithManager.
type SourceReconciler struct {
	// Client reads from the manager's cache (sources as metadata only, see NewCacheOptions)
	// and writes SourceObservations.
	Client client.Client
	// Live reads a source in full, past the cache, when its content must be fingerprinted.
	// SetupWithManager sets it to mgr.GetAPIReader() when nil; it must not be a cached client.
	Live client.Reader
	// Router receives the SourceChanged events.
	Router router.Publisher
	// Keys fingerprints source content.
	Keys *Fingerprinter
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// IsManaged decides which consumers count; required.
	IsManaged ManagedFunc
	// Kinds are the workload kinds searched for consumers (through
	// discovery.SourceIndex, which must be registered for each); nil means
	// workload.Builtin().
	Kinds *workload.Registry

	// Records, when set, lets the observer announce a change while its
	// record is being written; every restarter must then wait on the same
	// Records before it patches a workload (see package inflight).
	Records *inflight.Records

	// MaxFullReads bounds how many sources are read in full (and held in memory while they are
	// fingerprinted) at once, whatever the number of workers: a tenant's 1 MiB Secrets must not
	// multiply by the worker count. 0 means DefaultMaxFullReads.
	MaxFullReads int

	// FetchRate and FetchBurst are each namespace's budget of reads of sources the cache does
	// not hold (see namespaceBudget): FetchRate per second, up to FetchBurst at once. 0 means
	// DefaultFetchRate and DefaultFetchBurst.
	FetchRate  float64
	FetchBurst int

	triggers map[string]chan event.GenericEvent // per source kind; set by SetupWithManager
	// consumerIndex lets followed read the workload informers' index
	// directly; set by SetupWithManager (nil: through the List).
	consumerIndex *consumerIndex
	// sourceCache, when set, caches only followed sources; a miss is then
	// checked against the API server (see SourceCache.Fetch).
	sourceCache *SourceCache
	own         ownWrites
	metrics     *metrics
	fullReads   limiter
	fetches     namespaceBudget
}

// DefaultMaxFullReads is the default of SourceReconciler.MaxFullReads. A full read of a source
// at the API server's 1.5 MiB object limit holds about 4 MB while it is decoded and
// fingerprinted, so 16 reads take at most about 64 MB, half of what 32 workers could; a burst
// of 200 small Secrets is as fast as with no bound (4 reads at once made it about 30% slower).
const DefaultMaxFullReads = 16

// limiter is a counting semaphore, sized on first use.
type limiter struct {
	once  sync.Once
	slots chan struct{}
}

// acquire takes a slot (n slots in all, DefaultMaxFullReads when n <= 0), waiting until one is
// free or ctx ends; release gives it back.
func (l *limiter) acquire(ctx context.Context, n int) (release func(), err error) {
	l.once.Do(func() {
		if n <= 0 {
			n = DefaultMaxFullReads
		}
		l.slots = make(chan struct{}, n)
	})
	select {
	case l.slots <- struct{}{}:
		return func() { <-l.slots }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// sourceKind describes one observed kind.
type sourceKind struct {
	name string
	// newObject returns an empty typed object, for reading a source in full through Live.
	newObject func() client.Object
}

var sourceKinds = []sourceKind{
	{name: discovery.KindSecret, newObject: func() client.Object { return &corev1.Secret{} }},
	{name: discovery.KindConfigMap, newObject: func() client.Object { return &corev1.ConfigMap{} }},
}

// errCacheBehind reports that the source read in full is another object than the cached one
// (deleted and created again in between): the cache's next event brings it.
var errCacheBehind = errors.New("observe: the cached source is older than the API server's")

// outcome is what one reconcile did, for the log and the metrics.
type outcome struct {
	class     Class  // classification; "" when the source was skipped
	skipped   string // why nothing was classified
	written   bool
	published bool
	theta     time.Time
	consumers int
	// unread are the consumers that read only keys this change left alone.
	unread []router.ObjectRef
	// retryAfter, when set, asks for the source to be reconciled again after it (its
	// namespace spent its fetch budget, or reached its bound of followed sources).
	retryAfter time.Duration
}

// followLimitRetry is how long a source refused by the follow limits waits to be tried again.
const followLimitRetry = time.Minute

// reconcileSource observes one source. Its metadata comes from the cache; its content is read
// from the API server only when there is something to classify: the source is consumed (or
// has a record) and its resourceVersion is not the one its record was last written for.
func (r *SourceReconciler) reconcileSource(ctx context.Context, kind sourceKind, key types.NamespacedName) (outcome, error) {
	src := SourceMetadata(kind.name)
	if err := r.Client.Get(ctx, key, src); err != nil {
		if apierrors.IsNotFound(err) && r.sourceCache != nil {
			// Not cached: maybe gone, maybe a source nothing followed until a
			// workload started consuming it. In that case the cache holds it now.
			// Only a source a managed workload consumes (or with a record) is read,
			// and the read is charged to its namespace. The budget is asked first
			// (without spending): a name sent back for want of it is judged once,
			// when its read can be made, not also on each arrival before.
			if wait := r.fetches.wait(key.Namespace, r.now(), r.FetchRate, r.FetchBurst); wait > 0 {
				return outcome{skipped: "Deferred", retryAfter: wait}, nil
			}
			if !r.followed(kind.name, stub(kind.name, key)) {
				return outcome{skipped: "Unconsumed"}, nil
			}
			if wait := r.fetches.take(key.Namespace, r.now(), r.FetchRate, r.FetchBurst); wait > 0 {
				return outcome{skipped: "Deferred", retryAfter: wait}, nil // another worker took the token
			}
			found, err := r.sourceCache.Fetch(ctx, r.Live, kind.name, key)
			if errors.Is(err, errFollowLimit) {
				return outcome{skipped: "FollowLimit", retryAfter: followLimitRetry}, nil
			}
			if err != nil {
				return outcome{}, err
			}
			if found {
				return outcome{}, errCacheBehind
			}
		}
		if apierrors.IsNotFound(err) {
			// Gone: its record goes with it (ownerReference). A source created again
			// under the same name is a new object and starts with a baseline.
			return outcome{skipped: "NotFound"}, nil
		}
		return outcome{}, err
	}
	if src.GetDeletionTimestamp() != nil {
		return outcome{skipped: "Deleting"}, nil
	}

	consumers, err := r.consumers(ctx, kind.name, src)
	if err != nil {
		return outcome{}, err
	}
	stored, err := r.record(ctx, kind.name, key)
	if err != nil {
		return outcome{}, err
	}
	// A record left by an earlier object of the same name (not yet garbage-collected) says
	// nothing about this one.
	current := stored
	if current != nil && !OwnedBy(current, src.GetUID()) {
		current = nil
	}
	if len(consumers) == 0 && current == nil {
		// Quiet adoption: only sources that a managed workload consumes get a record.
		return outcome{skipped: "Unconsumed"}, nil
	}
	obs, skipped, err := r.observed(ctx, kind, src, current)
	if err != nil || skipped != "" {
		return outcome{skipped: skipped}, err
	}

	refs := refsOf(consumers)
	out := outcome{class: WithKeys(Classify(current, obs.Fingerprint, obs.ResourceVersion, obs.KeyID), current, obs), consumers: len(consumers)}
	if out.class == Relevant && len(consumers) > 0 {
		// A restart that answered this content before its record was
		// written (and then the manager stopped) dates the change.
		if at, ok := r.answeredBy(ctx, kind.name, obs, refs, r.now()); ok && (obs.SeenAt.IsZero() || at.Before(obs.SeenAt)) {
			obs.SeenAt = at
		}
	}
	apply := out.class
	if len(consumers) == 0 && apply == Relevant {
		// Nobody managed consumes it right now: keep the record current, dated from the
		// API server's evidence like a baseline, so a workload that starts consuming it
		// later is not compared against a change it already started with.
		apply = Baseline
	}
	if current != nil && current.Spec.LastRelevantChangeTime != nil {
		out.theta = current.Spec.LastRelevantChangeTime.Time
	}
	if !apply.Persisted() {
		return out, nil // MetaOnly, NoChange: neither written nor announced
	}
	announce := len(consumers) > 0 && out.class.Published()
	var prev *kickv1alpha1.SourceObservationSpec
	if current != nil {
		prev = &current.Spec
	}
	spec := Next(prev, apply, obs, r.now())
	if spec.LastRelevantChangeTime != nil {
		out.theta = spec.LastRelevantChangeTime.Time
	} else {
		out.theta = time.Time{}
	}
	if announce && out.class == Relevant {
		out.unread = r.keysUnread(prev, &spec, kind.name, key, consumers)
	}
	// With Records, the change is announced first and recorded meanwhile:
	// whoever restarts for it either names this version on the workload in
	// the restart's own write (inflight.Records.Pending, package evidence)
	// or waits for the record before its patch (inflight.Records.Wait).
	// Without Records the record is written first.
	end := func(bool) {}
	if announce && r.Records != nil {
		end = r.Records.Begin(inflight.Source{Namespace: key.Namespace, Kind: kind.name, Name: key.Name}, obs.ResourceVersion)
		looks := make([]string, len(refs))
		for i, c := range refs {
			looks[i] = inflight.WorkloadKey(c.Kind, c.Namespace, c.Name)
		}
		r.Records.Expect(looks)
		if err := r.publish(ctx, kind.name, key, out, refs); err != nil {
			end(false)
			return out, err
		}
		out.published = true
		// The restarts go first; the record follows them.
		r.metrics.recordWaited(r.Records.AwaitLooks(ctx, looks, lookWait))
	}
	name := kickv1alpha1.ObservationName(kind.name, src.GetName())
	written, err := WriteRecord(ctx, r.Client, stored, name, discovery.CoreAPIVersion, kind.name, src, spec)
	end(err == nil)
	if err != nil {
		// Refused (a conflict) or failed: classify again against the cache.
		r.own.forget(types.NamespacedName{Namespace: key.Namespace, Name: name})
		return out, err
	}
	r.own.wrote(written)
	out.written = true
	if announce && !out.published {
		// Published only once the record is written: whoever reacts reads the same θ.
		if err := r.publish(ctx, kind.name, key, out, refs); err != nil {
			return out, err
		}
		out.published = true
	}
	return out, nil
}

// stub is a source's metadata with only its kind, namespace and name.
func stub(kind string, key types.NamespacedName) client.Object {
	m := SourceMetadata(kind)
	m.Namespace, m.Name = key.Namespace, key.Name
	return m
}

// lookWait bounds how long a change's record waits for the restarter to
// look at (and maybe restart) the consumers first.
const lookWait = 20 * time.Millisecond

// publish announces an observation of the source to its consumers.
func (r *SourceReconciler) publish(ctx context.Context, kind string, key types.NamespacedName, out outcome, consumers []router.ObjectRef) error {
	ev := router.SourceChanged{
		Source:     router.ObjectRef{APIVersion: discovery.CoreAPIVersion, Kind: kind, Namespace: key.Namespace, Name: key.Name},
		Class:      router.SourceClass(out.class),
		ChangeTime: out.theta,
		Consumers:  consumers,
		KeysUnread: out.unread,
	}
	if err := r.Router.Publish(ctx, ev); err != nil {
		return fmt.Errorf("publish %s: %w", ev.Key(), err)
	}
	return nil
}

// observed returns what the source holds at (or after) the cached resourceVersion of src.
//
// When the record was written for exactly this resourceVersion with the current key, its
// fingerprint is the source's: nothing is read (the observation classifies as NoChange).
// Otherwise the source is read in full through Live, at least as new as the cache's copy
// (resourceVersion "not older than", which the API server answers from its watch cache instead
// of etcd), fingerprinted, dated (λ) and dropped. A source that disappeared or is being deleted
// meanwhile is skipped, with the reason.
func (r *SourceReconciler) observed(ctx context.Context, kind sourceKind, src client.Object, current *kickv1alpha1.SourceObservation) (Observed, string, error) {
	o := Observed{
		Source:          kickv1alpha1.ObservedSource{APIVersion: discovery.CoreAPIVersion, Kind: kickv1alpha1.SourceKind(kind.name), Name: src.GetName()},
		KeyID:           r.Keys.KeyID(),
		ResourceVersion: src.GetResourceVersion(),
	}
	if current != nil && o.ResourceVersion != "" && current.Spec.LastSeenResourceVersion == o.ResourceVersion &&
		current.Spec.FingerprintKeyID == o.KeyID && currentKeys(current) {
		o.Fingerprint = current.Spec.RelevantFingerprint
		return o, "", nil
	}
	if r.Live == nil {
		return Observed{}, "", errNotSetUp
	}
	release, err := r.fullReads.acquire(ctx, r.MaxFullReads)
	if err != nil {
		return Observed{}, "", err
	}
	defer release()
	live := kind.newObject()
	var opts []client.GetOption
	if o.ResourceVersion != "" {
		opts = append(opts, &client.GetOptions{Raw: &metav1.GetOptions{ResourceVersion: o.ResourceVersion}})
	}
	// The read goes out with a logger that discards everything: client-go logs response bodies
	// through the context's logger at high verbosity, and this body is a Secret's data.
	if err := r.Live.Get(logr.NewContext(ctx, logr.Discard()), client.ObjectKeyFromObject(src), live, opts...); err != nil {
		if apierrors.IsNotFound(err) {
			return Observed{}, "NotFound", nil
		}
		return Observed{}, "", fmt.Errorf("read %s %s/%s: %w", kind.name, src.GetNamespace(), src.GetName(), err)
	}
	switch {
	case live.GetUID() != src.GetUID():
		return Observed{}, "", errCacheBehind
	case live.GetDeletionTimestamp() != nil:
		return Observed{}, "Deleting", nil
	}
	if live.GetResourceVersion() == o.ResourceVersion {
		// The content the cache received at SeenAt; a newer version was received later.
		o.SeenAt = SeenAt(src)
	}
	o.ResourceVersion = live.GetResourceVersion()
	o.Fingerprint, o.Keys, o.LastWrite = content(r.Keys, live)
	return o, "", nil
}

// consumer is a managed workload that consumes a source, as the cache holds it.
type consumer struct {
	ref router.ObjectRef
	obj client.Object
}

func refsOf(consumers []consumer) []router.ObjectRef {
	refs := make([]router.ObjectRef, len(consumers))
	for i := range consumers {
		refs[i] = consumers[i].ref
	}
	return refs
}

// consumers returns the managed workloads in the source's namespace that consume it with the
// source in scope, sorted. It reads only the cache index, never the API server.
func (r *SourceReconciler) consumers(ctx context.Context, kind string, src client.Object) ([]consumer, error) {
	var refs []consumer
	indexKey := discovery.IndexKey(kind, src.GetName())
	for _, wk := range r.Kinds.Kinds() {
		workloads, err := r.consumersOf(ctx, wk, src.GetNamespace(), indexKey)
		if err != nil {
			return nil, fmt.Errorf("list %s consuming %s %s/%s: %w", wk.Target, kind, src.GetNamespace(), src.GetName(), err)
		}
		for _, w := range workloads {
			if w.GetDeletionTimestamp() != nil {
				continue
			}
			managed, inScope := r.IsManaged(ctx, w)
			if managed && (inScope == nil || inScope(src.GetLabels())) {
				refs = append(refs, consumer{router.ObjectRef{APIVersion: wk.APIVersion, Kind: string(wk.Target), Namespace: w.GetNamespace(), Name: w.GetName()}, w})
			}
		}
	}
	slices.SortFunc(refs, func(a, b consumer) int {
		return cmp.Or(cmp.Compare(a.ref.Kind, b.ref.Kind), cmp.Compare(a.ref.Name, b.ref.Name))
	})
	return refs, nil
}

// record reads the source's SourceObservation from the cache, or the one
// this process last wrote when the cache does not show it yet; nil when
// there is none.
func (r *SourceReconciler) record(ctx context.Context, kind string, key types.NamespacedName) (*kickv1alpha1.SourceObservation, error) {
	name := types.NamespacedName{Namespace: key.Namespace, Name: kickv1alpha1.ObservationName(kind, key.Name)}
	var rec kickv1alpha1.SourceObservation
	err := r.Client.Get(ctx, name, &rec)
	switch {
	case apierrors.IsNotFound(err):
		return r.own.newest(name, nil), nil
	case err != nil:
		return nil, fmt.Errorf("read observation record of %s %s: %w", kind, key, err)
	}
	return r.own.newest(name, &rec), nil
}

// WriteRecord writes the SourceObservation name in owner's namespace: it creates it, owned by
// owner (of the given API version and kind) so the record goes away with it, when stored is
// nil; otherwise it replaces the spec of stored, the record as read before, and makes owner its
// owner in place of any earlier object of the same kind and name. The update is optimistic: a
// stale stored copy fails with a conflict, and the caller classifies again against the fresh
// record. The Secret and ConfigMap observer and the optional observers (CSI mounts) share it.
func WriteRecord(ctx context.Context, c client.Writer, stored *kickv1alpha1.SourceObservation, name, apiVersion, kind string,
	owner client.Object, spec kickv1alpha1.SourceObservationSpec) (*kickv1alpha1.SourceObservation, error) {
	// The write goes out with a logger that discards everything: client-go logs request and
	// response bodies at high verbosity, and this body holds fingerprints and key ids.
	ctx = logr.NewContext(ctx, logr.Discard())
	ref := metav1.OwnerReference{
		APIVersion:         apiVersion,
		Kind:               kind,
		Name:               owner.GetName(),
		UID:                owner.GetUID(),
		Controller:         ptr.To(false),
		BlockOwnerDeletion: ptr.To(false),
	}
	if stored == nil {
		rec := &kickv1alpha1.SourceObservation{
			ObjectMeta: metav1.ObjectMeta{Namespace: owner.GetNamespace(), Name: name, OwnerReferences: []metav1.OwnerReference{ref}},
			Spec:       spec,
		}
		if err := c.Create(ctx, rec); err != nil {
			return nil, fmt.Errorf("create observation record %s/%s: %w", rec.Namespace, rec.Name, err)
		}
		return rec, nil
	}
	rec := stored.DeepCopy()
	rec.Spec = spec
	refs := slices.DeleteFunc(rec.OwnerReferences, func(o metav1.OwnerReference) bool {
		return o.APIVersion == ref.APIVersion && o.Kind == ref.Kind && o.Name == ref.Name
	})
	rec.OwnerReferences = append(refs, ref)
	if err := c.Update(ctx, rec); err != nil {
		return nil, fmt.Errorf("update observation record %s/%s: %w", rec.Namespace, rec.Name, err)
	}
	return rec, nil
}

// OwnedBy reports whether rec belongs to the object with this UID (a record left by an earlier
// object of the same name does not).
func OwnedBy(rec *kickv1alpha1.SourceObservation, uid types.UID) bool {
	for _, o := range rec.OwnerReferences {
		if o.UID == uid {
			return true
		}
	}
	return false
}

func (r *SourceReconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// logOutcome logs what a reconcile did: class, change time and consumer count only. Fingerprints,
// key names and values never appear in logs.
func logOutcome(ctx context.Context, out outcome) {
	if out.class == "" {
		return
	}
	l := log.FromContext(ctx)
	kv := []any{"class", string(out.class), "consumers", out.consumers}
	if !out.theta.IsZero() {
		kv = append(kv, "changeTime", out.theta.UTC().Format(time.RFC3339Nano))
	}
	switch {
	case out.published && out.class == Relevant:
		l.Info("source content changed", kv...)
	case out.published:
		l.V(1).Info("source baselined", kv...)
	case out.written:
		l.V(1).Info("observation record refreshed without an event", kv...)
	default:
		l.V(2).Info("source observed", kv...)
	}
}
