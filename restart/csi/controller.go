package csi

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	k8sworkqueue "k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/discovery"
	"github.com/kick-operator/kick/restart/observe"
	"github.com/kick-operator/kick/restart/workload"
	"github.com/kick-operator/kick/router"
)

// ClassIndex indexes SecretProviderClassPodStatus objects by the class they
// report on (status.secretProviderClassName).
const ClassIndex = "kick.corewire.io/csi-class"

// DefaultRecheck is how soon a class is looked at again while the pods of a
// workload still report different versions.
const DefaultRecheck = 3 * time.Second

// Epoch is the change time of a first observation: the versions a pod
// reports carry no write time, and enabling the integration must never
// restart anything by itself, so the first version set is dated to the
// epoch, older than any rollout.
var Epoch = time.Unix(0, 0).UTC()

// RegisterIndexes registers ClassIndex. Call it before the manager's cache
// starts, and only when the kind is served.
func RegisterIndexes(ctx context.Context, indexer client.FieldIndexer) error {
	return indexer.IndexField(ctx, &SecretProviderClassPodStatus{}, ClassIndex, func(obj client.Object) []string {
		s, ok := obj.(*SecretProviderClassPodStatus)
		if !ok || s.Status.SecretProviderClassName == "" {
			return nil
		}
		return []string{s.Status.SecretProviderClassName}
	})
}

// Options configure SetupWithManager.
type Options struct {
	// MaxConcurrentReconciles is the number of workers (default 1).
	MaxConcurrentReconciles int
}

// Reconciler observes, per SecretProviderClass and consuming workload, the
// object versions the workload's pods report. Its reconcile key is a class
// (namespace and class name).
//
// Pods are resolved to their workload by a metadata-only GET through
// APIReader (pod → ReplicaSet → Deployment or Rollout, or StatefulSet /
// DaemonSet directly), remembered per pod UID. Pods are not cached: a cache
// would hold every pod of the cluster, while only pods that mount a class
// matter, and each costs one small GET in its lifetime (plus a fresh GET
// while its workload's pods disagree, to drop pods that are gone).
type Reconciler struct {
	// Client reads from the manager's cache (pod statuses, ReplicaSets,
	// workloads, records) and writes SourceObservations.
	Client client.Client
	// APIReader reads pod metadata from the API server.
	APIReader client.Reader
	// Router receives the SourceChanged events.
	Router router.Publisher
	// Keys fingerprints the version sets.
	Keys *observe.Fingerprinter
	// IsManaged decides which consuming workloads count; required.
	IsManaged observe.ManagedFunc
	// Kinds are the workload kinds; nil means workload.Builtin().
	Kinds *workload.Registry
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Recheck is how soon disagreeing pods are looked at again; 0 means
	// DefaultRecheck.
	Recheck time.Duration

	mu      sync.Mutex
	owners  map[types.NamespacedName]podOwner
	trigger chan event.GenericEvent
}

// podOwner is a pod's workload, remembered by pod UID.
type podOwner struct {
	uid types.UID
	ref workload.Ref
}

type workqueue = k8sworkqueue.TypedRateLimitingInterface[reconcile.Request]

// SetupWithManager registers the "observe-csi" controller. It reconciles a
// class on every change of its pod statuses, on the creation of a workload
// that mounts it or a change of that workload's template or labels, on the
// deletion of one of its records, and on EnqueueClassesOf. The field
// indexer must have RegisterIndexes, discovery's SourceIndex and
// workload.RegisterIndexes.
func (r *Reconciler) SetupWithManager(mgr manager.Manager, opts Options) error {
	switch {
	case r.Client == nil || r.APIReader == nil || r.Router == nil || r.Keys == nil:
		return errors.New("csi: Reconciler needs Client, APIReader, Router and Keys")
	case r.IsManaged == nil:
		return errors.New("csi: Reconciler needs IsManaged")
	}
	r.owners = map[types.NamespacedName]podOwner{}
	r.trigger = make(chan event.GenericEvent)
	b := builder.ControllerManagedBy(mgr).
		Named("observe-csi").
		Watches(&SecretProviderClassPodStatus{}, handler.Funcs{
			CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue) { enqueueStatus(q, e.Object) },
			UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue) {
				enqueueStatus(q, e.ObjectOld)
				enqueueStatus(q, e.ObjectNew)
			},
			DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue) {
				if s, ok := e.Object.(*SecretProviderClassPodStatus); ok {
					r.forget(types.NamespacedName{Namespace: s.Namespace, Name: s.Status.PodName})
				}
				enqueueStatus(q, e.Object)
			},
		}).
		Watches(&kickv1alpha1.SourceObservation{}, handler.Funcs{
			// A record removed by hand is rebuilt (as a baseline).
			DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue) {
				rec, ok := e.Object.(*kickv1alpha1.SourceObservation)
				if ok && rec.Spec.Source.Kind == kickv1alpha1.SourceSecretProviderClass && rec.Spec.Source.Name != "" {
					q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: rec.Namespace, Name: rec.Spec.Source.Name}})
				}
			},
		}).
		WatchesRawSource(source.Channel(r.trigger, handler.Funcs{
			GenericFunc: func(_ context.Context, e event.GenericEvent, q workqueue) { add(q, ClassesOf(e.Object)) },
		})).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(opts.MaxConcurrentReconciles, 1)})
	for _, w := range r.Kinds.Objects() {
		b = b.Watches(w, handler.Funcs{
			CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue) { add(q, ClassesOf(e.Object)) },
			UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue) {
				if maps.Equal(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels()) &&
					slices.Equal(discovery.FromWorkload(e.ObjectOld), discovery.FromWorkload(e.ObjectNew)) {
					return
				}
				add(q, ClassesOf(e.ObjectNew))
			},
		})
	}
	return b.Complete(r)
}

// EnqueueClassesOf asks the controller to observe every class the workloads
// mount, e.g. after a KickPolicy started managing them, so they get their
// baseline. It blocks until the controller took the requests or ctx ends.
func (r *Reconciler) EnqueueClassesOf(ctx context.Context, workloads ...client.Object) error {
	if r.trigger == nil {
		return errors.New("csi: Reconciler.SetupWithManager was not called")
	}
	for _, w := range workloads {
		if len(ClassesOf(w)) == 0 {
			continue
		}
		select {
		case r.trigger <- event.GenericEvent{Object: w}:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// ClassesOf returns one reconcile request per SecretProviderClass the
// workload's pod template mounts.
func ClassesOf(w client.Object) []reconcile.Request {
	var out []reconcile.Request
	for _, d := range discovery.FromWorkload(w) {
		if d.Kind == discovery.KindSecretProviderClass {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: w.GetNamespace(), Name: d.Name}})
		}
	}
	return out
}

func enqueueStatus(q workqueue, obj client.Object) {
	if s, ok := obj.(*SecretProviderClassPodStatus); ok && s.Status.SecretProviderClassName != "" {
		q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: s.Namespace, Name: s.Status.SecretProviderClassName}})
	}
}

func add(q workqueue, reqs []reconcile.Request) {
	for _, req := range reqs {
		q.Add(req)
	}
}

// mount is one pod status of a workload.
type mount struct {
	Mount
	status *SecretProviderClassPodStatus
}

// Reconcile observes one class in one namespace.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	class := req.Name
	var list SecretProviderClassPodStatusList
	if err := r.Client.List(ctx, &list, client.InNamespace(req.Namespace), client.MatchingFields{ClassIndex: class}); err != nil {
		return reconcile.Result{}, err
	}
	groups := map[workload.Ref][]mount{}
	for i := range list.Items {
		s := &list.Items[i]
		if s.DeletionTimestamp != nil {
			continue
		}
		m, ok := MountOf(r.Keys, s)
		if !ok {
			continue
		}
		ref, ok, err := r.workloadOf(ctx, s, false)
		if err != nil {
			return reconcile.Result{}, err
		}
		if ok {
			groups[ref] = append(groups[ref], mount{m, s})
		}
	}
	refs := slices.Collect(maps.Keys(groups))
	sort.Slice(refs, func(i, j int) bool { return refs[i].String() < refs[j].String() })
	waiting := false
	for _, ref := range refs {
		mounts := groups[ref]
		a := Agree(plain(mounts))
		if !a.Agreed {
			// Some of these pods may be gone or leaving: look again, past
			// what was remembered, before deciding to wait.
			current, err := r.current(ctx, ref, mounts)
			if err != nil {
				return reconcile.Result{}, err
			}
			if a = Agree(plain(current)); !a.Agreed {
				if a.Pods > 0 {
					waiting = true
					log.FromContext(ctx).V(1).Info("pods report different mounted versions; waiting until the rotation reached all of them",
						"workload", ref.String(), "pods", a.Pods, "versionSets", a.Distinct)
				}
				continue
			}
		}
		err := r.observe(ctx, class, ref, a)
		if apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err) {
			// The cache had not seen our own last write of the record yet.
			return reconcile.Result{RequeueAfter: 50 * time.Millisecond}, nil
		}
		if err != nil {
			return reconcile.Result{}, err
		}
	}
	if waiting {
		return reconcile.Result{RequeueAfter: r.recheck()}, nil
	}
	return reconcile.Result{}, nil
}

func plain(ms []mount) []Mount {
	out := make([]Mount, len(ms))
	for i, m := range ms {
		out[i] = m.Mount
	}
	return out
}

// current keeps the mounts whose pod still exists, is not being deleted and
// still belongs to ref, reading every pod and every status afresh. The
// statuses are read again too: once the pods that disagreed are leaving (a
// restart is rolling), the ones left must not agree on a version the cache
// merely has not updated yet, or the observer would report a rotation back
// to the old versions.
func (r *Reconciler) current(ctx context.Context, ref workload.Ref, mounts []mount) ([]mount, error) {
	var out []mount
	for _, m := range mounts {
		got, ok, err := r.workloadOf(ctx, m.status, true)
		if err != nil {
			return nil, err
		}
		if !ok || got != ref {
			continue
		}
		fresh := &SecretProviderClassPodStatus{}
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(m.status), fresh); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, fmt.Errorf("read %s/%s: %w", m.status.Namespace, m.status.Name, err)
		}
		if fresh.DeletionTimestamp != nil {
			continue
		}
		if mounted, ok := MountOf(r.Keys, fresh); ok {
			out = append(out, mount{mounted, fresh})
		}
	}
	return out, nil
}

// workloadOf returns the workload running the pod a status reports on;
// false when the pod is gone, leaving, not the one the status was written
// for, or not run by a workload of a registered kind. fresh skips the
// remembered answer.
func (r *Reconciler) workloadOf(ctx context.Context, s *SecretProviderClassPodStatus, fresh bool) (workload.Ref, bool, error) {
	key := types.NamespacedName{Namespace: s.Namespace, Name: s.Status.PodName}
	uid := podUID(s)
	if !fresh {
		r.mu.Lock()
		o, ok := r.owners[key]
		r.mu.Unlock()
		if ok && (uid == "" || uid == o.uid) {
			return o.ref, true, nil
		}
	}
	pod := &metav1.PartialObjectMetadata{}
	pod.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Pod"))
	if err := r.APIReader.Get(ctx, key, pod); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(key)
			return workload.Ref{}, false, nil
		}
		return workload.Ref{}, false, fmt.Errorf("read pod %s: %w", key, err)
	}
	if (uid != "" && pod.UID != uid) || pod.DeletionTimestamp != nil {
		return workload.Ref{}, false, nil
	}
	ref, ok, err := r.ownerOf(ctx, pod)
	if err != nil || !ok {
		return workload.Ref{}, false, err
	}
	r.mu.Lock()
	r.owners[key] = podOwner{uid: pod.UID, ref: ref}
	r.mu.Unlock()
	return ref, true, nil
}

// ownerOf resolves a pod to its workload: its controlling ReplicaSet's
// controller (a Deployment, or a Rollout — for a Rollout with workloadRef,
// the Deployment it references), or its StatefulSet or DaemonSet.
func (r *Reconciler) ownerOf(ctx context.Context, pod *metav1.PartialObjectMetadata) (workload.Ref, bool, error) {
	owner := metav1.GetControllerOfNoCopy(pod)
	if owner == nil {
		return workload.Ref{}, false, nil
	}
	if owner.Kind == "ReplicaSet" && owner.APIVersion == "apps/v1" {
		var rs appsv1.ReplicaSet
		if err := r.Client.Get(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: owner.Name}, &rs); err != nil {
			return workload.Ref{}, false, client.IgnoreNotFound(err)
		}
		if rs.UID != owner.UID {
			return workload.Ref{}, false, nil
		}
		if owner = metav1.GetControllerOfNoCopy(&rs); owner == nil {
			return workload.Ref{}, false, nil
		}
	}
	target := kickv1alpha1.TargetKind(owner.Kind)
	kind, ok := r.Kinds.Lookup(target)
	if !ok || kind.APIVersion != owner.APIVersion {
		return workload.Ref{}, false, nil
	}
	ref := workload.Ref{Kind: target, Namespace: pod.Namespace, Name: owner.Name}
	if target != kickv1alpha1.TargetRollout {
		return ref, true, nil
	}
	ro := kind.New()
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: owner.Name}, ro); err != nil {
		return workload.Ref{}, false, client.IgnoreNotFound(err)
	}
	if wr, ok := ro.(interface{ ReferencedDeployment() string }); ok {
		if d := wr.ReferencedDeployment(); d != "" {
			ref = workload.Ref{Kind: kickv1alpha1.TargetDeployment, Namespace: pod.Namespace, Name: d}
		}
	}
	return ref, true, nil
}

// podUID is the UID of the pod that owns a status (the driver sets it).
func podUID(s *SecretProviderClassPodStatus) types.UID {
	for _, o := range s.OwnerReferences {
		if o.Kind == "Pod" && o.APIVersion == "v1" {
			return o.UID
		}
	}
	return ""
}

func (r *Reconciler) forget(key types.NamespacedName) {
	r.mu.Lock()
	delete(r.owners, key)
	r.mu.Unlock()
}

// observe compares the version set a workload's pods agree on with the
// workload's record for the class, writes the record and publishes Baseline
// and Relevant observations, like the Secret observer does.
func (r *Reconciler) observe(ctx context.Context, class string, ref workload.Ref, a Agreement) error {
	kind, ok := r.Kinds.Lookup(ref.Kind)
	if !ok {
		return nil
	}
	w := kind.New()
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, w); err != nil {
		return client.IgnoreNotFound(err)
	}
	if w.GetDeletionTimestamp() != nil {
		return nil
	}
	consumer, err := r.counts(ctx, w, class)
	if err != nil {
		return err
	}
	name := kickv1alpha1.ConsumerObservationName(discovery.KindSecretProviderClass, class, ref.Kind, ref.Name)
	var stored *kickv1alpha1.SourceObservation
	var rec kickv1alpha1.SourceObservation
	switch err := r.Client.Get(ctx, types.NamespacedName{Namespace: ref.Namespace, Name: name}, &rec); {
	case err == nil:
		stored = &rec
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("read observation record of %s for %s: %w", class, ref, err)
	}
	current := stored
	if current != nil && !observe.OwnedBy(current, w.GetUID()) {
		current = nil // left by an earlier workload of the same name
	}
	if !consumer && current == nil {
		return nil // quiet adoption: records only for managed consumers
	}
	cls := observe.Classify(current, a.Fingerprint, "", r.Keys.KeyID())
	apply := cls
	if !consumer && apply == observe.Relevant {
		// Kept current without an event, so a workload managed later is not
		// compared against a change it already started with.
		apply = observe.Baseline
	}
	var theta time.Time
	if current != nil && current.Spec.LastRelevantChangeTime != nil {
		theta = current.Spec.LastRelevantChangeTime.Time
	}
	if apply.Persisted() {
		var prev *kickv1alpha1.SourceObservationSpec
		if current != nil {
			prev = &current.Spec
		}
		spec := observe.Next(prev, apply, observe.Observed{
			Source:      kickv1alpha1.ObservedSource{APIVersion: discovery.SecretsStoreAPIVersion, Kind: kickv1alpha1.SourceSecretProviderClass, Name: class},
			Fingerprint: a.Fingerprint,
			KeyID:       r.Keys.KeyID(),
			LastWrite:   Epoch,
		}, r.now())
		if _, err := observe.WriteRecord(ctx, r.Client, stored, name, kind.APIVersion, string(kind.Target), w, spec); err != nil {
			return err
		}
		if spec.LastRelevantChangeTime != nil {
			theta = spec.LastRelevantChangeTime.Time
		}
	}
	l := log.FromContext(ctx).WithValues("workload", ref.String(), "class", string(cls), "pods", a.Pods)
	if !consumer || !cls.Published() {
		l.V(2).Info("mounted versions observed")
		return nil
	}
	ev := router.SourceChanged{
		Source:     router.ObjectRef{APIVersion: discovery.SecretsStoreAPIVersion, Kind: discovery.KindSecretProviderClass, Namespace: ref.Namespace, Name: class},
		Class:      router.SourceClass(cls),
		ChangeTime: theta,
		Consumers:  []router.ObjectRef{{APIVersion: kind.APIVersion, Kind: string(ref.Kind), Namespace: ref.Namespace, Name: ref.Name}},
	}
	if err := r.Router.Publish(ctx, ev); err != nil {
		return fmt.Errorf("publish %s: %w", ev.Key(), err)
	}
	if cls == observe.Relevant {
		l.Info("mounted versions changed on every pod", "changeTime", theta.UTC().Format(time.RFC3339Nano))
	} else {
		l.V(1).Info("mounted versions baselined")
	}
	return nil
}

// counts reports whether w is a managed consumer of the class with the
// class in its policy's dependency scope (the SecretProviderClass's labels).
func (r *Reconciler) counts(ctx context.Context, w client.Object, class string) (bool, error) {
	consumes := false
	for _, d := range discovery.FromWorkload(w) {
		if d.Kind == discovery.KindSecretProviderClass && d.Name == class {
			consumes = true
		}
	}
	if !consumes {
		return false, nil
	}
	managed, inScope := r.IsManaged(ctx, w)
	if !managed || inScope == nil {
		return managed, nil
	}
	spc := &metav1.PartialObjectMetadata{}
	spc.SetGroupVersionKind(ClassKind)
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: w.GetNamespace(), Name: class}, spc); err != nil && !apierrors.IsNotFound(err) {
		return false, fmt.Errorf("read SecretProviderClass %s/%s: %w", w.GetNamespace(), class, err)
	}
	return inScope(spc.GetLabels()), nil
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Reconciler) recheck() time.Duration {
	if r.Recheck > 0 {
		return r.Recheck
	}
	return DefaultRecheck
}
