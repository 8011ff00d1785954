package request

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/freshness"
	"github.com/kick-operator/kick/restart/workload"
	"github.com/kick-operator/kick/router"
)

// Driver turns source changes from the router into KickRequests. It reads
// everything from the cache and evaluates freshness in memory first, so a
// workload that is already fresh (the usual case when KICK adopts a running
// cluster) gets no request at all; a request is created, reopened or woken
// only when there is a restart to do or a rollout to wait for.
type Driver struct {
	Client  client.Client
	Events  router.Subscriber
	Wake    chan<- event.GenericEvent
	Metrics *Metrics
	// Workers is the number of events handled concurrently.
	Workers int
	// Kinds are the workload kinds this manager restarts; nil means
	// workload.Builtin().
	Kinds *workload.Registry
	// CSI makes Secrets Store CSI classes count as dependencies.
	CSI bool
}

// NeedLeaderElection makes the driver run on the elected leader only.
func (d *Driver) NeedLeaderElection() bool { return true }

// Start consumes events until ctx ends (manager.Runnable).
func (d *Driver) Start(ctx context.Context) error {
	workers := max(d.Workers, 1)
	errs := make(chan error, workers)
	for i := 0; i < workers; i++ {
		go func() {
			for {
				ev, err := d.Events.Next(ctx)
				if err != nil {
					errs <- err
					return
				}
				if sc, ok := ev.(router.SourceChanged); ok {
					d.handle(ctx, sc)
				}
			}
		}()
	}
	err := <-errs
	if errors.Is(err, context.Canceled) || errors.Is(err, router.ErrClosed) {
		return nil
	}
	return err
}

func (d *Driver) handle(ctx context.Context, ev router.SourceChanged) {
	logger := log.FromContext(ctx).WithValues("source", ev.Source.String(), "class", ev.Class)
	for _, c := range ev.Consumers {
		// Retry transient API errors a few times; the source controller's
		// durable record means a later change or restart re-drives anything
		// that still fails.
		var err error
		for attempt := 0; attempt < 5; attempt++ {
			if err = d.ensure(ctx, c, ev.ChangeTime); err == nil || ctx.Err() != nil {
				break
			}
			time.Sleep(time.Duration(attempt+1) * 100 * time.Millisecond)
		}
		if err != nil {
			d.Metrics.error("driver", "Ensure")
			logger.Error(err, "could not create or wake the KickRequest", "workload", c.String())
		}
	}
}

// ensure is the coalescer of model §10 for one consumer.
func (d *Driver) ensure(ctx context.Context, ref router.ObjectRef, changed time.Time) error {
	kind := kickv1alpha1.TargetKind(ref.Kind)
	obj, err := d.Kinds.New(kind)
	if err != nil {
		return nil
	}
	if err := d.Client.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, obj); err != nil {
		return client.IgnoreNotFound(err)
	}
	var requests kickv1alpha1.KickRequestList
	if err := d.Client.List(ctx, &requests, client.InNamespace(ref.Namespace),
		client.MatchingFields{TargetIndex: workload.TargetKey(kind, ref.Name)}); err != nil {
		return err
	}
	var finished *kickv1alpha1.KickRequest
	for i := range requests.Items {
		kr := &requests.Items[i]
		if !kr.Status.Phase.IsTerminal() {
			// An open request recomputes the latest change from the
			// observation records itself; just make sure it runs now.
			d.Metrics.decision("woken")
			d.wake(ctx, kr)
			return nil
		}
		if finished == nil || older(finished, kr) {
			finished = kr
		}
	}

	var policies kickv1alpha1.KickPolicyList
	if err := d.Client.List(ctx, &policies, client.InNamespace(ref.Namespace)); err != nil {
		return err
	}
	sel := selectPolicy(policies.Items, obj)
	if sel.Reason == kickv1alpha1.GateNotSelected {
		d.Metrics.decision("unmanaged")
		return nil
	}
	latestChange := exactly(changed)
	if sel.Policy != nil {
		recorded, err := LatestChangeOf(ctx, d.Client, obj, sel.Policy, d.CSI)
		if err != nil {
			return err
		}
		latestChange = latest(exactly(changed), recorded)
		h, err := d.Kinds.Handle(ctx, d.Client, obj)
		if err != nil {
			return err
		}
		rollout, err := h.Inspect(ctx, d.Client)
		if err != nil {
			return err
		}
		if alreadyCarried(latestChange, rollout) {
			d.Metrics.decision("fresh")
			return nil
		}
	}
	if finished != nil {
		d.Metrics.decision("reopened")
		return d.annotate(ctx, finished, latestChange)
	}
	d.Metrics.decision("created")
	return d.create(ctx, kind, obj, latestChange)
}

func (d *Driver) create(ctx context.Context, kind kickv1alpha1.TargetKind, obj client.Object, changed freshness.Change) error {
	kr := &kickv1alpha1.KickRequest{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   obj.GetNamespace(),
			Name:        Name(kind, obj.GetName()),
			Labels:      map[string]string{ManagedByLabel: managedByValue},
			Annotations: map[string]string{ChangeAnnotation: formatChange(changed)},
		},
		Spec: kickv1alpha1.KickRequestSpec{TargetRef: kickv1alpha1.TargetRef{
			APIVersion: d.Kinds.APIVersion(kind), Kind: kind, Name: obj.GetName(),
		}},
	}
	err := d.Client.Create(ctx, kr)
	if apierrors.IsAlreadyExists(err) {
		// Created meanwhile (cache lag or a concurrent worker): hand the
		// change over through the annotation instead.
		existing := &kickv1alpha1.KickRequest{}
		if err := d.Client.Get(ctx, client.ObjectKeyFromObject(kr), existing); err != nil {
			return err
		}
		return d.annotate(ctx, existing, changed)
	}
	return err
}

// annotate records a change the request must answer; for a finished
// request this reopens it (the reconciler sees the newer change).
func (d *Driver) annotate(ctx context.Context, kr *kickv1alpha1.KickRequest, changed freshness.Change) error {
	known := AnnotatedChange(kr)
	if !newerChange(changed, known) {
		d.wake(ctx, kr)
		return nil
	}
	patch := []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, ChangeAnnotation, formatChange(latest(changed, known))))
	if err := d.Client.Patch(ctx, kr, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return client.IgnoreNotFound(err)
	}
	d.wake(ctx, kr)
	return nil
}

func (d *Driver) wake(ctx context.Context, kr *kickv1alpha1.KickRequest) {
	if d.Wake == nil {
		return
	}
	obj := &kickv1alpha1.KickRequest{ObjectMeta: metav1.ObjectMeta{Namespace: kr.Namespace, Name: kr.Name}}
	select {
	case d.Wake <- event.GenericEvent{Object: obj}:
	case <-ctx.Done():
	}
}

// alreadyCarried reports whether the running pods provably carry every
// change up to latestChange: the rollout is complete and fresh, or it is
// still in progress but every pod of its template was created after the
// change (typical when a workload and its Secrets are applied together).
func alreadyCarried(latestChange freshness.Change, r freshness.Rollout) bool {
	switch freshness.Decide(latestChange, r) {
	case freshness.Fresh:
		return true
	case freshness.InProgress:
		return !r.Since.IsZero() && !freshness.Newer(latestChange, r.Since)
	}
	return false
}
