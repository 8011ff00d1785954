package request

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/freshness"
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
