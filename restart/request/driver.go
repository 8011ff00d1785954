package request

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/assess"
	"github.com/kick-operator/kick/restart/budget"
	"github.com/kick-operator/kick/restart/discovery"
	"github.com/kick-operator/kick/restart/evidence"
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
	// identifying are the workloads whose rollout the driver is waiting to
	// date before it decides (see identifyGrace).
	identifying identifyWaits
	// mem is shared with the request reconciler: the stamps this process
	// wrote and the restarts the driver is applying now. Nil turns the
	// driver's own restarts off.
	mem *memory
}

// handedChanges keeps, per workload, the newest change a router event
// announced until a reconcile of that workload has answered it: the cache
// may not show the record yet when the event arrives.
type handedChanges struct {
	mu sync.Mutex
	m  map[WorkloadKey]handoff
	// lastLook is when the driver last finished a look at any workload: a
	// driver that keeps finishing looks is working through its queue.
	lastLook time.Time
}

// handoff is a change a router event announced and the source that changed
// (the newest one's, for the trace), and since when the driver holds a
// change of the workload it has not answered.
type handoff struct {
	change freshness.Change
	source router.ObjectRef
	since  time.Time
}

func (h *handedChanges) add(k WorkloadKey, c freshness.Change, source router.ObjectRef, at time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil {
		h.m = map[WorkloadKey]handoff{}
	}
	prev, held := h.m[k]
	next := handoff{change: prev.change.Max(c), source: prev.source, since: prev.since}
	if !held {
		next.since = at
	}
	if prev.source.IsZero() || c.Latest.After(prev.change.Latest) {
		next.source = source
	}
	h.m[k] = next
}

func (h *handedChanges) get(k WorkloadKey) handoff {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.m[k]
}

// pending reports whether the driver holds a change of the workload that
// it has not answered and its look, which restarts at once where the gates
// allow, is still coming: the change was handed to it, or the driver
// finished a look at some workload, less than driverLookWait before now
// (a busy driver works through a burst one workload after another), and
// it was handed less than driverLookMax before now.
func (h *handedChanges) pending(k WorkloadKey, now time.Time) bool {
	if h == nil {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	c, held := h.m[k]
	if !held || now.Sub(c.since) >= driverLookMax {
		return false
	}
	progress := c.since
	if h.lastLook.After(progress) {
		progress = h.lastLook
	}
	return now.Sub(progress) < driverLookWait
}

// looked notes that the driver finished a look at some workload.
func (h *handedChanges) looked(at time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if at.After(h.lastLook) {
		h.lastLook = at
	}
}

// How long a request leaves a restart to the driver that was handed the
// change (see pending): driverLookWait without the driver finishing any
// look, so a stuck driver delays the request's own restart by seconds
// only, and driverLookMax in all, longer than a burst of thousands of
// workloads keeps one in the driver's queue.
const (
	driverLookWait = 5 * time.Second
	driverLookMax  = 2 * time.Minute
	driverLookPoll = 200 * time.Millisecond
)

// answered forgets c unless a newer change arrived meanwhile (that one
// re-queued the workload).
func (h *handedChanges) answered(k WorkloadKey, c handoff) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m[k] == c {
		delete(h.m, k)
	}
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
					s.handed.add(k, freshness.At(sc.ChangeTime), sc.Source, s.now())
				}
				q.Add(k)
			}
		}
	}()
	return nil
}

// Reconcile looks at one workload (reconcile.TypedReconciler).
func (d *Driver) Reconcile(ctx context.Context, k WorkloadKey) (reconcile.Result, error) {
	handed := d.handed.get(k)
	err := d.ensure(ctx, k, handed)
	d.Records.Looked(k.lookKey())
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
		d.Metrics.error("driver", "Ensure")
		return reconcile.Result{}, err
	}
	// This look decided; the workload's rollout is no longer waited for.
	d.identifying.done(k)
	d.handed.answered(k, handed)
	return reconcile.Result{}, nil
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
	var requests kickv1alpha1.KickRequestList
	if err := d.Client.List(ctx, &requests, client.InNamespace(k.Namespace),
		client.MatchingFields{TargetIndex: workload.TargetKey(k.Kind, k.Name)}); err != nil {
		return err
	}
	h, err := d.Kinds.Handle(ctx, d.Client, obj)
	if err != nil {
		return err
	}
	var finished *kickv1alpha1.KickRequest
	for i := range requests.Items {
		kr := &requests.Items[i]
		if kr.Status.Phase.IsTerminal() && (finished == nil || assess.Older(finished, kr)) {
			finished = kr
		}
	}
	if o, ok := d.unrecordedRestart(k, h, requests.Items); ok {
		// A restart without its request (written right after the restart,
		// and refused or cut short by a manager stop): write it now.
		_, err := d.recordRestart(ctx, k, h.Target, finished, o, tracing.Change{})
		return err
	}
	for i := range requests.Items {
		kr := &requests.Items[i]
		if !kr.Status.Phase.IsTerminal() {
			// An open request assesses from the records itself; make sure
			// it runs now.
			d.Metrics.decision("woken")
			d.wake(ctx, kr)
			return nil
		}
	}
	f, err := facts(ctx, d.Client, d.Kinds, d.CSI, h, d.Now())
	if err != nil {
		return err
	}
	f.Handed = handed.change
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

// restartNow is the path of a restart every gate allows at once (no GitOps
// provider to ask, no window, no minInterval or settle wait). For a
// workload that can carry a note (package evidence), the driver restarts
// it first and writes the bookkeeping after: the restart's write also sets
// the workload's restarted-for note (the stamp, the change, and the
// Secret and ConfigMap versions whose records the observer is still
// writing), then the request naming the stamp is written. A crash at any
// point is safe:
//   - before the restart, nothing happened; the record says (or, once
//     written, will say) the workload is stale, and the next look restarts
//     it;
//   - after the restart, before the records: the next manager's observer
//     finds the new content named by the note on a consumer that still
//     carries the note's stamp, dates the change no later than that
//     restart, and so does not restart again (observe.answeredBy);
//   - after the restart, before the request: the next manager looks at
//     every managed workload when it starts (the adopter), finds the
//     note's stamp named by no request and writes the request then
//     (unrecordedRestart), which follows the rollout that already runs.
//
// Other workloads (an Argo Rollout, a workload restarted through another
// object) get the request first, with the stamp it is about to apply, and
// the restart once the records of the change are durable; see
// requestThenRestart.
//
// The restart is conditional on the stamp the workload carried, like the
// reconciler's own, so two writers can never both restart it.
func (d *Driver) restartNow(ctx context.Context, k WorkloadKey, h workload.Handle, finished *kickv1alpha1.KickRequest, a assess.Assessment, handed handoff) error {
	target := k.memoryKey()
	cached, _ := h.Current()
	logger := log.FromContext(ctx).WithValues("target", k.String())
	if !d.mem.pendingStamp(target, cached).IsZero() {
		// This process restarted it already; the cache has not caught up.
		logger.V(1).Info("not restarting at once: this manager's last restart is not in the cache yet")
		return nil
	}
	stamp, value := h.Stamp(d.Now(), a.Latest.Latest)
	if !d.mem.claim(target, stamp) {
		logger.V(1).Info("not restarting at once: a restart of it is being applied")
		return nil
	}
	tc := d.startChange(ctx, k, a, handed)
	if !h.CanNote() {
		return d.requestThenRestart(ctx, k, h, finished, a, handed, stamp, value, tc)
	}
	note := evidence.Note{Stamp: value, Change: a.Latest.Latest, Sources: pendingSources(d.Records, h.Target)}
	started := d.Now()
	if err := h.RestartWithNote(ctx, d.Client, value, kickv1alpha1.RestartedForAnnotation, note.String()); err != nil {
		// Someone changed the workload meanwhile, or the API refused:
		// look again once the cache shows what changed.
		d.mem.settle(target, stamp, false)
		logger.V(1).Info("restart at once refused; looking again", "error", err)
		if apierrors.IsNotFound(err) {
			return nil
		}
		return errLookAgain
	}
	d.mem.settle(target, stamp, true)
	d.Records.Looked(k.lookKey()) // the change's record may follow now
	d.mem.owe(target, owedRequest{value: value, change: a.Latest})
	logger.Info("restarted workload", "via", h.Ref().String(), "stamp", value)
	d.Metrics.restart(kickv1alpha1.ProviderNone, "started")
	d.Metrics.observeLatency(d.Now().Sub(a.Latest.Latest))
	kr, err := d.recordRestart(ctx, k, h.Target, finished, owedRequest{value: value, change: a.Latest}, tc)
	if err != nil {
		return err
	}
	if d.Tracer != nil && kr != nil {
		c := changeCycle(k, a, handed)
		c.Request = kr.Name
		d.Tracer.Restarted(ctx, tc.Traceparent(), c, started, d.Now())
	}
	return nil
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

// owedRequest is a restart the driver applied whose request is not written
// yet: the stamp's value and the change it answered.
type owedRequest struct {
	value  string
	change freshness.Change
}

// recordRestart writes the request of a restart already applied with
// o.value: it creates the workload's request, or reopens its finished one,
// naming the stamp, so the request reconciler follows that rollout instead
// of restarting. Until it succeeds the debt stays in memory (and on the
// workload, in its note) and the next look at the workload pays it.
func (d *Driver) recordRestart(ctx context.Context, k WorkloadKey, target client.Object, finished *kickv1alpha1.KickRequest, o owedRequest, tc tracing.Change) (*kickv1alpha1.KickRequest, error) {
	var kr *kickv1alpha1.KickRequest
	var err error
	if finished != nil {
		d.Metrics.decision("reopened")
		kr, err = d.annotate(ctx, finished, o.change, o.value, tc)
	} else {
		d.Metrics.decision("created")
		kr, err = d.create(ctx, k.Kind, target, o.change, o.value, tc)
	}
	if err != nil {
		return nil, err
	}
	d.mem.paid(k.memoryKey(), o.value)
	if kr != nil {
		d.wake(ctx, kr)
	}
	return kr, nil
}

// unrecordedRestart returns the restart the workload carries that no
// request names: one this process owes a request for, or, after a manager
// restart, the one its restarted-for note describes while the workload
// still carries the note's stamp.
func (d *Driver) unrecordedRestart(k WorkloadKey, h workload.Handle, requests []kickv1alpha1.KickRequest) (owedRequest, bool) {
	if d.mem == nil {
		return owedRequest{}, false // this driver restarts nothing itself
	}
	o, ok := d.mem.owed(k.memoryKey())
	if !ok {
		n, err := evidence.Parse(h.Target.GetAnnotations()[kickv1alpha1.RestartedForAnnotation])
		if err != nil || h.Redirected() {
			return owedRequest{}, false
		}
		stamp, parsed := freshness.ParseStamp(n.Stamp)
		current, carried := h.Current()
		if !parsed || !carried || !current.Equal(stamp) {
			return owedRequest{}, false // the note speaks for an earlier restart
		}
		if d.Retention > 0 && d.Now().Sub(stamp) >= d.Retention {
			return owedRequest{}, false // its request would have been deleted by now
		}
		// A change after the stamp is not one the stamp answered.
		change := n.Change
		if change.IsZero() || change.After(stamp) {
			change = stamp
		}
		o = owedRequest{value: n.Stamp, change: freshness.At(change)}
	}
	for i := range requests {
		kr := &requests[i]
		if kr.Annotations[kickv1alpha1.RestartAnnotation] == o.value {
			d.mem.paid(k.memoryKey(), o.value)
			return owedRequest{}, false
		}
	}
	return o, true
}

// pendingSources returns the Secrets and ConfigMaps target consumes whose
// records are still being written, with the versions being recorded.
func pendingSources(records *inflight.Records, target client.Object) []evidence.Source {
	if records == nil || records.Len() == 0 {
		return nil
	}
	var out []evidence.Source
	for _, p := range records.Pending(consumedSources(target)) {
		out = append(out, evidence.Source{Kind: p.Kind, Name: p.Name, ResourceVersion: p.ResourceVersion})
	}
	return out
}

// requestThenRestart restarts a workload that cannot carry a note: the
// request is written first, with the stamp it is about to apply, and the
// restart waits for the records of the change. A crash after the request
// and before the patch leaves a request whose stamp the workload lacks, so
// the request reconciler restarts it the usual way, once; a crash after the
// patch finds the change recorded and the workload fresh.
func (d *Driver) requestThenRestart(ctx context.Context, k WorkloadKey, h workload.Handle, finished *kickv1alpha1.KickRequest, a assess.Assessment, handed handoff, stamp time.Time, value string, tc tracing.Change) error {
	target := k.memoryKey()
	logger := log.FromContext(ctx).WithValues("target", k.String())
	var kr *kickv1alpha1.KickRequest
	var err error
	if finished != nil {
		d.Metrics.decision("reopened")
		kr, err = d.annotate(ctx, finished, a.Latest, value, tc)
	} else {
		d.Metrics.decision("created")
		kr, err = d.create(ctx, k.Kind, h.Target, a.Latest, value, tc)
	}
	if err != nil || kr == nil {
		// No request names the stamp: leave the restart to the reconciler.
		d.mem.settle(target, stamp, false)
		logger.V(1).Info("not restarting at once: the request was not written with the stamp", "error", err)
		return err
	}
	d.Records.Looked(k.lookKey()) // the record this restart waits for may follow now
	if err := waitForRecords(ctx, d.Records, h.Target); err != nil {
		// The record of the change is not durable: the request reconciler
		// restarts once it is.
		d.mem.settle(target, stamp, false)
		d.wake(ctx, kr)
		logger.V(1).Info("not restarting at once: the change is not recorded yet", "error", err)
		return err
	}
	started := d.Now()
	if err := h.Restart(ctx, d.Client, value); err != nil {
		// Someone changed the workload meanwhile, or the API refused: the
		// request reconciler decides again from what the workload carries.
		d.mem.settle(target, stamp, false)
		d.wake(ctx, kr)
		logger.V(1).Info("restart at once refused; the request decides again", "error", err)
		return client.IgnoreNotFound(ignoreConflict(err))
	}
	d.mem.settle(target, stamp, true)
	logger.Info("restarted workload", "request", kr.Name, "via", h.Ref().String(), "stamp", value)
	if d.Tracer != nil {
		c := changeCycle(k, a, handed)
		c.Request = kr.Name
		d.Tracer.Restarted(ctx, tc.Traceparent(), c, started, d.Now())
	}
	d.Metrics.restart(kickv1alpha1.ProviderNone, "started")
	d.Metrics.observeLatency(d.Now().Sub(a.Latest.Latest))
	d.wake(ctx, kr)
	return nil
}

// ignoreConflict treats a refused conditional restart as answered: the
// workload changed since it was read, and whoever changed it decides.
func ignoreConflict(err error) error {
	if apierrors.IsConflict(err) || apierrors.IsInvalid(err) {
		return nil
	}
	return err
}

// create creates the workload's request for changed; with restart set, it
// also names the stamp the driver applies. It returns the request only when
// it wrote restart on it (a request created meanwhile is annotated instead).
// The request carries tc's traceparent, and tc is recorded, when written.
func (d *Driver) create(ctx context.Context, kind kickv1alpha1.TargetKind, obj client.Object, changed freshness.Change, restart string, tc tracing.Change) (*kickv1alpha1.KickRequest, error) {
	kr := &kickv1alpha1.KickRequest{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: obj.GetNamespace(),
			Name:      kickv1alpha1.RequestName(kind, obj.GetName()),
			Labels:    map[string]string{kickv1alpha1.ManagedByLabel: kickv1alpha1.ManagedByKick},
		},
		Spec: kickv1alpha1.KickRequestSpec{TargetRef: kickv1alpha1.TargetRef{
			APIVersion: d.Kinds.APIVersion(kind), Kind: kind, Name: obj.GetName(),
		}},
	}
	kr.Annotations = map[string]string{}
	if !changed.IsZero() {
		kr.Annotations[kickv1alpha1.ChangeAnnotation] = assess.FormatChange(changed)
	}
	if restart != "" {
		kr.Annotations[kickv1alpha1.RestartAnnotation] = restart
	}
	if tp := tc.Traceparent(); tp != "" {
		kr.Annotations[kickv1alpha1.TraceparentAnnotation] = tp
	}
	err := d.Client.Create(ctx, kr)
	if err == nil {
		tc.Recorded(kr.Name, d.Now())
		return kr, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	existing := &kickv1alpha1.KickRequest{}
	if err := d.Client.Get(ctx, client.ObjectKeyFromObject(kr), existing); err != nil {
		return nil, err
	}
	if sameTarget(existing, kr) {
		// Created meanwhile (cache lag or a concurrent worker): hand the
		// change over through the annotation instead, with the stamp of a
		// restart already applied (the request adopts it unless it runs a
		// rollout of its own).
		return d.annotate(ctx, existing, changed, restart, tc)
	}
	// The name is taken by a request for another target: a name never
	// proves what a request targets, so leave that one alone and use a
	// name of our own.
	kr.Name, kr.GenerateName = "", kickv1alpha1.RequestName(kind, obj.GetName())+"-"
	if err := d.Client.Create(ctx, kr); err != nil {
		return nil, err
	}
	tc.Recorded(kr.Name, d.Now())
	return kr, nil
}

// sameTarget reports whether two requests target the same workload.
func sameTarget(a, b *kickv1alpha1.KickRequest) bool {
	return a.Spec.TargetRef.Kind == b.Spec.TargetRef.Kind && a.Spec.TargetRef.Name == b.Spec.TargetRef.Name
}

// annotate records a change the request must answer; for a finished
// request this reopens it (the reconciler sees the newer change). With
// restart set it also names the stamp the driver applies, and returns the
// request when it wrote it. The patch is conditional on the request's
// resourceVersion when it names a stamp, so it cannot land on a request
// that was reopened meanwhile. The change starts a new cycle: the request
// gets tc's traceparent (tc is recorded), or loses the previous cycle's
// when tracing is off.
func (d *Driver) annotate(ctx context.Context, kr *kickv1alpha1.KickRequest, changed freshness.Change, restart string, tc tracing.Change) (*kickv1alpha1.KickRequest, error) {
	known := assess.AnnotatedChange(kr)
	if restart == "" && !assess.Adds(changed, known) {
		d.wake(ctx, kr)
		return nil, nil
	}
	annotations := map[string]any{kickv1alpha1.ChangeAnnotation: assess.FormatChange(changed.Max(known))}
	if tp := tc.Traceparent(); tp != "" {
		annotations[kickv1alpha1.TraceparentAnnotation] = tp
	} else if _, ok := kr.Annotations[kickv1alpha1.TraceparentAnnotation]; ok {
		annotations[kickv1alpha1.TraceparentAnnotation] = nil // a merge patch deletes it
	}
	meta := map[string]any{"annotations": annotations}
	if restart != "" {
		annotations[kickv1alpha1.RestartAnnotation] = restart
		meta["resourceVersion"] = kr.ResourceVersion
	}
	patch, err := json.Marshal(map[string]any{"metadata": meta})
	if err != nil {
		return nil, err
	}
	if err := d.Client.Patch(ctx, kr, client.RawPatch(types.MergePatchType, patch)); err != nil {
		if apierrors.IsConflict(err) {
			// Changed meanwhile: look again with the newer copy.
			return nil, err
		}
		return nil, client.IgnoreNotFound(err)
	}
	tc.Recorded(kr.Name, d.Now())
	if restart == "" {
		d.wake(ctx, kr)
		return nil, nil
	}
	return kr, nil
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

// recordWait bounds how long a restart waits for the records of its
// workload's sources; past it the restart is retried.
const recordWait = 10 * time.Second

// waitForRecords waits until no record of a Secret or ConfigMap the target
// consumes is being written by this process (see package inflight).
func waitForRecords(ctx context.Context, records *inflight.Records, target client.Object) error {
	if records == nil || records.Len() == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, recordWait)
	defer cancel()
	return records.Wait(ctx, consumedSources(target))
}

// consumedSources names the Secrets and ConfigMaps target consumes, as the
// observer tracks their record writes.
func consumedSources(target client.Object) []inflight.Source {
	var sources []inflight.Source
	for _, dep := range discovery.FromWorkload(target) {
		if dep.Kind == string(kickv1alpha1.SourceSecret) || dep.Kind == string(kickv1alpha1.SourceConfigMap) {
			sources = append(sources, inflight.Source{Namespace: target.GetNamespace(), Kind: dep.Kind, Name: dep.Name})
		}
	}
	return sources
}
