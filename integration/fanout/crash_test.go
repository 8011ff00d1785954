package fanout

import (
	"testing"
	"time"

	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/integration/fixture"
)

// Leader-election timings short enough for a test; production defaults are
// 15s/10s/2s.
var electionFlags = []string{"--leader-elect",
	"--leader-elect-lease-duration=5s", "--leader-elect-renew-deadline=3s", "--leader-elect-retry-period=500ms"}

// The manager is SIGKILLed in the middle of a capped fan-out and a new one
// takes over from what the cluster holds: the cap still holds, counted
// from the Deployments, and every Deployment restarts exactly once.
func TestBudgetHoldsAcrossAKill(t *testing.T) {
	f := fixture.Setup(t)
	run := f.NS
	f.Policy("capped", `
discovery: {workloadSelector: {}}
restart: {maxConcurrent: 2, minInterval: 0s}`)
	names := consumers(f, run, "shared", 10)
	watch := followRollouts(t, f.Env, fanoutLabel, run)

	f.SetSecret("shared", map[string]string{"v": "2"})
	cluster.Eventually(t, time.Minute, "the fan-out's first restarts", func() (bool, error) {
		return len(watch.Started()) >= 2, nil
	})
	f.Mgr.Kill()
	f.Mgr = f.Env.StartManager(t, fixture.ManagerNamespace)
	watch.WaitSettled(t, 3*time.Minute, 1, names...)
	f.Barrier()

	t.Logf("restarts began in the order %v", watch.Started())
	if peak, when := watch.Peak(); peak > 2 {
		t.Errorf("%d rollouts were in progress at once (%s); restart.maxConcurrent is 2", peak, when)
	}
	for _, key := range names {
		if n := watch.Restarts()[key]; n != 1 {
			t.Errorf("%s restarted %d times, want exactly 1", key, n)
		}
	}
}

// Two replicas with leader election; the leader is SIGKILLed in the middle
// of a capped fan-out. The standby, whose cache was warm and may lag, takes
// over: the cap holds and every Deployment restarts exactly once.
func TestBudgetHoldsAcrossAFailover(t *testing.T) {
	f := fixture.Setup(t, electionFlags...)
	standby := f.Env.StartManager(t, fixture.ManagerNamespace, electionFlags...)
	run := f.NS
	f.Policy("capped", `
discovery: {workloadSelector: {}}
restart: {maxConcurrent: 2, minInterval: 0s}`)
	names := consumers(f, run, "shared", 10)
	watch := followRollouts(t, f.Env, fanoutLabel, run)

	f.SetSecret("shared", map[string]string{"v": "2"})
	cluster.Eventually(t, time.Minute, "the fan-out's first restarts", func() (bool, error) {
		return len(watch.Started()) >= 2, nil
	})
	// Whichever replica leads goes; the other must finish the fan-out.
	leader, other := f.Mgr, standby
	if m, _ := standby.Metrics(); leads(m) {
		leader, other = standby, f.Mgr
	}
	leader.Kill()
	f.Mgr = other
	watch.WaitSettled(t, 3*time.Minute, 1, names...)
	f.Barrier()

	t.Logf("restarts began in the order %v", watch.Started())
	if peak, when := watch.Peak(); peak > 2 {
		t.Errorf("%d rollouts were in progress at once (%s); restart.maxConcurrent is 2", peak, when)
	}
	for _, key := range names {
		if n := watch.Restarts()[key]; n != 1 {
			t.Errorf("%s restarted %d times, want exactly 1", key, n)
		}
	}
}
