package request

import (
	"context"
	"errors"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/assess"
	"github.com/kick-operator/kick/restart/budget"
	"github.com/kick-operator/kick/restart/freshness"
	"github.com/kick-operator/kick/restart/workload"
)

// A workload's events wake its open requests, and a finished one that
// names a restart of the driver it has not recorded yet (reopened by the
// driver, its status write put off): it follows that rollout, so it
// records the rollout's end when it happens instead of at the grace's
// end. A finished request with nothing unrecorded stays asleep.
func TestWorkloadEventsWakeAPutOffRequest(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := kickv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 12, 5, 1, 0, 0, 0, time.UTC)
	earlier := metav1.NewMicroTime(t0.Add(-time.Hour))
	request := func(name, target string, phase kickv1alpha1.KickRequestPhase, stamp time.Time) *kickv1alpha1.KickRequest {
		kr := &kickv1alpha1.KickRequest{
			ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, Annotations: map[string]string{}},
			Spec:       kickv1alpha1.KickRequestSpec{TargetRef: kickv1alpha1.TargetRef{Kind: kickv1alpha1.TargetDeployment, Name: target}},
			Status:     kickv1alpha1.KickRequestStatus{Phase: phase, LastRestartTime: &earlier},
		}
		if !stamp.IsZero() {
			kr.Annotations[kickv1alpha1.RestartAnnotation] = freshness.FormatStamp(stamp)
		}
		return kr
	}
	c := fake.NewClientBuilder().WithScheme(scheme).
		WithIndex(&kickv1alpha1.KickRequest{}, TargetIndex, func(obj client.Object) []string {
			kr := obj.(*kickv1alpha1.KickRequest)
			return []string{workload.TargetKey(kr.Spec.TargetRef.Kind, kr.Spec.TargetRef.Name)}
		}).
		WithObjects(
			request("open", "web", kickv1alpha1.PhaseExecuting, time.Time{}),
			request("reopened", "api", kickv1alpha1.PhaseSucceeded, t0),
			request("done", "db", kickv1alpha1.PhaseSucceeded, t0.Add(-time.Hour)),
		).Build()
	for target, want := range map[string]bool{"web": true, "api": true, "db": false} {
		got := targetRequests(context.Background(), c, workload.Ref{Kind: kickv1alpha1.TargetDeployment, Namespace: "shop", Name: target}, false)
		if (len(got) == 1) != want {
			t.Errorf("an event of deployment %s woke %v, want woken: %v", target, got, want)
		}
	}
}

// In a burst, a rollout as long as the benchmark's fan-out of 500 (about
// 90 s on 2 cores) is still put off: its request goes from Pending to
// Succeeded in one write, without an Executing write and its two Events.
func TestABurstPutsOffALongRollout(t *testing.T) {
	r := &Reconciler{mem: newMemory()}
	now := time.Unix(5000, 0)
	for i := range busyRollouts {
		s, orig := youngStep(r, string(rune('a'+i)), now, time.Second)
		s.deferStatus(orig)
	}
	s, orig := youngStep(r, "a", now, 90*time.Second)
	if got := s.deferStatus(orig); got <= 0 {
		t.Errorf("a burst's rollout 90 s old is recorded now (put off for %v); the grace should outlast it", got)
	}
}

// While the driver writes the request of a restart it applied, the
// restart stays claimed, so a request reconcile in between (the change's
// record wakes it) waits for the driver instead of following the stamp as
// a restart of its own (an Executing write, then another once it sees the
// driver's reopen, and an Event). Once written, the request is read past a
// cache that does not show the write yet.
func TestTheDriverHoldsItsClaimUntilTheRequestIsWritten(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := kickv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := appsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 12, 5, 1, 0, 0, 0, time.UTC)
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}}
	finished := &kickv1alpha1.KickRequest{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "deployment-web"},
		Spec:       kickv1alpha1.KickRequestSpec{TargetRef: kickv1alpha1.TargetRef{Kind: kickv1alpha1.TargetDeployment, Name: "web"}},
		Status:     kickv1alpha1.KickRequestStatus{Phase: kickv1alpha1.PhaseSucceeded},
	}
	mem := newMemory()
	target := WorkloadKey{Kind: kickv1alpha1.TargetDeployment, Namespace: "shop", Name: "web"}
	var claimedWhileWriting, wrote bool
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(dep, finished).
		WithIndex(&kickv1alpha1.KickRequest{}, TargetIndex, func(obj client.Object) []string {
			kr := obj.(*kickv1alpha1.KickRequest)
			return []string{workload.TargetKey(kr.Spec.TargetRef.Kind, kr.Spec.TargetRef.Name)}
		}).
		WithInterceptorFuncs(interceptor.Funcs{Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if _, ok := obj.(*kickv1alpha1.KickRequest); ok {
				wrote = true
				_, claimedWhileWriting = mem.claimed(target.memoryKey())
			}
			return c.Patch(ctx, obj, patch, opts...)
		}}).Build()
	now := t0
	d := &Driver{Client: c, Kinds: workload.Builtin(), Now: func() time.Time { return now }, mem: mem}
	var live appsv1.Deployment
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(dep), &live); err != nil {
		t.Fatal(err)
	}
	h, err := d.Kinds.Handle(context.Background(), c, &live)
	if err != nil {
		t.Fatal(err)
	}
	var kr kickv1alpha1.KickRequest
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(finished), &kr); err != nil {
		t.Fatal(err)
	}
	a := assess.Assessment{Latest: freshness.At(t0.Add(-time.Second))}
	if err := d.restartNow(context.Background(), target, h, &kr, a, handoff{}); !errors.Is(err, errRecordNext) {
		t.Fatalf("the restart's look ended with %v, want the request put off to the next look", err)
	}
	if wrote {
		t.Fatal("the request was written in the restart's own look, before the looks queued behind it")
	}
	if _, held := mem.claimed(target.memoryKey()); !held {
		t.Fatal("the restart is not claimed while its request is owed")
	}
	// A look while the driver is still restarting others puts it off.
	if res, err := d.Reconcile(context.Background(), target); err != nil || res.RequeueAfter != fanOutQuiet || wrote {
		t.Fatalf("a look right after the restart: %+v, %v, request written: %v; want it put off by %v", res, err, wrote, fanOutQuiet)
	}
	// The next look, once the driver has been quiet, writes it.
	now = now.Add(fanOutQuiet)
	res, err := d.Reconcile(context.Background(), target)
	if err != nil || res != (reconcile.Result{}) {
		t.Fatalf("the look after the restart: %+v, %v", res, err)
	}
	if !wrote {
		t.Fatal("the driver wrote no request")
	}
	if !claimedWhileWriting {
		t.Error("the restart was not claimed while its request was written: a request reconcile could follow it as its own")
	}
	if _, held := mem.claimed(target.memoryKey()); held {
		t.Error("the claim outlived the request write")
	}
	if _, owed := mem.owed(target.memoryKey()); owed {
		t.Error("the request is written, but still owed")
	}
	mem.mu.Lock()
	_, readLive := mem.written[client.ObjectKeyFromObject(finished)]
	mem.mu.Unlock()
	if !readLive {
		t.Error("the request the driver wrote would be read from a cache that may not show it")
	}
}

// A restart the driver applied before its policy got a cap is recorded at
// its request's next look, not put off: the budget counts restarts from
// their requests.
func TestACapEndsThePutOff(t *testing.T) {
	r := &Reconciler{mem: newMemory(), Budget: &budget.Budget{ClusterLimit: 5}}
	s, orig := youngStep(r, "r0", time.Unix(5000, 0), time.Second)
	s.a.Selection.Policy = &kickv1alpha1.KickPolicy{}
	if got := s.deferStatus(orig); got != 0 {
		t.Errorf("under a cap, a restart in flight is put off for %v", got)
	}
}

// A request leaves a restart its driver applied, and has not named on the
// request yet, to the driver for a few seconds (the driver's request write
// was refused and is retried), rather than follow it as its own.
func TestARequestLeavesAnOwedRestartToTheDriver(t *testing.T) {
	now := time.Date(2026, 12, 5, 1, 0, 0, 0, time.UTC)
	r := &Reconciler{mem: newMemory()}
	kr := &kickv1alpha1.KickRequest{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "deployment-web"},
		Spec: kickv1alpha1.KickRequestSpec{TargetRef: kickv1alpha1.TargetRef{Kind: kickv1alpha1.TargetDeployment, Name: "web"}}}
	s := &step{r: r, kr: kr, now: now}
	if s.owedByDriver() {
		t.Fatal("nothing owed, yet the request waits")
	}
	r.mem.owe(memoryKey(kr), owedRequest{value: freshness.FormatStamp(now.Add(-time.Second))})
	if !s.owedByDriver() {
		t.Error("a restart the driver owes the request for is not left to it")
	}
	s.now = now.Add(driverLookWait)
	if s.owedByDriver() {
		t.Error("a debt older than driverLookWait still holds the request")
	}
}

// The request of a restart waits while the driver keeps restarting other
// workloads, but never longer than recordMaxWait after its restart; a
// restart recovered from a note (another process's) is recorded at once.
func TestARestartsRequestWaitsForTheFanOut(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 1, 0, 0, 0, time.UTC)
	now := t0
	d := &Driver{Now: func() time.Time { return now }, mem: newMemory()}
	web := WorkloadKey{Kind: kickv1alpha1.TargetDeployment, Namespace: "shop", Name: "web"}
	if got := d.recordWait(web); got != 0 {
		t.Fatalf("no restart owed, yet its request waits %v", got)
	}
	d.mem.owe(web.memoryKey(), owedRequest{value: "v", restartedBy: t0})
	for _, step := range []struct {
		lastRestart, now time.Duration
		want             time.Duration
	}{
		{lastRestart: 0, now: 0, want: fanOutQuiet},
		{lastRestart: 50 * time.Millisecond, now: fanOutQuiet, want: 50 * time.Millisecond},
		{lastRestart: 50 * time.Millisecond, now: fanOutQuiet + 50*time.Millisecond, want: 0},
		// A fan-out that goes on: the restart's request waits at most recordMaxWait.
		{lastRestart: recordMaxWait - 10*time.Millisecond, now: recordMaxWait - 20*time.Millisecond, want: 20 * time.Millisecond},
		{lastRestart: recordMaxWait, now: recordMaxWait, want: 0},
	} {
		d.lastRestart.Store(t0.Add(step.lastRestart).UnixNano())
		now = t0.Add(step.now)
		if got := d.recordWait(web); got != step.want {
			t.Errorf("last restart at +%v, now +%v: the request waits %v, want %v", step.lastRestart, step.now, got, step.want)
		}
	}
	// A debt read from a workload's note after a manager restart.
	d.mem.owe(web.memoryKey(), owedRequest{value: "v"})
	d.lastRestart.Store(now.UnixNano())
	if got := d.recordWait(web); got != 0 {
		t.Errorf("a restart recovered from its note waits %v for its request", got)
	}
}

// The promise of docs/concepts/requests.md, in its own numbers: while the
// driver keeps restarting workloads, a restart's request waits until the
// driver has restarted nothing for 300 ms, and at most 5 seconds after
// its restart. A fan-out that restarts a workload every 10–290 ms for 8 s
// is played against one owed request, millisecond by millisecond.
func TestARestartsRequestIsDueAfterTheDocumentedQuietOrBound(t *testing.T) {
	const (
		quiet = 300 * time.Millisecond // documented
		bound = 5 * time.Second        // documented
	)
	t0 := time.Date(2026, 12, 5, 1, 0, 0, 0, time.UTC)
	for _, gap := range []time.Duration{10 * time.Millisecond, 120 * time.Millisecond, 290 * time.Millisecond} {
		now := t0
		d := &Driver{Now: func() time.Time { return now }, mem: newMemory()}
		web := WorkloadKey{Kind: kickv1alpha1.TargetDeployment, Namespace: "shop", Name: "web"}
		d.mem.owe(web.memoryKey(), owedRequest{value: "v", restartedBy: t0})
		last := t0
		d.lastRestart.Store(last.UnixNano())
		due := time.Duration(-1)
		for at := time.Duration(0); at <= 8*time.Second; at += time.Millisecond {
			now = t0.Add(at)
			if now.Sub(last) >= gap && at < 8*time.Second {
				last = now // the fan-out restarts another workload
				d.lastRestart.Store(last.UnixNano())
			}
			if d.recordWait(web) == 0 {
				due = at
				break
			}
		}
		if due != bound {
			t.Errorf("a restart every %v: the request was due after %v, want %v (its bound)", gap, due, bound)
		}
	}
	// A fan-out that stops: due once it has been quiet for 300 ms.
	now := t0
	d := &Driver{Now: func() time.Time { return now }, mem: newMemory()}
	web := WorkloadKey{Kind: kickv1alpha1.TargetDeployment, Namespace: "shop", Name: "web"}
	d.mem.owe(web.memoryKey(), owedRequest{value: "v", restartedBy: t0})
	d.lastRestart.Store(t0.Add(time.Second).UnixNano()) // the last restart, 1 s in
	for _, c := range []struct {
		at   time.Duration
		want bool
	}{{time.Second + quiet - time.Millisecond, false}, {time.Second + quiet, true}} {
		now = t0.Add(c.at)
		if got := d.recordWait(web) == 0; got != c.want {
			t.Errorf("at +%v, the fan-out's last restart at +1s: due %v, want %v", c.at, got, c.want)
		}
	}
}
