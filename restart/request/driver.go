package request

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/assess"
	"github.com/kick-operator/kick/restart/budget"
	"github.com/kick-operator/kick/restart/freshness"
	"github.com/kick-operator/kick/restart/inflight"
	"github.com/kick-operator/kick/restart/tracing"
	"github.com/kick-operator/kick/restart/workload"
	"github.com/kick-operator/kick/router"
)

// WorkloadKey names a workload in the driver's queue.
type WorkloadKey struct {
	Kind      kickv1alpha1.TargetKind
	Namespace string
	Name      string
}

func (k WorkloadKey) String() string { return string(k.Kind) + " " + k.Namespace + "/" + k.Name }

// lookKey names the workload for inflight.Records' Expect and Looked.
func (k WorkloadKey) lookKey() string {
	return inflight.WorkloadKey(string(k.Kind), k.Namespace, k.Name)
}

// Driver turns recorded source changes into KickRequests. It is a
// controller keyed by workload: router events only say which workloads to
// look at, and each look reads the workload, its observation records and
// the policies from the cache and assesses in memory, so a workload that is
// already fresh (the usual case when KICK adopts a running cluster) gets no
// request at all. A request is created, reopened or woken only when there
// is a restart to do or a rollout to wait for. An API error puts the
// workload back on the queue with a per-workload backoff: a change is
// delayed by a failing API server, never dropped.
type Driver struct {
	Client  client.Client
	Wake    chan<- event.GenericEvent
	Metrics *Metrics
	// Kinds are the workload kinds this manager restarts; nil means
	// workload.Builtin().
	Kinds *workload.Registry
	// CSI makes Secrets Store CSI classes count as dependencies.
	CSI bool
	// KeyNames names keys as the observation records do (see KeyNamer).
	KeyNames KeyNamer
	// Now is the clock.
	Now func() time.Time
	// Tracer records each cycle the driver opens; nil records nothing.
	Tracer *tracing.Tracer
	// Retention is how long finished requests are kept (--request-retention):
	// a restart older than that is not given a request after the fact, its
	// request would have been deleted by now. 0 means no bound.
	Retention time.Duration
	// Records are the observation records being written: a restart at
	// once names the versions still in flight in its note, or (for a
	// workload that cannot carry one) waits for them before its patch.
	Records *inflight.Records
	// Budget caps restarts in progress. A restart that needs a slot is
	// never applied at once: its request takes the slot, recorded before
	// the patch.
	Budget *budget.Budget

	handed handedChanges
	// lastRestart is when this driver last restarted a workload at once
	// (unix nanoseconds; see fanOutQuiet).
	lastRestart atomic.Int64
	// identifying are the workloads whose rollout the driver is waiting to
	// date before it decides (see identifyGrace).
	identifying identifyWaits
	// mem is shared with the request reconciler: the stamps this process
	// wrote and the restarts the driver is applying now. Nil turns the
	// driver's own restarts off.
	mem *memory
	// watchesRestarts is set when restartShown receives every workload
	// version the cache does; awaiting holds the restarts it waits to see.
	watchesRestarts bool
	awaiting        propagation
}

// While the driver keeps restarting workloads (its last restart less than
// fanOutQuiet ago), the requests naming its restarts wait, each for at most
// recordMaxWait after its restart: in a fan-out every restart goes out
// before the bookkeeping of any, so KICK's own writes (a request and, once
// it exists, its reconciles following the rollout) do not slow down the
// restarts still to come on an API server they share. A crash meanwhile
// loses nothing: each restarted workload carries its note, from which the
// next manager writes the request (unrecordedRestart).
const (
	fanOutQuiet   = 300 * time.Millisecond
	recordMaxWait = 5 * time.Second
)

// recordWait is how long the request of the workload's restart, applied by
// this process, may still wait (see fanOutQuiet); 0 to write it now.
func (d *Driver) recordWait(k WorkloadKey) time.Duration {
	o, ok := d.mem.owed(k.memoryKey())
	if !ok || o.restartedBy.IsZero() {
		return 0
	}
	now := d.Now()
	until := time.Unix(0, d.lastRestart.Load()).Add(fanOutQuiet)
	if deadline := o.restartedBy.Add(recordMaxWait); deadline.Before(until) {
		until = deadline
	}
	return max(until.Sub(now), 0)
}

// lookAgain is how soon the driver looks again at a workload whose restart,
// or the write of its request, was refused because it changed meanwhile.
const lookAgain = 50 * time.Millisecond

// driverRateLimiter retries a workload after 100 ms, doubling up to 10 s.
// There is no overall token bucket: a burst of changes is not an error.
func driverRateLimiter() workqueue.TypedRateLimiter[WorkloadKey] {
	return workqueue.NewTypedItemExponentialFailureRateLimiter[WorkloadKey](100*time.Millisecond, 10*time.Second)
}

// routerSource feeds the driver's queue from the router: every consumer
// of a changed source is queued, with the change handed over.
type routerSource struct {
	sub    router.Subscriber
	handed *handedChanges
	now    func() time.Time
}

func (s *routerSource) Start(ctx context.Context, q workqueue.TypedRateLimitingInterface[WorkloadKey]) error {
	go func() {
		for {
			ev, err := s.sub.Next(ctx)
			if err != nil {
				return
			}
			sc, ok := ev.(router.SourceChanged)
			if !ok {
				continue
			}
			for _, c := range sc.Consumers {
				k := WorkloadKey{Kind: kickv1alpha1.TargetKind(c.Kind), Namespace: c.Namespace, Name: c.Name}
				if !sc.ChangeTime.IsZero() {
					s.handed.add(k, freshness.At(sc.ChangeTime), sc.Source, s.now(), slices.Contains(sc.KeysUnread, c))
				}
				q.Add(k)
			}
		}
	}()
	return nil
}

// Reconcile looks at one workload (reconcile.TypedReconciler).
func (d *Driver) Reconcile(ctx context.Context, k WorkloadKey) (reconcile.Result, error) {
	if wait := d.recordWait(k); wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	handed := d.handed.get(k)
	err := d.ensure(ctx, k, handed)
	if !errors.Is(err, errRecordNext) {
		// A restart applied at once is looked at once the cache shows it
		// (lookedOnceShown); any other look ends here.
		d.awaiting.forget(k.lookKey())
		d.Records.Looked(k.lookKey())
	}
	d.handed.looked(d.Now())
	if err != nil {
		if refused(err) {
			// The handed change is kept for the next look.
			log.FromContext(ctx).V(1).Info("looking again after a refused write", "error", err)
			return reconcile.Result{RequeueAfter: lookAgain}, nil
		}
		var later errIdentifying
		if errors.As(err, &later) {
			return reconcile.Result{RequeueAfter: later.after}, nil
		}
		if errors.Is(err, errRecordNext) {
			// The handed change is answered once the request names it.
			return reconcile.Result{RequeueAfter: max(d.recordWait(k), time.Nanosecond)}, nil
		}
		d.Metrics.error("driver", "Ensure")
		return reconcile.Result{}, err
	}
	// This look decided; the workload's rollout is no longer waited for.
	d.identifying.done(k)
	d.handed.answered(k, handed)
	return reconcile.Result{}, nil
}

// ensureNow is ensure for a caller outside the driver's queue (the
// adopter): the request of a restart it makes is written in the same call,
// since no later look of the queue is coming to write it.
func (d *Driver) ensureNow(ctx context.Context, k WorkloadKey) error {
	err := d.ensure(ctx, k, handoff{})
	if errors.Is(err, errRecordNext) {
		err = d.ensure(ctx, k, handoff{})
	}
	return err
}

// ensure is the coalescer of model §10 for one workload.
func (d *Driver) ensure(ctx context.Context, k WorkloadKey, handed handoff) error {
	obj, err := d.Kinds.New(k.Kind)
	if err != nil {
		return nil // not a kind this manager restarts
	}
	if err := d.Client.Get(ctx, client.ObjectKey{Namespace: k.Namespace, Name: k.Name}, obj); err != nil {
		if apierrors.IsNotFound(err) && d.mem != nil {
			d.mem.forgetDebt(k.memoryKey())
		}
		return client.IgnoreNotFound(err)
	}
	// The cache's own requests: read only; the one finished request the
	// driver may reopen is copied below.
	requests, err := requestsOf(ctx, d.Client, k.Namespace, workload.TargetKey(k.Kind, k.Name))
	if err != nil {
		return err
	}
	h, err := d.Kinds.Handle(ctx, d.Client, obj)
	if err != nil {
		return err
	}
	var finished *kickv1alpha1.KickRequest
	for _, kr := range requests {
		if kr.Status.Phase.IsTerminal() && (finished == nil || assess.Older(finished, kr)) {
			finished = kr
		}
	}
	if finished != nil {
		finished = finished.DeepCopy() // annotate writes the reopened request into it
	}
	if o, ok := d.unrecordedRestart(k, h, requests); ok {
		// A restart without its request (written right after the restart,
		// and refused or cut short by a manager stop): write it now.
		_, err := d.recordRestart(ctx, k, h.Target, finished, o)
		// The claim a restart at once left ends with the first try of its
		// request (a write refused again is retried from the debt).
		d.mem.settleClaim(k.memoryKey(), o)
		return err
	}
	for _, kr := range requests {
		if !kr.Status.Phase.IsTerminal() {
			// An open request assesses from the records itself; make sure
			// it runs now.
			d.Metrics.decision("woken")
			d.wake(ctx, kr)
			return nil
		}
	}
	f, err := facts(ctx, d.Client, d.Kinds, d.CSI, d.KeyNames, d.mem.waveCache(), h, d.Now())
	if err != nil {
		return err
	}
	f.Handed, f.HandedUnread = handed.change, handed.unread
	if d.mem != nil {
		f.Halts = append(f.Halts, d.mem.halts.in(k.Namespace, f.Now)...)
	}
	a := assess.Assess(f)
	if rolloutUnidentified(&a) {
		if after, ok := d.identifying.wait(k, d.Now()); ok {
			d.Metrics.decision("identifying")
			return errIdentifying{after: after}
		}
	}
	switch {
	case a.Selection.State == assess.NotSelected:
		d.Metrics.decision("unmanaged")
		return nil
	case a.Carried:
		d.Metrics.decision("fresh")
		return nil
	}
	if d.mem != nil && a.Verdict == assess.Stale && a.Gate.Allowed && !a.Gate.DryRun && !d.Budget.Applies(a.Selection.Policy) {
		return d.restartNow(ctx, k, h, finished, a, handed)
	}
	tc := d.startChange(ctx, k, a, handed)
	if finished != nil {
		d.Metrics.decision("reopened")
		_, err := d.annotate(ctx, finished, a.Latest, "", tc)
		return err
	}
	d.Metrics.decision("created")
	_, err = d.create(ctx, k.Kind, h.Target, a.Latest, "", tc)
	return err
}

// startChange starts the trace of the cycle that writing a's change onto a
// request opens; the zero Change when tracing is off.
func (d *Driver) startChange(ctx context.Context, k WorkloadKey, a assess.Assessment, handed handoff) tracing.Change {
	if d.Tracer == nil {
		return tracing.Change{}
	}
	return d.Tracer.StartChange(ctx, changeCycle(k, a, handed), a.Latest.Latest)
}

// errLookAgain puts a workload back on the driver's queue shortly, without
// counting an error: its restart was refused because it changed meanwhile.
var errLookAgain = errors.New("the workload changed meanwhile; look again")

// refused reports whether a look ended in a write refused because its
// object changed meanwhile: the restart (errLookAgain), or a request write
// conditional on the cached copy (a conflict, often with this manager's own
// earlier write that the cache does not show yet). That is optimistic
// concurrency doing its job, not an error: the driver looks again shortly.
func refused(err error) bool {
	return errors.Is(err, errLookAgain) || apierrors.IsConflict(err)
}

// wake has the request reconciler look at kr now.
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
