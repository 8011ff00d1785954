package request

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/assess"
	"github.com/kick-operator/kick/restart/freshness"
	"github.com/kick-operator/kick/restart/workload"
)

// A request's life around the restart: reopening, coalescing duplicates and
// deleting it after retention.

// reopen starts a new cycle for a finished request (model §10): the
// finished cycle goes into the history, and the request goes back to
// Pending with no rollout marker, so the next restart is a fresh one.
func (s *step) reopen() {
	st := &s.kr.Status
	st.ArchiveCycle()
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
	if s.holdsHalt() && haltHeld(ctx, s.r.Client, s.r.Kinds, s.kr) > 0 {
		// The halt is this request: deleting it would release the restarts
		// it holds without anyone deciding to.
		return ctrl.Result{RequeueAfter: s.r.Retention}, nil
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
	key := workload.TargetKey(s.kr.Spec.TargetRef.Kind, s.kr.Spec.TargetRef.Name)
	requests, err := requestsOf(ctx, s.r.Client, s.kr.Namespace, key)
	if err != nil {
		return false, err
	}
	var first *kickv1alpha1.KickRequest
	for _, other := range requests {
		if other.UID == s.kr.UID || other.Status.Phase.IsTerminal() || !other.DeletionTimestamp.IsZero() {
			continue
		}
		if first == nil || assess.Older(other, first) {
			first = other
		}
	}
	if first == nil || assess.Older(s.kr, first) {
		return false, nil
	}
	if known := assess.AnnotatedChange(first); assess.Adds(s.a.Latest, known) {
		patch := client.MergeFrom(first)
		first = first.DeepCopy() // the cache's object stays as it is
		if first.Annotations == nil {
			first.Annotations = map[string]string{}
		}
		first.Annotations[kickv1alpha1.ChangeAnnotation] = assess.FormatChange(s.a.Latest.Max(known))
		if err := s.r.Client.Patch(ctx, first, patch); err != nil && !apierrors.IsNotFound(err) {
			return false, err
		}
	}
	s.finish(kickv1alpha1.PhaseNoLongerRequired, kickv1alpha1.ReasonCoalesced,
		fmt.Sprintf("KickRequest %s already handles %s; this request's change was handed to it", first.Name, s.targetRef()))
	return true, nil
}

// executingGrace is how long a rollout the driver started may run before
// its request records phase Executing; claimPoll is how soon a request
// looks again while the driver's patch is in flight.
//
// In a burst (a request put off its first write while at least
// busyRollouts requests of this manager did) the grace is busyGrace: every
// Executing write and its Event would then compete with the rollouts for
// the API server, and a rollout that ends within the grace takes its
// request from Pending to its end in one write. busyGrace is long enough
// for the rollouts of a large fan-out on a busy control plane (500
// Deployments took about 90 s to roll out on the benchmark's 2 cores, and
// a minute cost 195 of them an Executing write and two Events): the
// request is woken by its workload's events meanwhile, so it records the
// end (or a failure) as soon as it happens, not at the grace's end. The
// restart itself is durable either way: the workload carries the stamp
// and the request names it.
const (
	executingGrace = 5 * time.Second
	busyGrace      = 5 * time.Minute
	busyRollouts   = 10
	claimPoll      = 50 * time.Millisecond
)

// followDriverRestart adopts the restart the driver applied for this
// request (RestartAnnotation) as the request's own rollout, when the
// workload carries that stamp. It returns a wait while the driver's patch
// is still in flight in this process. When the workload does not carry the
// stamp (the manager stopped before the patch, or the patch was refused),
// nothing is adopted and the request restarts the usual way.
func (s *step) followDriverRestart() time.Duration {
	st := &s.kr.Status
	stamp, ok := driverRestart(s.kr)
	if !ok || st.CurrentRollout != nil {
		return 0
	}
	value := s.kr.Annotations[kickv1alpha1.RestartAnnotation]
	if stamp.Before(s.a.Latest.Latest) {
		return 0 // it does not cover the change this request answers now
	}
	switch s.driverRestartState(stamp) {
	case restartInFlight:
		return claimPoll
	case restartNotApplied:
		return 0
	}
	d := s.a.Gate.Decision()
	st.Provider, st.Owner = d.Provider, d.Owner
	s.setGate(d, "")
	started := metav1.NewMicroTime(stamp)
	st.CurrentRollout = &kickv1alpha1.RolloutMarker{StartedAt: &started, RestartedAt: value}
	st.RestartedFor = restartedFor(&s.a, time.Time{})
	st.LastRestartTime = &started
	st.RestartCount++
	st.Phase = kickv1alpha1.PhaseExecuting
	s.condition(kickv1alpha1.ConditionStale, true, kickv1alpha1.ReasonDependencyNewer, "restarted for a dependency change")
	s.condition(kickv1alpha1.ConditionRolloutComplete, false, freshness.RolloutInProgress, "restarted; waiting for the new pods to roll out")
	s.emit(false, "KickStarted", fmt.Sprintf("restarting %s%s for a dependency change", s.targetRef(), s.through()))
	s.adopted = true
	return 0
}

// deferStatus returns how long this reconcile may put off its status
// write (0: not at all): it only adopted the driver's restart, whose
// rollout is younger than the grace (executingGrace, or busyGrace in a
// burst), and nothing of it is recorded yet. The workload's rollout
// progress wakes the request meanwhile.
func (s *step) deferStatus(orig *kickv1alpha1.KickRequest) time.Duration {
	st := &s.kr.Status
	key := client.ObjectKeyFromObject(s.kr)
	if !s.adopted || st.Phase != kickv1alpha1.PhaseExecuting || orig.Status.Phase == kickv1alpha1.PhaseExecuting || st.CurrentRollout == nil ||
		s.r.Budget.Applies(s.a.Selection.Policy) {
		// (A budget counts restarts from what their requests record: once
		// the policy has a cap, or the cluster one, the driver's restarts
		// still in flight are recorded at their next look.)
		s.r.putOff(key, false)
		return 0
	}
	grace := executingGrace
	if s.r.putOff(key, true) {
		grace = busyGrace
	}
	wait := max(grace-s.now.Sub(st.CurrentRollout.StartedAt.Time), 0)
	if wait == 0 {
		s.r.putOff(key, false)
	}
	return wait
}

// owedByDriver reports whether this process's driver applied a restart of
// the request's workload less than driverLookWait ago and still owes the
// request naming it (see Driver.recordRestart).
func (s *step) owedByDriver() bool {
	o, ok := s.r.mem.owed(memoryKey(s.kr))
	if !ok {
		return false
	}
	stamp, ok := freshness.ParseStamp(o.value)
	return ok && s.now.Sub(stamp) < driverLookWait
}

// driverRestart returns the stamp the driver applied for the request's
// change, when the request has not recorded that restart yet.
func driverRestart(kr *kickv1alpha1.KickRequest) (time.Time, bool) {
	value := kr.Annotations[kickv1alpha1.RestartAnnotation]
	if m := kr.Status.CurrentRollout; m != nil && m.RestartedAt == value {
		return time.Time{}, false // the rollout it follows, or followed
	}
	stamp, ok := freshness.ParseStamp(value)
	// lastRestartTime keeps microseconds; the stamp has nanoseconds.
	if !ok || (kr.Status.LastRestartTime != nil && !stamp.Truncate(time.Microsecond).After(kr.Status.LastRestartTime.Time)) {
		return time.Time{}, false // none, unreadable, or already recorded
	}
	return stamp, true
}

// A driver restart named by a request is in flight (this process is
// patching), applied (the workload carries the stamp, or this process
// wrote it and the cache lags), or not applied (refused, or the manager
// stopped before the patch).
type driverRestartState int

const (
	restartNotApplied driverRestartState = iota
	restartInFlight
	restartApplied
)

func (s *step) driverRestartState(stamp time.Time) driverRestartState {
	current, _ := s.handle.Current()
	return restartStateOf(s.r.mem, memoryKey(s.kr), stamp, current)
}

// restartStateOf judges a driver stamp from this process's memory and the
// stamp the cached workload carries (current). A stamp whose conditional
// patch was refused stays on the request without having restarted anything.
func restartStateOf(mem *memory, target string, stamp, current time.Time) driverRestartState {
	if claimed, ok := mem.claimed(target); ok && claimed.Equal(stamp) {
		return restartInFlight
	}
	if current.Equal(stamp) || mem.pendingStamp(target, current).Equal(stamp) {
		return restartApplied
	}
	return restartNotApplied
}
