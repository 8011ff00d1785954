package policy

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/workload"
)

// +kubebuilder:rbac:groups=kick.corewire.io,resources=kickpolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=kick.corewire.io,resources=kickpolicies/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=apps,resources=deployments;statefulsets;daemonsets,verbs=get;list;watch
// +kubebuilder:rbac:groups=kick.corewire.io,resources=kickrequests,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// ControllerName names the controller (logs, metrics) and is the reporting
// component of its events.
const ControllerName = "kick-policy"

// eventAction is the action of the events.k8s.io Events the controller emits.
const eventAction = "Evaluate"

// Options tune the KickPolicy status controller.
type Options struct {
	// MaxConcurrentReconciles is the number of workers; 0 means 1.
	MaxConcurrentReconciles int
}

// Reconciler writes KickPolicy status: observedGeneration, the matched and
// blocked workload counts, and the Ready condition. It reads only from the
// manager's cache, patches status only when it changes, and emits an Event
// when Ready changes.
type Reconciler struct {
	// Client must read from the manager's cache (mgr.GetClient() does).
	// SetupWithManager sets it when nil.
	Client client.Client
	// Recorder receives an Event whenever a policy's Ready condition
	// changes status or reason. SetupWithManager sets it when nil; a nil
	// Recorder emits nothing.
	Recorder events.EventRecorder
	// ProviderAvailable reports whether a GitOps provider is active in this
	// manager (gitops.Registry.Available); nil treats every one as active.
	ProviderAvailable func(kickv1alpha1.GitOpsProvider) (bool, string)
	// Kinds are the workload kinds watched and counted; nil means
	// workload.Builtin().
	Kinds *workload.Registry
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	mu        sync.Mutex
	announced map[types.NamespacedName]announcement
	// written is when this process last wrote each policy's status.
	written map[types.NamespacedName]time.Time
}

// announcement is the last Ready state an Event was emitted for.
type announcement struct {
	uid    types.UID
	status metav1.ConditionStatus
	reason string
}

// SetupWithManager registers the controller. Besides KickPolicies it
// watches the workloads of every kind in r.Kinds, because the counts change
// with them, and maps each of their events to every KickPolicy of the
// namespace. Workload updates count only when labels change, and a policy's
// neighbours are re-evaluated only when its spec or deletion changes.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts Options) error {
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder(ControllerName)
	}
	toPolicies := handler.EnqueueRequestsFromMapFunc(r.policiesOfNamespace)
	labelsChanged := builder.WithPredicates(predicate.LabelChangedPredicate{})
	b := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&kickv1alpha1.KickPolicy{}).
		Watches(&kickv1alpha1.KickPolicy{}, toPolicies, builder.WithPredicates(specOrDeletionChanged())).
		Watches(&kickv1alpha1.KickRequest{}, handler.EnqueueRequestsFromMapFunc(policyOfRequest), builder.WithPredicates(waitingChanged()))
	for _, w := range r.Kinds.Objects() {
		b = b.Watches(w, toPolicies, labelsChanged)
	}
	if opts.MaxConcurrentReconciles > 0 {
		b = b.WithOptions(controller.Options{MaxConcurrentReconciles: opts.MaxConcurrentReconciles})
	}
	return b.Complete(r)
}

// specOrDeletionChanged passes creates, deletes and the updates that can
// change which workloads a policy selects.
func specOrDeletionChanged() predicate.Predicate {
	return predicate.Or(predicate.GenerationChangedPredicate{}, predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			return (e.ObjectOld.GetDeletionTimestamp() == nil) != (e.ObjectNew.GetDeletionTimestamp() == nil)
		},
	})
}

// waitingChanged passes the KickRequest events that can change a policy's
// blockedWorkloads: a request starting or stopping to wait for a gate.
func waitingChanged() predicate.Predicate {
	waiting := func(o client.Object) bool {
		kr, ok := o.(*kickv1alpha1.KickRequest)
		return ok && waitsForGate(kr.Status.Phase)
	}
	return predicate.Funcs{
		CreateFunc:  func(e event.CreateEvent) bool { return waiting(e.Object) },
		DeleteFunc:  func(e event.DeleteEvent) bool { return waiting(e.Object) },
		UpdateFunc:  func(e event.UpdateEvent) bool { return waiting(e.ObjectOld) != waiting(e.ObjectNew) },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// policiesOfNamespace maps an object to every KickPolicy of its namespace,
// read from the cache.
func (r *Reconciler) policiesOfNamespace(ctx context.Context, obj client.Object) []reconcile.Request {
	var list kickv1alpha1.KickPolicyList
	if err := r.Client.List(ctx, &list, client.InNamespace(obj.GetNamespace()), client.UnsafeDisableDeepCopy); err != nil {
		log.FromContext(ctx).Error(err, "listing KickPolicies to re-evaluate", "namespace", obj.GetNamespace())
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return reqs
}

// Reconcile recomputes one policy's status from the cached policies and
// workloads of its namespace.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var p kickv1alpha1.KickPolicy
	if err := r.Client.Get(ctx, req.NamespacedName, &p); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	if p.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}
	var policies kickv1alpha1.KickPolicyList
	if err := r.Client.List(ctx, &policies, client.InNamespace(p.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return ctrl.Result{}, err
	}
	workloads, err := r.workloads(ctx, p.Namespace)
	if err != nil {
		return ctrl.Result{}, err
	}
	ev := Evaluate(&p, policies.Items, workloads)
	ev.Ready = WithProvider(ev.Ready, &p, r.ProviderAvailable)

	want := p.DeepCopy()
	want.Status.ObservedGeneration = p.Generation
	want.Status.MatchedWorkloads = ev.Matched
	want.Status.AmbiguousWorkloads = ev.Ambiguous
	blocked, err := r.blocked(ctx, &p)
	if err != nil {
		return ctrl.Result{}, err
	}
	want.Status.BlockedWorkloads = blocked
	meta.SetStatusCondition(&want.Status.Conditions, ev.Ready)
	if equality.Semantic.DeepEqual(p.Status, want.Status) {
		return ctrl.Result{}, nil
	}
	now := r.now()
	if wait := countWait(p.Status, want.Status, r.lastWriteOf(req.NamespacedName), now); wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	if err := r.Client.Status().Patch(ctx, want, client.MergeFrom(&p)); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	r.wroteAt(req.NamespacedName, now)
	r.announce(want, meta.FindStatusCondition(p.Status.Conditions, kickv1alpha1.ConditionReady), ev.Ready)
	return ctrl.Result{}, nil
}

// blocked counts the policy's open KickRequests that wait for a gate, read
// from the cache (one per workload: requests of a target coalesce).
func (r *Reconciler) blocked(ctx context.Context, p *kickv1alpha1.KickPolicy) (int32, error) {
	var list kickv1alpha1.KickRequestList
	if err := r.Client.List(ctx, &list, client.InNamespace(p.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return 0, err
	}
	targets := map[kickv1alpha1.TargetRef]bool{}
	for i := range list.Items {
		kr := &list.Items[i]
		if kr.Status.PolicyRef == p.Name && waitsForGate(kr.Status.Phase) {
			targets[kr.Spec.TargetRef] = true
		}
	}
	return int32(len(targets)), nil
}

// waitsForGate reports whether a request in this phase is held back by a
// gate (not by a rollout that is still running).
func waitsForGate(p kickv1alpha1.KickRequestPhase) bool {
	return p.IsWaiting() && p != kickv1alpha1.PhaseWaitingForRollout
}

// policyOfRequest maps a KickRequest to the policy that governs it, so
// blockedWorkloads follows the requests' phases.
func policyOfRequest(_ context.Context, obj client.Object) []reconcile.Request {
	kr, ok := obj.(*kickv1alpha1.KickRequest)
	if !ok || kr.Status.PolicyRef == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: kr.Namespace, Name: kr.Status.PolicyRef}}}
}

// workloads lists the namespace's workloads of every kind in r.Kinds from
// the cache. The labels alias cached objects: read only.
func (r *Reconciler) workloads(ctx context.Context, namespace string) ([]Workload, error) {
	var out []Workload
	opts := []client.ListOption{client.InNamespace(namespace), client.UnsafeDisableDeepCopy}
	for _, k := range r.Kinds.Kinds() {
		list := k.NewList()
		if err := r.Client.List(ctx, list, opts...); err != nil {
			return nil, err
		}
		for _, w := range workload.Items(list) {
			out = append(out, Workload{Kind: k.Target, Namespace: w.GetNamespace(), Name: w.GetName(), Labels: w.GetLabels()})
		}
	}
	return out, nil
}

// announce emits an Event when Ready's status or reason differs from both
// the status just replaced and the last Event for this policy; the second
// check keeps a reconcile that still saw a stale cached status from
// repeating an Event.
func (r *Reconciler) announce(p *kickv1alpha1.KickPolicy, before *metav1.Condition, now metav1.Condition) {
	if r.Recorder == nil {
		return
	}
	if before != nil && before.Status == now.Status && before.Reason == now.Reason {
		return
	}
	key := client.ObjectKeyFromObject(p)
	next := announcement{uid: p.UID, status: now.Status, reason: now.Reason}
	r.mu.Lock()
	if r.announced == nil {
		r.announced = map[types.NamespacedName]announcement{}
	}
	last, seen := r.announced[key]
	r.announced[key] = next
	r.mu.Unlock()
	if seen && last == next {
		return
	}
	kind := corev1.EventTypeNormal
	if now.Status != metav1.ConditionTrue {
		kind = corev1.EventTypeWarning
	}
	r.Recorder.Eventf(p, nil, kind, now.Reason, eventAction, "%s", now.Message)
}

func (r *Reconciler) forget(key types.NamespacedName) {
	r.mu.Lock()
	delete(r.announced, key)
	delete(r.written, key)
	r.mu.Unlock()
}
