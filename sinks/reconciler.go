package sinks

import (
	"context"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
)

// +kubebuilder:rbac:groups=kick.corewire.io,resources=notificationpolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=kick.corewire.io,resources=notificationpolicies/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// ControllerName names the controller (logs, metrics) and is the reporting component of its
// Events.
const ControllerName = "kick-notifications"

// Reconciler validates NotificationPolicies and hands them to the dispatcher that delivers
// their notifications. It reads policies from the manager's cache and the Secrets they
// reference from the API server, and is re-run when one of those Secrets changes.
type Reconciler struct {
	// Client reads NotificationPolicies from the cache and writes their status.
	// SetupWithManager sets it to mgr.GetClient() when nil.
	Client client.Client
	// APIReader reads Secrets without a cache (the manager's cache holds no Secret data).
	// SetupWithManager sets it to mgr.GetAPIReader() when nil.
	APIReader client.Reader
	// Recorder receives an Event when a policy's Ready condition changes. SetupWithManager sets
	// it when nil.
	Recorder events.EventRecorder

	log logr.Logger
	d   *dispatcher
}

// SetupWithManager registers the Secret index, the controller and the dispatcher (a runnable
// that only runs on the elected leader). Each policy subscribes to opts.Router when it is first
// reconciled.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts Options) error {
	opts, err := opts.withDefaults()
	if err != nil {
		return err
	}
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder(ControllerName)
	}
	r.log = opts.Log
	if r.log.GetSink() == nil {
		r.log = mgr.GetLogger().WithName(ControllerName)
	}
	if err := RegisterIndexes(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return err
	}
	r.d = newDispatcher(opts, r.Client, r.Recorder, r.log)
	if err := mgr.Add(r.d); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		// Status writes do not change the generation: only spec changes and deletions count.
		For(&kickv1alpha1.NotificationPolicy{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// Metadata only: the handler needs a Secret's name and namespace, and the manager's
		// cache keeps no Secret content (a typed watch would start an informer holding it).
		// Where the manager caches only the Secrets something follows, the ones policies
		// reference must be kept (UsesSecret).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.policiesUsing), builder.OnlyMetadata)
	if opts.MaxConcurrentReconciles > 0 {
		b = b.WithOptions(controller.Options{MaxConcurrentReconciles: opts.MaxConcurrentReconciles})
	}
	return b.Complete(r)
}

// Reconcile validates one policy, reads its Secrets and gives the result to the dispatcher.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var p kickv1alpha1.NotificationPolicy
	if err := r.Client.Get(ctx, req.NamespacedName, &p); err != nil {
		if apierrors.IsNotFound(err) {
			r.d.remove(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	if p.DeletionTimestamp != nil {
		r.d.remove(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	m, merr := newMatcher(p.Spec)
	sr := newSecretReader(r.APIReader, p.Namespace)
	cfg, prob, err := buildConfig(ctx, sr, &p, r.d.guard, r.d.config(req.NamespacedName, p.UID))
	if err != nil {
		return ctrl.Result{}, err
	}
	if merr != nil {
		msg := merr.Error()
		if prob != nil {
			msg += "; " + prob.message
		}
		cfg, prob = nil, &problem{reason: ReasonInvalidSelector, message: msg}
	}
	return ctrl.Result{}, r.d.apply(&p, m, cfg, prob)
}
