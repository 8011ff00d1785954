package request

import (
	"errors"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/assess"
	"github.com/kick-operator/kick/restart/freshness"
	"github.com/kick-operator/kick/restart/workload"
	"github.com/kick-operator/kick/router"
)

// youngStep is a reconcile of request name that adopted a driver restart
// started age ago and has recorded nothing of it yet.
func youngStep(r *Reconciler, name string, now time.Time, age time.Duration) (*step, *kickv1alpha1.KickRequest) {
	started := metav1.NewMicroTime(now.Add(-age))
	kr := &kickv1alpha1.KickRequest{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
	orig := kr.DeepCopy()
	orig.Status.Phase = kickv1alpha1.PhasePending
	kr.Status.Phase = kickv1alpha1.PhaseExecuting
	kr.Status.CurrentRollout = &kickv1alpha1.RolloutMarker{StartedAt: &started}
	return &step{r: r, kr: kr, now: now, adopted: true}, orig
}

func TestABurstPutsOffTheFirstStatusWrite(t *testing.T) {
	r := &Reconciler{mem: newMemory()}
	now := time.Unix(5000, 0)

	// Alone, a young rollout is recorded once it is executingGrace old.
	s, orig := youngStep(r, "r0", now, time.Second)
	if got := s.deferStatus(orig); got != executingGrace-time.Second {
		t.Fatalf("one young rollout: put off for %v, want %v", got, executingGrace-time.Second)
	}
	s, orig = youngStep(r, "r0", now, executingGrace)
	if got := s.deferStatus(orig); got != 0 {
		t.Fatalf("a rollout as old as the grace is put off for %v", got)
	}
	if n, _ := r.mem.putOff(types.NamespacedName{}, false); n != 0 {
		t.Fatalf("%d requests still counted after the only one was recorded", n)
	}

	// busyRollouts of them at once: each waits for busyGrace, also one that
	// waited out executingGrace already.
	for i := range busyRollouts - 1 {
		s, orig := youngStep(r, fmt.Sprintf("r%d", i), now, time.Second)
		if got := s.deferStatus(orig); got != executingGrace-time.Second {
			t.Fatalf("request %d of a small group: put off for %v", i, got)
		}
	}
	s, orig = youngStep(r, "r-last", now, time.Second)
	if got := s.deferStatus(orig); got != busyGrace-time.Second {
		t.Fatalf("the request that makes a burst: put off for %v, want %v", got, busyGrace-time.Second)
	}
	s, orig = youngStep(r, "r0", now, 2*executingGrace)
	if got := s.deferStatus(orig); got != busyGrace-2*executingGrace {
		t.Fatalf("in a burst, a rollout past executingGrace: put off for %v, want %v", got, busyGrace-2*executingGrace)
	}
	s, orig = youngStep(r, "r1", now, busyGrace)
	if got := s.deferStatus(orig); got != 0 {
		t.Fatalf("in a burst, a rollout as old as busyGrace is put off for %v", got)
	}

	// A request that has something to record, or was deleted, no longer
	// counts. The rest stay in the burst until they write; a request that
	// comes after it has the lone grace again.
	s, orig = youngStep(r, "r2", now, 2*executingGrace)
	s.kr.Status.Phase = kickv1alpha1.PhaseSucceeded
	if got := s.deferStatus(orig); got != 0 {
		t.Fatalf("a finished request is put off for %v", got)
	}
	r.putOff(types.NamespacedName{Namespace: "ns", Name: "r3"}, false)
	s, orig = youngStep(r, "r0", now, 2*executingGrace)
	if got := s.deferStatus(orig); got != busyGrace-2*executingGrace {
		t.Fatalf("a request of the burst, after others wrote: put off for %v, want %v", got, busyGrace-2*executingGrace)
	}
	s, orig = youngStep(r, "r-new", now, time.Second)
	if got := s.deferStatus(orig); got != executingGrace-time.Second {
		t.Fatalf("a request after the burst: put off for %v, want %v", got, executingGrace-time.Second)
	}

	// Nothing adopted, or already recorded as Executing: nothing to put off.
	s, orig = youngStep(r, "r4", now, time.Second)
	s.adopted = false
	if got := s.deferStatus(orig); got != 0 {
		t.Fatalf("a request that adopted nothing is put off for %v", got)
	}
	s, orig = youngStep(r, "r5", now, time.Second)
	orig.Status.Phase = kickv1alpha1.PhaseExecuting
	if got := s.deferStatus(orig); got != 0 {
		t.Fatalf("a request already recorded Executing is put off for %v", got)
	}
}

func TestRefusedWritesAreLookedAtAgain(t *testing.T) {
	gr := schema.GroupResource{Group: kickv1alpha1.GroupVersion.Group, Resource: "kickrequests"}
	cases := []struct {
		err  error
		want bool
	}{
		{errLookAgain, true},
		{fmt.Errorf("reopen: %w", apierrors.NewConflict(gr, "deployment-web", errors.New("the object has been modified"))), true},
		{apierrors.NewNotFound(gr, "deployment-web"), false},
		{apierrors.NewForbidden(gr, "deployment-web", errors.New("no")), false},
		{errors.New("connection refused"), false},
	}
	for _, c := range cases {
		if got := refused(c.err); got != c.want {
			t.Errorf("refused(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// A request that would restart its workload for a change the driver was
// handed and has not looked at yet leaves the restart to the driver (whose
// look reopens the request with the stamp), for driverLookWait at most.
func TestRequestLeavesAHandedChangeToTheDriver(t *testing.T) {
	now := time.Date(2026, 12, 2, 17, 0, 0, 0, time.UTC)
	kind, _ := workload.Builtin().Lookup(kickv1alpha1.TargetDeployment)
	k := WorkloadKey{Kind: kickv1alpha1.TargetDeployment, Namespace: "shop", Name: "web"}
	handed := &handedChanges{}
	r := &Reconciler{mem: newMemory(), driverHanded: handed}
	stale := func(at time.Time) *step {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}}
		kr := &kickv1alpha1.KickRequest{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "deployment-web"},
			Spec: kickv1alpha1.KickRequestSpec{TargetRef: kickv1alpha1.TargetRef{Kind: kickv1alpha1.TargetDeployment, Name: "web"}}}
		return &step{r: r, kr: kr, now: at, handle: workload.Handle{Object: d, Kind: kind, Target: d},
			a: assess.Assessment{Verdict: assess.Stale, Latest: freshness.At(now.Add(-time.Second)), Gate: assess.Gate{Allowed: true, Reason: kickv1alpha1.GateAllowed}}}
	}

	handed.add(k, freshness.At(now.Add(-time.Second)), router.ObjectRef{Kind: "Secret", Name: "db"}, now, false)
	s := stale(now.Add(time.Second))
	if res, _ := s.evaluate(t.Context()); !s.waitForDriver || s.restartStamp != "" || res.RequeueAfter != driverLookPoll {
		t.Fatalf("with the change in the driver's hands: wait %v, restart %q, requeue %v", s.waitForDriver, s.restartStamp, res.RequeueAfter)
	}
	// A driver that finishes no look holds the request driverLookWait at most.
	s = stale(now.Add(driverLookWait))
	if _, _ = s.evaluate(t.Context()); s.waitForDriver || s.restartStamp == "" {
		t.Fatalf("after driverLookWait without a look: wait %v, restart %q", s.waitForDriver, s.restartStamp)
	}
	// A driver working through a burst (finishing looks at other
	// workloads) is still coming, up to driverLookMax after the handoff.
	handed.looked(now.Add(driverLookWait - time.Second))
	s = stale(now.Add(driverLookWait + time.Second))
	if res, _ := s.evaluate(t.Context()); !s.waitForDriver || s.restartStamp != "" || res.RequeueAfter != driverLookPoll {
		t.Fatalf("with the driver busy: wait %v, restart %q, requeue %v", s.waitForDriver, s.restartStamp, res.RequeueAfter)
	}
	handed.looked(now.Add(driverLookMax))
	s = stale(now.Add(driverLookMax))
	if _, _ = s.evaluate(t.Context()); s.waitForDriver || s.restartStamp == "" {
		t.Fatalf("after driverLookMax: wait %v, restart %q", s.waitForDriver, s.restartStamp)
	}
	// Once the driver looked, the request decides for itself.
	handed.answered(k, handed.get(k))
	s = stale(now.Add(time.Second))
	if _, _ = s.evaluate(t.Context()); s.waitForDriver || s.restartStamp == "" {
		t.Fatalf("after the driver's look: wait %v, restart %q", s.waitForDriver, s.restartStamp)
	}
	// Another workload's handed change is not this request's.
	handed.add(WorkloadKey{Kind: kickv1alpha1.TargetDeployment, Namespace: "shop", Name: "api"}, freshness.At(now), router.ObjectRef{}, now, false)
	s = stale(now.Add(time.Second))
	if _, _ = s.evaluate(t.Context()); s.waitForDriver {
		t.Fatal("waits for the driver's look at another workload")
	}
}

// A request that finds the workload restarted by this process for its
// change before the cache shows it (the driver's restart, whose reopen of
// the request has not arrived) follows that rollout and counts it once.
func TestFollowingThisProcesssRestartCountsIt(t *testing.T) {
	now := time.Date(2026, 12, 3, 1, 0, 0, 0, time.UTC)
	kind, _ := workload.Builtin().Lookup(kickv1alpha1.TargetDeployment)
	r := &Reconciler{mem: newMemory()}
	earlier := metav1.NewMicroTime(now.Add(-time.Hour))
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}}
	kr := &kickv1alpha1.KickRequest{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "deployment-web"},
		Spec:   kickv1alpha1.KickRequestSpec{TargetRef: kickv1alpha1.TargetRef{Kind: kickv1alpha1.TargetDeployment, Name: "web"}},
		Status: kickv1alpha1.KickRequestStatus{Phase: kickv1alpha1.PhaseSucceeded, RestartCount: 1, LastRestartTime: &earlier}}
	stamp := now.Add(-time.Second)
	r.mem.wroteStamp(memoryKey(kr), stamp)
	s := &step{r: r, kr: kr, now: now, handle: workload.Handle{Object: d, Kind: kind, Target: d},
		a: assess.Assessment{Verdict: assess.Stale, Latest: freshness.At(now.Add(-2 * time.Second)), Gate: assess.Gate{Allowed: true, Reason: kickv1alpha1.GateAllowed}}}
	_, _ = s.evaluate(t.Context())
	st := kr.Status
	if s.restartStamp != "" || st.Phase != kickv1alpha1.PhaseExecuting || st.CurrentRollout == nil || !st.CurrentRollout.StartedAt.Time.Equal(stamp) {
		t.Fatalf("did not follow the restart of this process: restart %q, status %+v", s.restartStamp, st)
	}
	if st.RestartCount != 2 || !st.LastRestartTime.Time.Equal(stamp) {
		t.Fatalf("restart count %d, last restart %v; want 2 and %v", st.RestartCount, st.LastRestartTime, stamp)
	}
	// Followed again (its status write was refused and the cache is still
	// behind), the same restart is not counted twice.
	kr.Status.CurrentRollout = nil
	_, _ = s.evaluate(t.Context())
	if kr.Status.RestartCount != 2 {
		t.Fatalf("the same restart counted again: %d", kr.Status.RestartCount)
	}
}
