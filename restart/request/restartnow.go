package request

import (
	"context"
	"errors"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/assess"
	"github.com/kick-operator/kick/restart/discovery"
	"github.com/kick-operator/kick/restart/evidence"
	"github.com/kick-operator/kick/restart/freshness"
	"github.com/kick-operator/kick/restart/inflight"
	"github.com/kick-operator/kick/restart/tracing"
	"github.com/kick-operator/kick/restart/workload"
)

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
	d.lookedOnceShown(k, value)
	d.lastRestart.Store(d.Now().UnixNano())
	o := owedRequest{value: value, change: a.Latest, claim: stamp, trace: tc, restarted: started, restartedBy: d.Now()}
	if d.Tracer != nil {
		o.cycle = changeCycle(k, a, handed)
	}
	d.mem.owe(target, o)
	logger.Info("restarted workload", "via", h.Ref().String(), "stamp", value)
	d.Metrics.restart(kickv1alpha1.ProviderNone, "started")
	d.Metrics.observeLatency(d.Now().Sub(a.Latest.Latest))
	// The request naming the restart is written at a later look of the
	// workload, once the driver has stopped restarting others for a moment
	// (fanOutQuiet). Until then the debt is in memory and, for a crash, in
	// the workload's note (unrecordedRestart). The claim
	// holds until that write: a request reconcile in between (the change's
	// record wakes it) would otherwise find the stamp applied but not
	// named, follow the rollout as its own and record Executing at once,
	// then again once it saw the driver's reopen: two status writes and an
	// Event more than the driver's restart costs (see deferStatus).
	return errRecordNext
}

// errRecordNext ends a look that restarted the workload: the request that
// names the restart is written by a later look (see recordWait).
var errRecordNext = errors.New("restarted; the request is written at the next look")

// owedRequest is a restart the driver applied whose request is not written
// yet: the stamp's value and the change it answered.
type owedRequest struct {
	value  string
	change freshness.Change
	// claim, when set, is the driver's claim on the workload (memory.claim)
	// that ends once the request is written, or its first write failed.
	claim time.Time
	// trace, cycle, restarted and restartedBy describe the restart to the
	// tracer once its request is named (zero without a tracer).
	trace                  tracing.Change
	cycle                  tracing.Cycle
	restarted, restartedBy time.Time
}

// recordRestart writes the request of a restart already applied with
// o.value: it creates the workload's request, or reopens its finished one,
// naming the stamp, so the request reconciler follows that rollout instead
// of restarting. Until it succeeds the debt stays in memory (and on the
// workload, in its note) and the next look at the workload pays it.
func (d *Driver) recordRestart(ctx context.Context, k WorkloadKey, target client.Object, finished *kickv1alpha1.KickRequest, o owedRequest) (*kickv1alpha1.KickRequest, error) {
	var kr *kickv1alpha1.KickRequest
	var err error
	if finished != nil {
		d.Metrics.decision("reopened")
		kr, err = d.annotate(ctx, finished, o.change, o.value, o.trace)
	} else {
		d.Metrics.decision("created")
		kr, err = d.create(ctx, k.Kind, target, o.change, o.value, o.trace)
	}
	if err != nil {
		return nil, err
	}
	d.mem.paid(k.memoryKey(), o.value)
	if kr != nil {
		d.wake(ctx, kr)
		if d.Tracer != nil && !o.restarted.IsZero() {
			c := o.cycle
			c.Request = kr.Name
			d.Tracer.Restarted(ctx, o.trace.Traceparent(), c, o.restarted, o.restartedBy)
		}
	}
	return kr, nil
}

// unrecordedRestart returns the restart the workload carries that no
// request names: one this process owes a request for, or, after a manager
// restart, the one its restarted-for note describes while the workload
// still carries the note's stamp.
func (d *Driver) unrecordedRestart(k WorkloadKey, h workload.Handle, requests []*kickv1alpha1.KickRequest) (owedRequest, bool) {
	if d.mem == nil {
		return owedRequest{}, false // this driver restarts nothing itself
	}
	o, ok := d.mem.owed(k.memoryKey())
	if !ok {
		if h.Redirected() {
			return owedRequest{}, false
		}
		n, stamp, ok := carriedNote(h.Target, h.Current)
		if !ok {
			return owedRequest{}, false
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
	for _, kr := range requests {
		if kr.Annotations[kickv1alpha1.RestartAnnotation] == o.value {
			d.mem.paid(k.memoryKey(), o.value)
			return owedRequest{}, false
		}
	}
	return o, true
}

// carriedNote returns w's restarted-for note and its stamp when w still
// carries that stamp (current reads the stamp w carries); false when w has
// no note, or the note speaks for an earlier restart.
func carriedNote(w client.Object, current func() (time.Time, bool)) (evidence.Note, time.Time, bool) {
	n, err := evidence.Parse(w.GetAnnotations()[kickv1alpha1.RestartedForAnnotation])
	if err != nil {
		return evidence.Note{}, time.Time{}, false
	}
	stamp, parsed := freshness.ParseStamp(n.Stamp)
	carried, ok := current()
	if !parsed || !ok || !carried.Equal(stamp) {
		return evidence.Note{}, time.Time{}, false
	}
	return n, stamp, true
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
