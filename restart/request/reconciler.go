package request

import (
	"context"
	"fmt"
	"sort"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/gitops"
	"github.com/kick-operator/kick/restart/freshness"
	"github.com/kick-operator/kick/restart/schedule"
	"github.com/kick-operator/kick/restart/workload"
	"github.com/kick-operator/kick/router"
)

// Reconciler runs the KickRequest state machine (model §9–§10): gate,
// freshness, restart, rollout tracking, retention. It is the only writer of
// KickRequest status.
type Reconciler struct {
	// Client reads workloads, policies and observation records from the
	// cache and writes status and the restart patch.
	Client client.Client
	// APIReader reads the KickRequest itself past the cache, so a reconcile
	// never acts on a status older than its own last write.
	APIReader client.Reader
	Recorder  events.EventRecorder
	// Router receives a PhaseChanged event for every phase transition; nil
	// disables publishing.
	Router  router.Publisher
	GitOps  gitops.Gate
	Metrics *Metrics
	Now     func() time.Time

	RolloutTimeout time.Duration
	Retention      time.Duration
	// Kinds are the workload kinds this manager restarts; nil means
	// workload.Builtin().
	Kinds *workload.Registry
	// CSI makes Secrets Store CSI classes count as dependencies (their
	// per-workload observation records; see LatestChangeOf).
	CSI bool

	mem *memory
}

// Reconcile implements reconcile.Reconciler.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var kr kickv1alpha1.KickRequest
	if err := r.mem.read(ctx, r.Client, r.APIReader, req.NamespacedName, &kr); err != nil {
		if apierrors.IsNotFound(err) {
			r.mem.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !kr.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	now := r.Now()
	orig := kr.DeepCopy()
	s := &step{r: r, kr: &kr, now: now}
	result, err := s.run(ctx)
	if err != nil {
		r.Metrics.error("kickrequest", "Reconcile")
		return ctrl.Result{}, err
	}
	if s.deleted {
		r.mem.forget(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	if s.restartStamp != "" {
		// Restart first, then record it: the restart is what the user waits
		// for. A crash in between is safe: the workload then carries a stamp
		// newer than the change, so the next reconcile finds it fresh and
		// does not restart again; within this process the stamp memory
		// covers a cache that has not seen the patch yet.
		if err := s.handle.Restart(ctx, r.Client, s.restartStamp); err != nil {
			r.Metrics.error("kickrequest", "RestartPatch")
			return ctrl.Result{}, fmt.Errorf("restart %s%s: %w", s.targetRef(), s.through(), err)
		}
		if stamp, ok := freshness.ParseStamp(s.restartStamp); ok {
			r.mem.wroteStamp(memoryKey(&kr), stamp)
		}
		log.FromContext(ctx).Info("restarted workload", "target", s.targetRef(), "via", s.handle.Ref().String(), "stamp", s.restartStamp)
	}
	if err := r.writeStatus(ctx, orig, &kr); err != nil {
		return ctrl.Result{}, err
	}
	r.announce(ctx, orig, &kr, s)
	return result, nil
}

func (r *Reconciler) writeStatus(ctx context.Context, orig, kr *kickv1alpha1.KickRequest) error {
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

// conditionCompleted records why a request reached its terminal phase.
const conditionCompleted = "Completed"

// step is one reconcile of one request.
type step struct {
	r   *Reconciler
	kr  *kickv1alpha1.KickRequest
	now time.Time

	target       client.Object
	handle       workload.Handle
	policy       *kickv1alpha1.KickPolicy
	latest       freshness.Change
	restartStamp string
	deleted      bool
	reopened     bool
	event        *eventSpec
	// notice is an Event emitted even without a phase change.
	notice *eventSpec
}

type eventSpec struct {
	warning bool
	reason  string
	message string
}

func (s *step) targetRef() string {
	return fmt.Sprintf("%s %s/%s", s.kr.Spec.TargetRef.Kind, s.kr.Namespace, s.kr.Spec.TargetRef.Name)
}

// through names the object a redirected restart goes through, "" when the
// target is restarted itself.
func (s *step) through() string {
	if s.handle.Object == nil || !s.handle.Redirected() {
		return ""
	}
	return fmt.Sprintf(" through %s (spec.restartAt)", s.handle.Ref())
}

func (s *step) run(ctx context.Context) (ctrl.Result, error) {
	st := &s.kr.Status
	if st.Phase == "" {
		st.Phase = kickv1alpha1.PhasePending
	}
	if st.Phase.IsTerminal() {
		v, err := s.staleAgain(ctx)
		if err != nil {
			return ctrl.Result{}, err
		}
		s.answerChange(v)
		if !v.reopen {
			return s.retain(ctx)
		}
		s.reopen()
		s.reopened = true
	}
	st.ObservedChange = s.kr.Annotations[ChangeAnnotation]

	obj, err := s.r.Kinds.New(s.kr.Spec.TargetRef.Kind)
	if err != nil {
		return s.fail("UnsupportedTarget", err.Error()), nil
	}
	if err := s.r.Client.Get(ctx, client.ObjectKey{Namespace: s.kr.Namespace, Name: s.kr.Spec.TargetRef.Name}, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return s.fail("TargetNotFound", fmt.Sprintf("%s does not exist; create it, or delete this KickRequest", s.targetRef())), nil
		}
		return ctrl.Result{}, err
	}
	s.target = obj
	if s.handle, err = s.r.Kinds.Handle(ctx, s.r.Client, obj); err != nil {
		return ctrl.Result{}, err
	}

	var policies kickv1alpha1.KickPolicyList
	if err := s.r.Client.List(ctx, &policies, client.InNamespace(s.kr.Namespace)); err != nil {
		return ctrl.Result{}, err
	}
	sel := selectPolicy(policies.Items, obj)
	switch {
	case sel.Reason == kickv1alpha1.GateNotSelected:
		// A create right on KickRequests must not be a way around patch
		// rights on workloads: only policy-selected workloads restart.
		return s.fail(string(kickv1alpha1.GateNotSelected), sel.Message), nil
	case sel.Policy == nil:
		s.block(gitops.Decision{Reason: sel.Reason, Message: sel.Message})
		return ctrl.Result{}, nil
	}
	s.policy = sel.Policy
	st.PolicyRef = sel.Policy.Name
	if err := s.recordManualRequest(ctx); err != nil {
		return ctrl.Result{}, err
	}

	recorded, err := LatestChangeOf(ctx, s.r.Client, obj, sel.Policy, s.r.CSI)
	if err != nil {
		return ctrl.Result{}, err
	}
	// The records are the durable truth; the annotation carries a change
	// the cache may not show yet, or one handed over by a duplicate.
	s.latest = latest(recorded, AnnotatedChange(s.kr))
	if m := kickv1alpha1.NewNanoTime(s.latest.Latest).CeilMicro(); !s.latest.IsZero() && m.After(microTime(st.LatestObservedDependencyChange)) {
		st.LatestObservedDependencyChange = &m
	}

	if done, err := s.coalesce(ctx); done || err != nil {
		return ctrl.Result{}, err
	}
	if st.CurrentRollout != nil {
		res, done, err := s.track(ctx)
		if done || err != nil {
			return res, err
		}
	}
	return s.evaluate(ctx)
}

// reopenVerdict is staleAgain's answer: reopen, or why not.
type reopenVerdict struct {
	reopen  bool
	reason  string
	message string
}

func notReopened(reason, message string) reopenVerdict {
	return reopenVerdict{reason: reason, message: message}
}

// staleAgain decides whether a finished request must run again (model §10):
// its target is selected by a policy and its running pods do not provably
// carry the latest change. A dry run reopens only for a change newer than
// the one it already reported.
func (s *step) staleAgain(ctx context.Context) (reopenVerdict, error) {
	obj, err := s.r.Kinds.New(s.kr.Spec.TargetRef.Kind)
	if err != nil {
		return notReopened("UnsupportedTarget", err.Error()), nil
	}
	if err := s.r.Client.Get(ctx, client.ObjectKey{Namespace: s.kr.Namespace, Name: s.kr.Spec.TargetRef.Name}, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return notReopened(kickv1alpha1.ReasonTargetNotFound, s.targetRef()+" does not exist"), nil
		}
		return reopenVerdict{}, err
	}
	var policies kickv1alpha1.KickPolicyList
	if err := s.r.Client.List(ctx, &policies, client.InNamespace(s.kr.Namespace)); err != nil {
		return reopenVerdict{}, err
	}
	sel := selectPolicy(policies.Items, obj)
	if sel.Policy == nil {
		return notReopened(string(sel.Reason), sel.Message), nil
	}
	recorded, err := LatestChangeOf(ctx, s.r.Client, obj, sel.Policy, s.r.CSI)
	if err != nil {
		return reopenVerdict{}, err
	}
	reported := microTime(s.kr.Status.LatestObservedDependencyChange)
	changed := latest(recorded, AnnotatedChange(s.kr))
	if s.kr.Status.Phase == kickv1alpha1.PhaseDryRun && !changed.Latest.After(reported) {
		return notReopened(kickv1alpha1.ReasonNoNewerChange, "the dry run already reported the latest change"), nil
	}
	h, err := s.r.Kinds.Handle(ctx, s.r.Client, obj)
	if err != nil {
		return reopenVerdict{}, err
	}
	rollout, err := h.Inspect(ctx, s.r.Client)
	if err != nil {
		return reopenVerdict{}, err
	}
	if alreadyCarried(changed, rollout) {
		return notReopened(kickv1alpha1.ReasonAlreadyCarried, fmt.Sprintf("nothing to restart: %s", freshness.Explain(changed, rollout))), nil
	}
	return reopenVerdict{reopen: true, reason: kickv1alpha1.ReasonNewChange, message: "a newer change reopened the request"}, nil
}

// answerChange records, once per value of the change annotation, whether
// that change reopened the finished request, so whoever wrote it (kubectl
// kick restart --wait) gets an answer even when nothing is restarted.
func (s *step) answerChange(v reopenVerdict) {
	value := s.kr.Annotations[ChangeAnnotation]
	if value == "" || value == s.kr.Status.ObservedChange {
		return
	}
	s.kr.Status.ObservedChange = value
	s.condition(kickv1alpha1.ConditionReopened, v.reopen, v.reason, v.message)
	if !v.reopen {
		s.notice = &eventSpec{reason: "NotReopened", message: fmt.Sprintf("%s was not restarted again: %s", s.targetRef(), v.message)}
	}
}

// recordManualRequest dates, once, the change a request from a person or
// CI stands for: the moment KICK first saw it (after it was created, on
// KICK's own clock), kept in the change annotation so it survives restarts.
// The target then restarts unless a rollout started after that moment.
func (s *step) recordManualRequest(ctx context.Context) error {
	if !isManual(s.kr) || !AnnotatedChange(s.kr).IsZero() {
		return nil
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, ChangeAnnotation, formatChange(freshness.At(s.now)))
	updated := s.kr.DeepCopy()
	if err := s.r.Client.Patch(ctx, updated, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		return fmt.Errorf("record when the request was seen: %w", err)
	}
	s.kr.Annotations = updated.Annotations
	return nil
}

// reopen starts a new cycle for a finished request (model §10): back to
// Pending with no rollout marker, so the next restart is a fresh one.
func (s *step) reopen() {
	st := &s.kr.Status
	st.Phase = kickv1alpha1.PhasePending
	st.CurrentRollout = nil
	st.CompletionTime = nil
}

// retain deletes a finished request once --request-retention has passed.
func (s *step) retain(ctx context.Context) (ctrl.Result, error) {
	done := s.kr.CreationTimestamp.Time
	if s.kr.Status.CompletionTime != nil {
		done = s.kr.Status.CompletionTime.Time
	}
	left := done.Add(s.r.Retention).Sub(s.now)
	if left > 0 {
		return ctrl.Result{RequeueAfter: left}, nil
	}
	s.deleted = true
	if err := s.r.Client.Delete(ctx, s.kr, client.Preconditions{UID: &s.kr.UID}); err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, nil
}

// coalesce keeps at most one open request per target (invariant I4): a
// younger duplicate hands its change time to the oldest open one and ends.
func (s *step) coalesce(ctx context.Context) (bool, error) {
	var list kickv1alpha1.KickRequestList
	key := workload.TargetKey(s.kr.Spec.TargetRef.Kind, s.kr.Spec.TargetRef.Name)
	if err := s.r.Client.List(ctx, &list, client.InNamespace(s.kr.Namespace), client.MatchingFields{TargetIndex: key}); err != nil {
		return false, err
	}
	var open []kickv1alpha1.KickRequest
	for _, other := range list.Items {
		if other.UID == s.kr.UID || other.Status.Phase.IsTerminal() || !other.DeletionTimestamp.IsZero() {
			continue
		}
		open = append(open, other)
	}
	if len(open) == 0 {
		return false, nil
	}
	sort.Slice(open, func(i, j int) bool { return older(&open[i], &open[j]) })
	first := &open[0]
	if older(s.kr, first) {
		return false, nil
	}
	if newerChange(s.latest, AnnotatedChange(first)) {
		patch := client.MergeFrom(first.DeepCopy())
		if first.Annotations == nil {
			first.Annotations = map[string]string{}
		}
		first.Annotations[ChangeAnnotation] = formatChange(latest(s.latest, AnnotatedChange(first)))
		if err := s.r.Client.Patch(ctx, first, patch); err != nil && !apierrors.IsNotFound(err) {
			return false, err
		}
	}
	s.finish(kickv1alpha1.PhaseNoLongerRequired, "Coalesced",
		fmt.Sprintf("KickRequest %s already handles %s; this request's change was handed to it", first.Name, s.targetRef()))
	return true, nil
}

func older(a, b *kickv1alpha1.KickRequest) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name
}

// track follows the rollout this request started. It reports done when
// the step is decided; otherwise the restart must be evaluated again (a
// change arrived while the rollout ran).
func (s *step) track(ctx context.Context) (ctrl.Result, bool, error) {
	st := &s.kr.Status
	marker := st.CurrentRollout
	mine, _ := freshness.ParseStamp(marker.RestartedAt)
	current, ok := s.handle.Current()
	if !ok || current.Before(mine) {
		// Our patch is not visible yet (cache lag) or was never applied (a
		// crash after the status write): apply the same stamp again, which
		// changes nothing if it is already there.
		s.restartStamp = marker.RestartedAt
		return ctrl.Result{RequeueAfter: time.Second}, true, nil
	}
	rollout, err := s.handle.Inspect(ctx, s.r.Client)
	if err != nil {
		return ctrl.Result{}, true, err
	}
	started := mine
	if !rollout.Complete {
		s.progress(orDefault(rollout.Reason, freshness.RolloutInProgress), rollout.Message)
		elapsed := s.now.Sub(started)
		if elapsed >= s.r.RolloutTimeout {
			s.r.Metrics.restart(st.Provider, "failed")
			return s.fail("RolloutTimeout", fmt.Sprintf("the rollout of %s did not complete within %s: %s", s.targetRef(), s.r.RolloutTimeout, rollout.Message)), true, nil
		}
		st.Phase = kickv1alpha1.PhaseExecuting
		return ctrl.Result{RequeueAfter: s.r.RolloutTimeout - elapsed}, true, nil
	}
	s.condition(kickv1alpha1.ConditionRolloutComplete, true, "Complete", "the rollout completed")
	if marker.ReplicaSet == "" && rollout.ReplicaSet != "" {
		marker.ReplicaSet = rollout.ReplicaSet
	}
	if freshness.Decide(s.latest, rollout) == freshness.Stale {
		// A relevant change arrived while our rollout was in flight: it is
		// newer than our stamp, so restart again (minInterval still applies).
		st.CurrentRollout = nil
		return ctrl.Result{}, false, nil
	}
	s.r.Metrics.restart(st.Provider, "succeeded")
	s.finish(kickv1alpha1.PhaseSucceeded, "RestartCompleted", fmt.Sprintf("%s rolled out with restart stamp %s", s.targetRef(), marker.RestartedAt))
	return ctrl.Result{RequeueAfter: s.r.Retention}, true, nil
}

// progress records an unfinished rollout in the RolloutComplete condition.
// The message (replica counts) is refreshed only when the reason changes:
// rewriting the status on every step of every rollout would double KICK's
// writes during a burst of restarts for detail kubectl rollout status gives.
// The restart itself already wrote RolloutInProgress, so an ordinary
// rollout costs no write between the restart and its completion; unusual
// reasons (Paused, ProgressDeadlineExceeded, ...) show at once.
func (s *step) progress(reason, message string) {
	if c := meta.FindStatusCondition(s.kr.Status.Conditions, kickv1alpha1.ConditionRolloutComplete); c != nil &&
		c.Status == metav1.ConditionFalse && c.ObservedGeneration == s.kr.Generation &&
		(c.Reason == reason || ordinaryProgress(c.Reason) && ordinaryProgress(reason)) {
		return
	}
	s.condition(kickv1alpha1.ConditionRolloutComplete, false, reason, message)
}

// ordinaryProgress reports whether a rollout reason is one every rollout
// passes through (its controller has not seen the restart yet, or pods are
// being replaced), as opposed to one a person may have to act on.
func ordinaryProgress(reason string) bool {
	return reason == freshness.RolloutInProgress || reason == freshness.GenerationNotObserved
}

// evaluate runs the gate and the freshness check and restarts when both
// allow it.
func (s *step) evaluate(ctx context.Context) (ctrl.Result, error) {
	st := &s.kr.Status
	d := s.gate(ctx)
	st.Provider = d.Provider
	st.Owner = d.Owner
	if !d.Allowed() {
		s.block(d)
		if d.RequeueAt.IsZero() {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{RequeueAfter: max(d.RequeueAt.Sub(s.now), time.Second)}, nil
	}
	s.setGate(d)

	rollout, err := s.handle.Inspect(ctx, s.r.Client)
	if err != nil {
		return ctrl.Result{}, err
	}
	switch freshness.Decide(s.latest, rollout) {
	case freshness.InProgress:
		st.Phase = kickv1alpha1.PhaseWaitingForRollout
		s.condition(kickv1alpha1.ConditionRolloutComplete, false, orDefault(rollout.Reason, freshness.RolloutInProgress), rollout.Message)
		s.emit(false, "WaitingForRollout", fmt.Sprintf("waiting for the current rollout of %s to finish before deciding: %s", s.targetRef(), rollout.Message))
		return ctrl.Result{RequeueAfter: time.Minute}, nil
	case freshness.Fresh:
		s.condition(kickv1alpha1.ConditionStale, false, kickv1alpha1.ReasonUpToDate, freshness.Explain(s.latest, rollout))
		s.finish(kickv1alpha1.PhaseNoLongerRequired, kickv1alpha1.ReasonUpToDate, freshness.Explain(s.latest, rollout))
		return ctrl.Result{RequeueAfter: s.r.Retention}, nil
	}
	s.condition(kickv1alpha1.ConditionStale, true, kickv1alpha1.ReasonDependencyNewer, freshness.Explain(s.latest, rollout))
	if s.policy.Spec.DryRun {
		s.finish(kickv1alpha1.PhaseDryRun, "DryRun", fmt.Sprintf("dry run: would restart %s now (%s)", s.targetRef(), freshness.Explain(s.latest, rollout)))
		return ctrl.Result{RequeueAfter: s.r.Retention}, nil
	}

	cachedStamp, _ := s.handle.Current()
	if pending := s.r.mem.pendingStamp(memoryKey(s.kr), cachedStamp); !pending.IsZero() && !freshness.Newer(s.latest, pending) {
		// This process already restarted the workload for this change; the
		// cache has not caught up yet. Follow that rollout instead.
		started := metav1.NewMicroTime(pending)
		_, value := s.handle.Stamp(pending, time.Time{})
		st.CurrentRollout = &kickv1alpha1.RolloutMarker{StartedAt: &started, RestartedAt: value}
		st.Phase = kickv1alpha1.PhaseExecuting
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	stamp, value := s.handle.Stamp(s.now, s.latest.Latest)
	s.restartStamp = value
	startedAt := metav1.NewMicroTime(stamp)
	st.CurrentRollout = &kickv1alpha1.RolloutMarker{StartedAt: &startedAt, RestartedAt: s.restartStamp}
	st.LastRestartTime = &startedAt
	st.RestartCount++
	st.Phase = kickv1alpha1.PhaseExecuting
	s.condition(kickv1alpha1.ConditionRolloutComplete, false, freshness.RolloutInProgress, "restarted; waiting for the new pods to roll out")
	s.emit(false, "KickStarted", fmt.Sprintf("restarting %s%s: %s", s.targetRef(), s.through(), freshness.Explain(s.latest, rollout)))
	s.r.Metrics.restart(st.Provider, "started")
	s.r.Metrics.observeLatency(s.now.Sub(s.latest.Latest))
	return ctrl.Result{RequeueAfter: s.r.RolloutTimeout}, nil
}

// gate evaluates, in order: policy suspension, native windows, the GitOps
// stage and restart.minInterval.
func (s *step) gate(ctx context.Context) gitops.Decision {
	p := s.policy
	if p.Spec.Suspend {
		return gitops.Decision{Reason: kickv1alpha1.GateSuspended, Message: fmt.Sprintf("KickPolicy %s is suspended", p.Name)}
	}
	if p.Spec.Schedule != nil && len(p.Spec.Schedule.Windows) > 0 {
		sched, err := schedule.Compile(p.Spec.Schedule.Windows)
		if err != nil {
			return gitops.Decision{Reason: kickv1alpha1.GateConfigurationError, Message: fmt.Sprintf("KickPolicy %s: %v", p.Name, err)}
		}
		if d := sched.Decide(s.now); !d.Open {
			return gitops.Decision{Reason: kickv1alpha1.GateOutsideSchedule, Message: d.Message, RequeueAt: d.Next}
		}
	}
	d := s.r.GitOps.Decide(ctx, s.target, p, s.now)
	if !d.Allowed() {
		return d
	}
	if tmpl, ok := s.handle.Current(); ok {
		if next := tmpl.Add(p.Spec.EffectiveMinInterval()); s.now.Before(next) {
			return gitops.Decision{Reason: kickv1alpha1.GateMinIntervalNotElapsed, Provider: d.Provider, Owner: d.Owner, RequeueAt: next,
				Message: fmt.Sprintf("%s was restarted at %s; restart.minInterval %s allows the next restart at %s",
					s.targetRef(), freshness.FormatStamp(tmpl), p.Spec.EffectiveMinInterval(), next.UTC().Format(time.RFC3339))}
		}
	}
	return d
}

func (s *step) setGate(d gitops.Decision) {
	g := &kickv1alpha1.GateStatus{Reason: d.Reason, Message: d.Message}
	if !d.RequeueAt.IsZero() {
		t := metav1.NewTime(d.RequeueAt)
		g.RequeueAt = &t
	}
	if prev := meta.FindStatusCondition(s.kr.Status.Conditions, kickv1alpha1.ConditionGateAllowed); prev != nil &&
		prev.Status == metav1.ConditionFalse && d.Allowed() {
		s.r.Metrics.observeGateWait(s.now.Sub(prev.LastTransitionTime.Time))
	}
	if old := s.kr.Status.Gate; old == nil || old.Reason != g.Reason || old.Message != g.Message || !timesEqual(old.RequeueAt, g.RequeueAt) {
		now := metav1.NewTime(s.now)
		g.LastEvaluated = &now
	} else {
		g.LastEvaluated = old.LastEvaluated
	}
	s.kr.Status.Gate = g
	s.condition(kickv1alpha1.ConditionGateAllowed, d.Allowed(), string(d.Reason), d.Message)
}

func (s *step) block(d gitops.Decision) {
	s.setGate(d)
	phase := d.Reason.WaitingPhase()
	if s.kr.Status.Phase != phase {
		s.emit(false, blockEventReason(d.Reason), d.Message)
	}
	s.kr.Status.Phase = phase
}

func blockEventReason(r kickv1alpha1.GateReason) string {
	switch r {
	case kickv1alpha1.GateOutsideSchedule:
		return "WaitingForSchedule"
	case kickv1alpha1.GateOwnerUnknown:
		return "OwnerUnknown"
	case kickv1alpha1.GateAmbiguousOwner:
		return "OwnerAmbiguous"
	case kickv1alpha1.GateOwnerOutOfSync, kickv1alpha1.GateOwnerReconciling, kickv1alpha1.GateOwnerSuspended:
		return "WaitingForGitOpsSync"
	}
	return "WaitingForGate"
}

func (s *step) fail(reason, message string) ctrl.Result {
	s.finish(kickv1alpha1.PhaseFailed, reason, message)
	return ctrl.Result{RequeueAfter: s.r.Retention}
}

// finish moves the request to a terminal phase.
func (s *step) finish(phase kickv1alpha1.KickRequestPhase, reason, message string) {
	st := &s.kr.Status
	st.Phase = phase
	st.CurrentRollout = nil
	now := metav1.NewTime(s.now)
	st.CompletionTime = &now
	if st.Gate == nil {
		st.Gate = &kickv1alpha1.GateStatus{}
	}
	s.condition(conditionCompleted, true, reason, message)
	s.emit(phase == kickv1alpha1.PhaseFailed, terminalEventReason(phase), message)
}

func terminalEventReason(p kickv1alpha1.KickRequestPhase) string {
	switch p {
	case kickv1alpha1.PhaseSucceeded:
		return "KickSucceeded"
	case kickv1alpha1.PhaseNoLongerRequired:
		return "KickNoLongerRequired"
	case kickv1alpha1.PhaseDryRun:
		return "KickDryRun"
	}
	return "KickFailed"
}

func (s *step) emit(warning bool, reason, message string) {
	s.event = &eventSpec{warning: warning, reason: reason, message: message}
}

func (s *step) condition(typ string, status bool, reason, message string) {
	c := metav1.Condition{Type: typ, Status: metav1.ConditionFalse, Reason: reason, Message: message, ObservedGeneration: s.kr.Generation}
	if status {
		c.Status = metav1.ConditionTrue
	}
	if c.Reason == "" {
		c.Reason = "Unknown"
	}
	meta.SetStatusCondition(&s.kr.Status.Conditions, c)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func microTime(t *metav1.MicroTime) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.Time
}

func timesEqual(a, b *metav1.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(b)
}
