package chaos

import (
	"context"
	"testing"
	"time"

	"github.com/kick-operator/kick/integration/fixture"
)

// TestAPIServerOutage stops kube-apiserver in the middle of a burst of
// changes and starts it again with the same flags and ports; the changes
// refused meanwhile are written once it is back.
func TestAPIServerOutage(t *testing.T) {
	outage(t, "kube-apiserver", "apiserver-outage", pick(8*time.Second, 15*time.Second))
}

// TestEtcdRestart stops etcd in the middle of a burst of changes (the API
// server stays up but can neither read nor write) and starts it again on
// the same data directory.
func TestEtcdRestart(t *testing.T) {
	outage(t, "etcd", "etcd-restart", pick(3*time.Second, 10*time.Second))
}

// outage runs rounds of changes and, in the middle of the first, stops a
// control-plane component for down. The manager must recover by itself
// (it is never restarted), and every Deployment restart exactly once per
// round. Figure: recovery is the time from the component serving again to
// the last restart of that round (its restart stamp).
func outage(t *testing.T, component, scenario string, down time.Duration) {
	deployments, rounds := pick(30, 200), pick(2, 3)
	spread := pick(2*time.Second, 6*time.Second)

	f := fixture.Setup(t)
	l := newLoad(f, deployments)
	var recovery time.Duration
	for r := 1; r <= rounds; r++ {
		writes := l.change(spread)
		var back time.Time
		if r == 1 {
			time.Sleep(spread / 2) // the fault's moment: half the Secrets written
			back = stopFor(t, f, component, down)
		}
		if err := <-writes; err != nil {
			t.Fatal(err)
		}
		err := l.wait(pick(2*time.Minute, 3*time.Minute))
		if last := l.rounds[r-1].lastRestart; r == 1 && last.After(back) {
			recovery = last.Sub(back)
		}
		if err != nil {
			t.Error(err)
			break
		}
	}
	restarts, lost, duplicated := l.count()
	managerExits := 0
	if f.Mgr.Exited() {
		managerExits = 1
		t.Errorf("kick-manager exited during the %s outage instead of recovering by itself", component)
	}
	l.figures(scenario, restarts, lost, duplicated, "down", down, "manager_exits", managerExits, "recovery", recovery.Round(time.Millisecond))
}

// stopFor stops a control-plane component, starts it again after down and
// returns when it serves again. Should the test end in between, the
// component is started again for the tests that follow.
func stopFor(t *testing.T, f *fixture.F, component string, down time.Duration) time.Time {
	t.Helper()
	if err := f.Env.Cluster.StopComponent(component); err != nil {
		t.Fatal(err)
	}
	stopped := true
	t.Cleanup(func() {
		if stopped {
			_ = f.Env.Cluster.StartComponent(context.Background(), component)
		}
	})
	time.Sleep(down) // the outage itself
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := f.Env.Cluster.StartComponent(ctx, component); err != nil {
		t.Fatal(err)
	}
	stopped = false
	return time.Now()
}
