package request

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/gitops"
	"github.com/kick-operator/kick/restart/assess"
	"github.com/kick-operator/kick/restart/budget"
	"github.com/kick-operator/kick/restart/freshness"
	"github.com/kick-operator/kick/restart/inflight"
	"github.com/kick-operator/kick/restart/tracing"
	"github.com/kick-operator/kick/restart/workload"
	"github.com/kick-operator/kick/router"
)

// Reconciler runs the KickRequest state machine (model §9–§10): it asks the
// assessment whether the target needs a restart and may have it now, acts
// on the answer (restart, wait, finish), follows the rollout it started and
// deletes finished requests after retention. It is the only writer of
// KickRequest status.
type Reconciler struct {
	// Client reads workloads, policies and observation records from the
	// cache and writes status and the restart patch.
	Client client.Client
	// APIReader reads the KickRequest itself past the cache, so a reconcile
	// never acts on a status older than its own last write.
	APIReader client.Reader
	Recorder  events.EventRecorder
	// Router receives PhaseChanged and GateChanged events; nil disables
	// publishing.
	Router  router.Publisher
	GitOps  gitops.Gate
	Metrics *Metrics
	Now     func() time.Time

	RolloutTimeout time.Duration
	Retention      time.Duration
	// Kinds are the workload kinds this manager restarts; nil means
	// workload.Builtin().
	Kinds *workload.Registry
	// CSI makes Secrets Store CSI classes count as dependencies.
	CSI bool
	// KeyNames names keys as the observation records do (see KeyNamer).
	KeyNames KeyNamer
	// Tracer records the restarts; nil records nothing.
	Tracer *tracing.Tracer
	// Records are the observation records being written; a restart waits
	// for its workload's (nil: none are tracked).
	Records *inflight.Records
	// Budget hands out restart slots (restart.maxConcurrent,
	// --max-concurrent-restarts); nil: no caps.
	Budget *budget.Budget
	// WavePoll is how often a restart an earlier wave holds looks again
	// when nothing wakes it; 0 means DefaultWavePoll.
	WavePoll time.Duration

	mem *memory
	// wake asks for a look at a request soon; it never blocks.
	wake func(types.NamespacedName)
	// driverHanded is what the driver (of this process) was handed and
	// has not looked at yet; nil when no driver runs.
	driverHanded *handedChanges
}

// Reconcile implements reconcile.Reconciler.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var kr kickv1alpha1.KickRequest
	if err := r.mem.read(ctx, r.Client, r.APIReader, req.NamespacedName, &kr); err != nil {
		if apierrors.IsNotFound(err) {
			r.mem.forget(req.NamespacedName)
			r.putOff(req.NamespacedName, false)
			r.Budget.Observe(ctx, req.NamespacedName, false, false, false)
			r.leaveWave(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !kr.DeletionTimestamp.IsZero() {
		r.Budget.Observe(ctx, req.NamespacedName, false, false, false)
		r.leaveWave(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	if !kr.HaltsFanOut() && r.mem.halts.forget(req.String()) && r.wake != nil {
		// Read at least as new as this process's last write of it: the halt
		// was released or ended, and the requests it held may go.
		for _, o := range openRequestsIn(ctx, r.Client, req.Namespace) {
			r.wake(o.NamespacedName)
		}
	}
	orig := kr.DeepCopy()
	s := &step{r: r, kr: &kr, now: r.Now()}
	result, err := s.run(ctx)
	if !s.waveHeld {
		r.leaveWave(req.NamespacedName)
	}
	if err != nil {
		if s.slot {
			r.Budget.Release(req.NamespacedName)
		}
		r.Metrics.error("kickrequest", "Reconcile")
		return ctrl.Result{}, err
	}
	if s.deleted {
		r.mem.forget(req.NamespacedName)
		r.putOff(req.NamespacedName, false)
		r.Budget.Observe(ctx, req.NamespacedName, false, false, false)
		return ctrl.Result{}, nil
	}
	if s.waitForDriver {
		// Nothing is decided while the driver's patch is in flight; a
		// status write now would only compete with it.
		return result, nil
	}
	defer r.Budget.Observe(ctx, req.NamespacedName, restartInProgress(orig), restartInProgress(&kr), waitsForSlot(&kr))
	base := orig
	if s.slot {
		// A restart that took a slot is recorded before it is applied: the
		// budget counts restarts from their requests, and a restart no
		// request records (a crash between patch and status) would be one
		// a new leader cannot see.
		if err := r.writeStatus(ctx, orig, &kr); err != nil {
			r.Budget.Release(req.NamespacedName)
			return ctrl.Result{}, err
		}
		base = kr.DeepCopy()
	}
	if s.restartStamp != "" {
		// Restart first, then record it: the restart is what the user waits
		// for. A crash in between is safe: the workload then carries a stamp
		// newer than the change, so the next reconcile finds it fresh and
		// does not restart again; within this process the stamp memory
		// covers a cache that has not seen the patch yet.
		if err := waitForRecords(ctx, r.Records, s.handle.Target); err != nil {
			return ctrl.Result{}, err
		}
		started := r.Now()
		if err := s.handle.Restart(ctx, r.Client, s.restartStamp); err != nil {
			r.Metrics.error("kickrequest", "RestartPatch")
			return ctrl.Result{}, fmt.Errorf("restart %s%s: %w", s.targetRef(), s.through(), err)
		}
		if m := kr.Status.CurrentRollout; m != nil && !s.slot && s.handle.Object.GetGeneration() > m.WorkloadGeneration {
			// Recorded in the one status write after the patch. A restart
			// recorded before its patch (it took a slot) leaves it out:
			// writing the status again only for it would cost every capped
			// restart a write, and the stamp alone tells a cache that has
			// not seen the patch (the cached copy that carries the stamp
			// has the patch's generation or a later one).
			m.WorkloadGeneration = s.handle.Object.GetGeneration()
		}
		if stamp, ok := freshness.ParseStamp(s.restartStamp); ok {
			r.mem.wroteStamp(memoryKey(&kr), stamp)
		}
		log.FromContext(ctx).Info("restarted workload", "target", s.targetRef(), "via", s.handle.Ref().String(), "stamp", s.restartStamp)
		r.traceRestart(ctx, &kr, s.a, started)
	}
	if wait := s.deferStatus(orig); wait > 0 {
		// Nothing to record yet: the rollout the driver started is young and
		// the request's annotations already say everything a restarted
		// manager needs. A rollout that finishes within the grace takes its
		// request from Pending to Succeeded in one write.
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	if err := r.writeStatus(ctx, base, &kr); err != nil {
		return ctrl.Result{}, err
	}
	r.announce(ctx, orig, &kr, s)
	return result, nil
}

// restartInProgress reports whether the request records a restart whose
// rollout it has not judged yet.
func restartInProgress(kr *kickv1alpha1.KickRequest) bool {
	return !kr.Status.Phase.IsTerminal() && kr.Status.CurrentRollout != nil
}

// waitsForSlot reports whether the request waits for the restart budget.
func waitsForSlot(kr *kickv1alpha1.KickRequest) bool {
	return kr.Status.Gate != nil && kr.Status.Gate.Reason == kickv1alpha1.GateRestartBudget
}

// putOff notes whether the request puts off recording the driver's restart
// it follows (see memory.putOff), keeping the count as a gauge.
func (r *Reconciler) putOff(key types.NamespacedName, putOff bool) (burst bool) {
	n, burst := r.mem.putOff(key, putOff)
	r.Metrics.unrecordedRollouts(n)
	return burst
}

func (r *Reconciler) writeStatus(ctx context.Context, orig, kr *kickv1alpha1.KickRequest) error {
	kr.Status.Reason = kr.Status.PhaseReason()
	if equalStatus(&orig.Status, &kr.Status) {
		return nil
	}
	kr.Status.ObservedGeneration = kr.Generation
	if err := r.Client.Status().Patch(ctx, kr, client.MergeFrom(orig)); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		r.Metrics.error("kickrequest", "StatusPatch")
		return fmt.Errorf("write status of KickRequest %s/%s: %w", kr.Namespace, kr.Name, err)
	}
	r.mem.wroteStatus(client.ObjectKeyFromObject(kr), kr.ResourceVersion)
	return nil
}

// step is one reconcile of one request.
type step struct {
	r   *Reconciler
	kr  *kickv1alpha1.KickRequest
	now time.Time

	handle       workload.Handle
	a            assess.Assessment
	restartStamp string
	// slot: the restart took a slot of the budget; the request records it
	// before the patch.
	slot     bool
	deleted  bool
	reopened bool
	// adopted: the rollout followed is the one the driver started.
	adopted bool
	// waitForDriver: this process's driver is patching the target now;
	// the reconcile decides nothing and writes nothing.
	waitForDriver bool
	// waveEpoch is the namespace's count of completions before the facts
	// were read (see completions); waveHeld: an earlier wave holds the
	// restart.
	waveEpoch uint64
	waveHeld  bool
	event     *eventSpec
	// notice is an Event emitted even without a phase change.
	notice *eventSpec
	// rewaited: the request keeps waiting in its phase, for something its
	// last Event did not name; event says what.
	rewaited bool
}

func (s *step) run(ctx context.Context) (ctrl.Result, error) {
	st := &s.kr.Status
	if st.Phase == "" {
		st.Phase = kickv1alpha1.PhasePending
	}
	finished := st.Phase.IsTerminal()
	if reason, msg, err := s.readTarget(ctx); err != nil || reason != "" {
		if err != nil {
			return ctrl.Result{}, err
		}
		if finished {
			s.answerChange(assess.ReopenVerdict{Reason: reason, Message: msg})
			return s.retain(ctx)
		}
		return s.fail(reason, msg), nil
	}
	if err := s.assess(ctx); err != nil {
		return ctrl.Result{}, err
	}
	if err := s.boundChange(ctx); err != nil {
		return ctrl.Result{}, err
	}
	if finished {
		// A writer of the change annotation (the driver, kubectl kick) opens
		// the new cycle's trace itself; see retrace.
		handed := s.kr.Annotations[kickv1alpha1.ChangeAnnotation] != st.ObservedChange
		v := s.a.Reopen(s.kr)
		if stamp, ok := driverRestart(s.kr); ok {
			switch s.driverRestartState(stamp) {
			case restartInFlight:
				s.waitForDriver = true
				return ctrl.Result{RequeueAfter: claimPoll}, nil
			case restartApplied:
				// The driver reopened it and restarted at once: the workload
				// already carries the change, but this cycle is the record.
				v = assess.ReopenVerdict{Reopen: true, Reason: kickv1alpha1.ReasonNewChange, Message: "a newer change reopened the request"}
			}
		}
		s.answerChange(v)
		if !v.Reopen {
			return s.retain(ctx)
		}
		s.reopen()
		s.reopened = true
		if !handed {
			if err := s.retrace(ctx); err != nil {
				return ctrl.Result{}, err
			}
		}
	}
	st.ObservedChange = s.kr.Annotations[kickv1alpha1.ChangeAnnotation]

	switch sel := s.a.Selection; sel.State {
	case assess.NotSelected:
		// A create right on KickRequests must not be a way around patch
		// rights on workloads: only policy-selected workloads restart.
		return s.fail(string(kickv1alpha1.GateNotSelected), sel.Message), nil
	case assess.Ambiguous:
		s.block(gitops.Decision{Reason: sel.Reason, Message: sel.Message}, "")
		return ctrl.Result{}, nil
	}
	st.PolicyRef = s.a.Selection.Policy.Name
	if err := s.recordManualRequest(ctx); err != nil {
		return ctrl.Result{}, err
	}
	if m := kickv1alpha1.NewNanoTime(s.a.Latest.Latest).CeilMicro(); !s.a.Latest.IsZero() && m.After(microTime(st.LatestObservedDependencyChange)) {
		st.LatestObservedDependencyChange = &m
	}
	if done, err := s.coalesce(ctx); done || err != nil {
		return ctrl.Result{}, err
	}
	if wait := s.followDriverRestart(); wait > 0 {
		s.waitForDriver = true
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	if st.CurrentRollout != nil {
		if res, done := s.track(ctx); done {
			return res, nil
		}
	}
	return s.evaluate(ctx)
}

// readTarget reads the target and how it is restarted. A reason is
// returned when the request cannot proceed (unsupported kind, no target).
func (s *step) readTarget(ctx context.Context) (reason, message string, err error) {
	obj, err := s.r.Kinds.New(s.kr.Spec.TargetRef.Kind)
	if err != nil {
		return kickv1alpha1.ReasonUnsupportedTarget, err.Error(), nil
	}
	if err := s.r.Client.Get(ctx, client.ObjectKey{Namespace: s.kr.Namespace, Name: s.kr.Spec.TargetRef.Name}, obj); err != nil {
		if apierrors.IsNotFound(err) {
			s.r.mem.forgetStamp(memoryKey(s.kr))
			return kickv1alpha1.ReasonTargetNotFound, fmt.Sprintf("%s does not exist; create it, or delete this KickRequest", s.targetRef()), nil
		}
		return "", "", err
	}
	if m := s.kr.Status.CurrentRollout; m != nil && !s.kr.Status.Phase.IsTerminal() {
		// Follow the restart under way where it was written, even if a
		// scale changed since which object a new restart would go through.
		s.handle, err = s.r.Kinds.Follow(ctx, s.r.Client, obj, m.RestartedAt)
		return "", "", err
	}
	s.handle, err = s.r.Kinds.Handle(ctx, s.r.Client, obj)
	return "", "", err
}

// assess gathers the facts from the cache, asks the GitOps provider when a
// policy selects the target, and assesses.
func (s *step) assess(ctx context.Context) error {
	s.waveEpoch = s.r.mem.waveCache().epoch(s.kr.Namespace)
	f, err := facts(ctx, s.r.Client, s.r.Kinds, s.r.CSI, s.r.KeyNames, s.r.mem.waveCache(), s.handle, s.now)
	if err != nil {
		return err
	}
	f.Request = s.kr
	f.Halts = append(f.Halts, s.r.mem.halts.in(s.kr.Namespace, s.now)...)
	if isManualUndated(s.kr) {
		// A person's request stands for a change at the moment KICK first
		// sees it (recordManualRequest keeps that moment).
		f.Handed = freshness.At(s.now)
	}
	s.a = Decide(ctx, s.r.GitOps, s.handle.Target, f)
	return nil
}

// rolloutPoll is how often a request looks at its rollout when no event
// of the workload or its ReplicaSets woke it: events wake it at once; the
// poll only bounds how long a missed one can hold it.
const rolloutPoll = time.Minute

// recheck is how soon to look again at a rollout that is not complete:
// wait, or sooner when the rollout says when it completes without an
// event announcing it (freshness.Rollout.Recheck).
func recheck(r freshness.Rollout, wait time.Duration) time.Duration {
	if r.Recheck > 0 {
		return min(wait, r.Recheck)
	}
	return wait
}

// track follows the rollout this request started. It reports done when
// the step is decided; otherwise the restart must be evaluated again (a
// change arrived while the rollout ran).
func (s *step) track(ctx context.Context) (ctrl.Result, bool) {
	st := &s.kr.Status
	marker := st.CurrentRollout
	mine, _ := freshness.ParseStamp(marker.RestartedAt)
	current, ok := s.handle.Current()
	if !ok || current.Before(mine) || s.handle.Object.GetGeneration() < marker.WorkloadGeneration {
		// Our patch is not visible in the cache yet. If this process wrote
		// it, wait for the cache; otherwise it may never have been applied
		// (a crash after the status write): apply the same stamp again. The
		// write is conditional on the cached stamp, so a copy that merely
		// lags is refused rather than restarting twice.
		if pending := s.r.mem.pendingStamp(memoryKey(s.kr), current); pending.IsZero() || pending.Before(mine) {
			s.restartStamp = marker.RestartedAt
		}
		return ctrl.Result{RequeueAfter: time.Second}, true
	}
	rollout := s.a.Rollout
	if !rollout.Complete {
		s.progress(orDefault(rollout.Reason, freshness.RolloutInProgress), rollout.Message)
		elapsed := s.now.Sub(mine)
		switch {
		case rollout.Reason == freshness.ProgressDeadlineExceeded:
			return s.failRollout(ctx, mine, kickv1alpha1.ReasonProgressDeadlineExceeded, fmt.Sprintf("the rollout of %s exceeded its progress deadline: %s", s.targetRef(), rollout.Message)), true
		case elapsed >= s.r.RolloutTimeout:
			return s.failRollout(ctx, mine, kickv1alpha1.ReasonRolloutTimeout, fmt.Sprintf("the rollout of %s did not complete within %s: %s", s.targetRef(), s.r.RolloutTimeout, rollout.Message)), true
		}
		st.Phase = kickv1alpha1.PhaseExecuting
		return ctrl.Result{RequeueAfter: recheck(rollout, min(s.r.RolloutTimeout-elapsed, rolloutPoll))}, true
	}
	s.condition(kickv1alpha1.ConditionRolloutComplete, true, "Complete", "the rollout completed")
	if marker.ReplicaSet == "" {
		marker.ReplicaSet = rollout.ReplicaSet
	}
	if s.a.Verdict == assess.Stale {
		// A relevant change arrived while our rollout was in flight: it is
		// newer than our stamp, so restart again (the gate, minInterval
		// included, still applies).
		st.CurrentRollout = nil
		return ctrl.Result{}, false
	}
	s.r.Metrics.restart(st.Provider, "succeeded")
	s.finish(kickv1alpha1.PhaseSucceeded, kickv1alpha1.ReasonRestartCompleted, fmt.Sprintf("%s rolled out with restart stamp %s", s.targetRef(), marker.RestartedAt))
	return ctrl.Result{RequeueAfter: s.r.Retention}, true
}

// evaluate acts on the assessment: wait for the gate, wait for the
// running rollout, finish when fresh, or restart.
func (s *step) evaluate(ctx context.Context) (ctrl.Result, error) {
	st := &s.kr.Status
	a := &s.a
	d := a.Gate.Decision()
	st.Provider, st.Owner = d.Provider, d.Owner
	if !a.Gate.Allowed {
		if g := st.Gate; a.Gate.Stage == assess.StageWave && g != nil && g.Reason == d.Reason && assess.SameWave(g.Message, d.Message) {
			d.Message = g.Message // see assess.SameWave
		}
		s.block(d, a.Gate.Stage)
		switch a.Gate.Stage {
		case assess.StageBudget:
			return ctrl.Result{RequeueAfter: budget.WaitPoll}, nil
		case assess.StageHalt:
			// A halt's end wakes the requests it holds; a halt this process
			// remembers ends in its memory only, so look again after it.
			return ctrl.Result{RequeueAfter: haltMemoryTTL}, nil
		case assess.StageWave:
			// The earlier wave's completions wake the request (see
			// waitForWave); it looks again at the bake's end, and every
			// WavePoll as a safety net.
			s.waitForWave()
			poll := s.r.wavePoll()
			if d.RequeueAt.IsZero() || d.RequeueAt.Sub(s.now) > poll {
				return ctrl.Result{RequeueAfter: poll}, nil
			}
		}
		if d.RequeueAt.IsZero() {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{RequeueAfter: max(d.RequeueAt.Sub(s.now), time.Second)}, nil
	}
	// Every gate allows the restart, but the status says so only on the
	// paths that go on: a request that then waits for a restart slot keeps
	// the gate it waited with, so a look that changes nothing writes
	// nothing (see waitForSlot).
	switch a.Verdict {
	case assess.InProgress:
		s.setGate(d, "")
		st.Phase = kickv1alpha1.PhaseWaitingForRollout
		s.condition(kickv1alpha1.ConditionRolloutComplete, false, orDefault(a.Rollout.Reason, freshness.RolloutInProgress), a.Rollout.Message)
		s.emit(false, "WaitingForRollout", fmt.Sprintf("waiting for the current rollout of %s to finish before deciding: %s", s.targetRef(), a.Rollout.Message))
		return ctrl.Result{RequeueAfter: recheck(a.Rollout, rolloutPoll)}, nil
	case assess.Fresh:
		s.setGate(d, "")
		s.condition(kickv1alpha1.ConditionStale, false, kickv1alpha1.ReasonUpToDate, a.VerdictMessage)
		s.finish(kickv1alpha1.PhaseNoLongerRequired, kickv1alpha1.ReasonUpToDate, a.VerdictMessage)
		return ctrl.Result{RequeueAfter: s.r.Retention}, nil
	case assess.CannotAssess:
		s.block(gitops.Decision{Reason: kickv1alpha1.GateConfigurationError, Message: a.VerdictMessage}, "")
		return ctrl.Result{RequeueAfter: time.Minute}, nil
	}
	s.condition(kickv1alpha1.ConditionStale, true, kickv1alpha1.ReasonDependencyNewer, a.VerdictMessage)
	if a.Gate.DryRun {
		s.setGate(d, "")
		s.finish(kickv1alpha1.PhaseDryRun, kickv1alpha1.ReasonDryRun, fmt.Sprintf("dry run: would restart %s now (%s)", s.targetRef(), a.VerdictMessage))
		return ctrl.Result{RequeueAfter: s.r.Retention}, nil
	}
	if _, applying := s.r.mem.claimed(memoryKey(s.kr)); applying {
		// The driver is restarting this workload right now; decide again
		// once its patch landed (or was refused).
		s.waitForDriver = true
		return ctrl.Result{RequeueAfter: claimPoll}, nil
	}
	if s.r.driverHanded.pending(requestWorkload(s.kr), s.now) {
		// The driver was handed this change and has not looked yet (a
		// burst keeps workloads in its queue); its look restarts at once
		// and reopens this request with the stamp, which this request then
		// follows. Restarting here instead would race it for the same
		// change and cost a status write and an Event more.
		s.waitForDriver = true
		return ctrl.Result{RequeueAfter: driverLookPoll}, nil
	}
	if s.owedByDriver() {
		// The driver applied a restart and has not named it on this
		// request yet (its write was refused and is being retried): the
		// request follows it once named, in one status write.
		s.waitForDriver = true
		return ctrl.Result{RequeueAfter: driverLookPoll}, nil
	}
	cachedStamp, _ := s.handle.Current()
	if pending := s.r.mem.pendingStamp(memoryKey(s.kr), cachedStamp); !pending.IsZero() && !freshness.Newer(a.Latest, pending) {
		// This process already restarted the workload for this change; the
		// cache has not caught up yet. Follow that rollout instead.
		s.setGate(d, "")
		started := metav1.NewMicroTime(pending)
		_, value := s.handle.Stamp(pending, time.Time{})
		st.CurrentRollout = &kickv1alpha1.RolloutMarker{StartedAt: &started, RestartedAt: value}
		st.RestartedFor = restartedFor(a, time.Time{})
		if microTime(st.LastRestartTime).Before(started.Time) {
			// A restart this request has not recorded yet (the driver's,
			// whose reopen has not reached the cache): it counts.
			st.LastRestartTime = &started
			st.RestartCount++
		}
		st.Phase = kickv1alpha1.PhaseExecuting
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	st.RestartedFor = restartedFor(a, time.Time{})
	stamp, value := s.handle.Stamp(s.now, a.Latest.Latest)
	if p := a.Selection.Policy; s.r.Budget.Applies(p) {
		v, err := s.r.Budget.Acquire(ctx, budget.Ask{Request: s.kr, Policy: p, Change: a.Latest.Latest, Stamp: value})
		if err != nil {
			return ctrl.Result{}, err
		}
		if !v.Granted {
			s.waitForSlot(v.Message)
			return ctrl.Result{RequeueAfter: budget.WaitPoll}, nil
		}
		// A restart of this fan-out that failed after the facts were read
		// noted its halt before it gave its slot up, so a slot it freed
		// shows the halt here.
		if s.a.HoldForHalts(s.r.mem.halts.in(s.kr.Namespace, s.now)) {
			s.r.Budget.Release(client.ObjectKeyFromObject(s.kr))
			s.block(s.a.Gate.Decision(), s.a.Gate.Stage)
			return ctrl.Result{RequeueAfter: haltMemoryTTL}, nil
		}
		s.slot = true
	}
	s.setGate(d, "")
	s.restartStamp = value
	startedAt := metav1.NewMicroTime(stamp)
	st.CurrentRollout = &kickv1alpha1.RolloutMarker{StartedAt: &startedAt, RestartedAt: s.restartStamp}
	st.LastRestartTime = &startedAt
	st.RestartCount++
	st.Phase = kickv1alpha1.PhaseExecuting
	s.condition(kickv1alpha1.ConditionRolloutComplete, false, freshness.RolloutInProgress, "restarted; waiting for the new pods to roll out")
	s.emit(false, "KickStarted", fmt.Sprintf("restarting %s%s: %s", s.targetRef(), s.through(), a.VerdictMessage))
	s.r.Metrics.restart(st.Provider, "started")
	s.r.Metrics.observeLatency(s.now.Sub(a.Latest.Latest))
	return ctrl.Result{RequeueAfter: s.r.RolloutTimeout}, nil
}
