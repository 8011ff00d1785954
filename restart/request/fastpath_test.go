package request

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/evidence"
	"github.com/kick-operator/kick/restart/freshness"
	"github.com/kick-operator/kick/restart/workload"
)

func TestDriverRestartIsRecordedOnce(t *testing.T) {
	stamp := time.Date(2026, 12, 1, 10, 0, 0, 123456789, time.UTC)
	value := freshness.FormatStamp(stamp)
	kr := &kickv1alpha1.KickRequest{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{kickv1alpha1.RestartAnnotation: value}}}
	if got, ok := driverRestart(kr); !ok || !got.Equal(stamp) {
		t.Fatalf("a new driver restart: %v %v", got, ok)
	}
	// lastRestartTime keeps microseconds only: the same restart, recorded.
	recorded := metav1.NewMicroTime(stamp.Truncate(time.Microsecond))
	kr.Status.LastRestartTime = &recorded
	if _, ok := driverRestart(kr); ok {
		t.Fatal("a restart recorded with microseconds counts as new")
	}
	kr.Status.LastRestartTime = nil
	kr.Status.CurrentRollout = &kickv1alpha1.RolloutMarker{RestartedAt: value}
	if _, ok := driverRestart(kr); ok {
		t.Fatal("the rollout the request follows counts as new")
	}
	older := metav1.NewMicroTime(stamp.Add(-time.Second))
	kr.Status.CurrentRollout, kr.Status.LastRestartTime = nil, &older
	if _, ok := driverRestart(kr); !ok {
		t.Fatal("a restart after the last recorded one is not new")
	}
	kr.Annotations[kickv1alpha1.RestartAnnotation] = "yesterday"
	if _, ok := driverRestart(kr); ok {
		t.Fatal("an unreadable stamp counts")
	}
}

func TestClaimsSettle(t *testing.T) {
	m := newMemory()
	at := time.Unix(100, 0)
	if !m.claim("ns/Deployment/web", at) || m.claim("ns/Deployment/web", at.Add(time.Second)) {
		t.Fatal("a second claim on the same workload was granted")
	}
	if got, ok := m.claimed("ns/Deployment/web"); !ok || !got.Equal(at) {
		t.Fatalf("claimed %v %v", got, ok)
	}
	m.settle("ns/Deployment/web", at, false)
	if _, ok := m.claimed("ns/Deployment/web"); ok || !m.pendingStamp("ns/Deployment/web", time.Time{}).IsZero() {
		t.Fatal("a refused restart left a claim or a pending stamp")
	}
	m.claim("ns/Deployment/web", at)
	m.settle("ns/Deployment/web", at, true)
	if got := m.pendingStamp("ns/Deployment/web", at.Add(-time.Second)); !got.Equal(at) {
		t.Fatalf("an applied restart is not pending until the cache shows it: %v", got)
	}
}

// A restart the driver could not apply (its conditional patch was refused:
// the request reconciler restarted the workload first) leaves its stamp on
// the request; it must not count as applied, or it would reopen the
// finished request, which then ends NoLongerRequired instead of Succeeded.
func TestDriverRestartStateCountsOnlyWhatReachedTheWorkload(t *testing.T) {
	const target = "ns/Deployment/web"
	driver := time.Date(2026, 12, 1, 10, 0, 0, 200, time.UTC)
	reconciler := driver.Add(-100) // the reconciler's restart, which won
	m := newMemory()
	m.claim(target, driver)
	if restartStateOf(m, target, driver, time.Time{}) != restartInFlight {
		t.Fatal("a restart this process is applying now is not in flight")
	}
	m.settle(target, driver, false) // refused
	m.wroteStamp(target, reconciler)
	if restartStateOf(m, target, driver, reconciler) != restartNotApplied {
		t.Fatal("a refused restart counts as applied")
	}
	if restartStateOf(newMemory(), target, driver, driver) != restartApplied {
		t.Fatal("a stamp the workload carries is not applied")
	}
	applied := newMemory()
	applied.claim(target, driver)
	applied.settle(target, driver, true)
	if restartStateOf(applied, target, driver, reconciler.Add(-time.Second)) != restartApplied {
		t.Fatal("a restart applied here but not yet in the cache is not applied")
	}
}

// TestUnrecordedRestart: a restart the driver owes a request for (this
// process, or a stopped one through the workload's note) is found until a
// request names its stamp; a note whose stamp the workload no longer
// carries, one older than the request retention, or an unreadable one is
// not.
func TestUnrecordedRestart(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	stamp := now.Add(-time.Minute)
	value := freshness.FormatStamp(stamp)
	kind, _ := workload.Builtin().Lookup(kickv1alpha1.TargetDeployment)
	web := func(template string, note string) workload.Handle {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web",
			Annotations: map[string]string{kickv1alpha1.RestartedForAnnotation: note}}}
		d.Spec.Template.Annotations = map[string]string{freshness.RestartedAtAnnotation: template}
		return workload.Handle{Object: d, Kind: kind, Target: d}
	}
	k := WorkloadKey{Kind: kickv1alpha1.TargetDeployment, Namespace: "shop", Name: "web"}
	naming := func(v string) []*kickv1alpha1.KickRequest {
		return []*kickv1alpha1.KickRequest{{ObjectMeta: metav1.ObjectMeta{Name: "deployment-web", Annotations: map[string]string{kickv1alpha1.RestartAnnotation: v}}}}
	}
	note := evidence.Note{Stamp: value, Change: stamp.Add(-time.Millisecond)}.String()
	for _, tc := range []struct {
		name      string
		h         workload.Handle
		requests  []*kickv1alpha1.KickRequest
		retention time.Duration
		want      bool
	}{
		{"noted restart, no request", web(value, note), nil, time.Hour, true},
		{"noted restart, an older request", web(value, note), naming("2026-01-01T00:00:00Z"), time.Hour, true},
		{"noted restart, its request", web(value, note), naming(value), time.Hour, false},
		{"the workload was restarted since", web(freshness.FormatStamp(now), note), nil, time.Hour, false},
		{"older than the retention", web(value, note), nil, 30 * time.Second, false},
		{"an unreadable note", web(value, "restarted "+value), nil, time.Hour, false},
	} {
		d := &Driver{Now: func() time.Time { return now }, Retention: tc.retention, mem: newMemory()}
		o, ok := d.unrecordedRestart(k, tc.h, tc.requests)
		if ok != tc.want || (ok && (o.value != value || !o.change.Latest.Equal(stamp.Add(-time.Millisecond)))) {
			t.Errorf("%s: %+v %v, want %v", tc.name, o, ok, tc.want)
		}
	}

	// This process owes it: found although the cached workload does not
	// show the restart yet, until a request names it.
	d := &Driver{Now: func() time.Time { return now }, mem: newMemory()}
	d.mem.owe(k.memoryKey(), owedRequest{value: value, change: freshness.At(stamp)})
	if _, ok := d.unrecordedRestart(k, web("", ""), nil); !ok {
		t.Error("a debt of this process is not found")
	}
	if _, ok := d.unrecordedRestart(k, web("", ""), naming(value)); ok {
		t.Error("a debt whose request exists is still found")
	}
	if _, ok := d.mem.owed(k.memoryKey()); ok {
		t.Error("a paid debt is still remembered")
	}
}

// A request following a rollout that is not complete looks again within
// rolloutPoll even when its timeout is far off, so a missed event of its
// workload or ReplicaSets holds it a minute at most; near the timeout it
// looks again when the timeout is due.
func TestTrackLooksAgainWithinThePoll(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	kind, _ := workload.Builtin().Lookup(kickv1alpha1.TargetDeployment)
	for _, tc := range []struct {
		name    string
		elapsed time.Duration
		want    time.Duration
	}{
		{"young rollout", 10 * time.Second, rolloutPoll},
		{"close to the timeout", 15*time.Minute - 20*time.Second, 20 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stamp := now.Add(-tc.elapsed)
			value := freshness.FormatStamp(stamp)
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}}
			d.Spec.Template.Annotations = map[string]string{freshness.RestartedAtAnnotation: value}
			started := metav1.NewMicroTime(stamp)
			s := &step{
				r:      &Reconciler{RolloutTimeout: 15 * time.Minute, mem: newMemory()},
				kr:     &kickv1alpha1.KickRequest{Status: kickv1alpha1.KickRequestStatus{CurrentRollout: &kickv1alpha1.RolloutMarker{StartedAt: &started, RestartedAt: value}}},
				now:    now,
				handle: workload.Handle{Object: d, Kind: kind, Target: d},
			}
			s.a.Rollout = freshness.Rollout{Reason: freshness.NoMatchingReplicaSet, Message: "no ReplicaSet of this deployment matches its pod template yet"}
			res, done := s.track(t.Context())
			if !done || res.RequeueAfter != tc.want {
				t.Fatalf("track() = %+v, done %v; want a look again after %s", res, done, tc.want)
			}
			if s.kr.Status.Phase != kickv1alpha1.PhaseExecuting {
				t.Fatalf("phase %q, want Executing", s.kr.Status.Phase)
			}
		})
	}
}

// A ReplicaSet wakes the requests of the Deployment that controls it; no
// owner, an owner that is not its controller, or a kind of the same name
// from another API group wakes nothing.
func TestControllingWorkload(t *testing.T) {
	rs := func(refs ...metav1.OwnerReference) *appsv1.ReplicaSet {
		return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-1", OwnerReferences: refs}}
	}
	controller := func(apiVersion, kind string, isController bool) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: "web", UID: "u", Controller: &isController}
	}
	for _, tc := range []struct {
		name string
		obj  *appsv1.ReplicaSet
		want bool
	}{
		{"Deployment controller", rs(controller("apps/v1", "Deployment", true)), true},
		{"no owner", rs(), false},
		{"owner, not controller", rs(controller("apps/v1", "Deployment", false)), false},
		{"Deployment of another group", rs(controller("example.com/v1", "Deployment", true)), false},
		{"kind KICK does not restart", rs(controller("example.com/v1", "Widget", true)), false},
	} {
		ref, ok := controllingWorkload(workload.Builtin(), tc.obj)
		if ok != tc.want {
			t.Errorf("%s: woke %v, want %v", tc.name, ok, tc.want)
			continue
		}
		if ok && (ref.Kind != kickv1alpha1.TargetDeployment || ref.Namespace != "shop" || ref.Name != "web") {
			t.Errorf("%s: woke %s", tc.name, ref)
		}
	}
}

// A restart whose request is owed keeps its claim until the request is
// written (paid), or its first write was tried (settleClaim); a workload
// that disappeared drops both.
func TestAnOwedRequestHoldsItsClaim(t *testing.T) {
	at := time.Unix(100, 0)
	const web = "ns/Deployment/web"
	owed := owedRequest{value: freshness.FormatStamp(at), claim: at}

	m := newMemory()
	m.claim(web, at)
	m.owe(web, owed)
	if _, held := m.claimed(web); !held {
		t.Fatal("owing the request ended the claim")
	}
	m.paid(web, "another restart")
	if _, held := m.claimed(web); !held {
		t.Fatal("a request naming another restart ended the claim")
	}
	m.paid(web, owed.value)
	if _, held := m.claimed(web); held {
		t.Fatal("the claim outlived its request")
	}
	if got := m.pendingStamp(web, at.Add(-time.Second)); !got.Equal(at) {
		t.Fatalf("the restart paid for is not remembered as applied: %v", got)
	}

	m = newMemory()
	m.claim(web, at)
	m.owe(web, owed)
	m.settleClaim(web, owed)
	if _, held := m.claimed(web); held {
		t.Fatal("a tried write left the claim")
	}
	if o, ok := m.owed(web); !ok || !o.claim.IsZero() {
		t.Fatalf("after the claim settled the debt is %+v, %v; want it owed without a claim", o, ok)
	}
	if !m.claim(web, at.Add(time.Second)) {
		t.Fatal("a new restart cannot claim the workload")
	}

	m = newMemory()
	m.claim(web, at)
	m.owe(web, owed)
	m.forgetDebt(web)
	if _, held := m.claimed(web); held {
		t.Fatal("a deleted workload's claim stays")
	}
}
