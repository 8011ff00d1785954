package chaos

import (
	"fmt"
	"regexp"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/integration/fixture"
)

// leaseName is the manager's leader-election Lease (cmd/kick-manager).
const leaseName = "kick-manager.kick.corewire.io"

// leading matches the /metrics line of the replica that leads.
var leading = regexp.MustCompile(`(?m)^leader_election_master_status\{name="` + regexp.QuoteMeta(leaseName) + `"\} 1$`)

// Short leader-election timings keep the test fast; production defaults
// are 15s/10s/2s.
const leaseFlags = "5s/3s/500ms"

var electionFlags = []string{"--leader-elect",
	"--leader-elect-lease-duration=5s", "--leader-elect-renew-deadline=3s", "--leader-elect-retry-period=500ms"}

// TestLeaderFailover runs two replicas with leader election and, in the
// middle of a burst of changes, SIGKILLs the one that leads; changes go on
// while no replica leads. The other replica must take over and every
// Deployment restart exactly once per change. A replacement replica is
// started after each takeover, as a Deployment would. Figures: kill → the
// Lease names a new holder, and kill → the new leader's first restart.
func TestLeaderFailover(t *testing.T) {
	deployments, failovers := pick(30, 200), pick(2, 5)
	spread := pick(3*time.Second, 8*time.Second)

	f := fixture.Setup(t, electionFlags...)
	replicas := []*cluster.Manager{f.Mgr, f.Env.StartManager(t, fixture.ManagerNamespace, electionFlags...)}
	l := newLoad(f, deployments)
	var leaseTimes, restartTimes []time.Duration
	selfExits := 0
	// While a round settles, a replica that exited by itself is started
	// again, as a Deployment would: on a loaded machine both replicas can
	// lose their Lease one after the other, and the changes of the round
	// would then wait for no one.
	l.whileSettling = func() { replaceExited(t, f, replicas, &selfExits) }
	for r := 1; r <= failovers+1; r++ {
		writes := l.change(spread)
		if r <= failovers {
			// Kill in the middle third of the burst.
			time.Sleep(spread/3 + l.randN(spread/3)) // the fault's moment, from the seed
			lease, restart := failover(t, l, replicas, &selfExits)
			leaseTimes, restartTimes = append(leaseTimes, lease), append(restartTimes, restart)
			t.Logf("round %d: takeover: Lease after %s, first restart after %s", r, lease.Round(time.Millisecond), restart.Round(time.Millisecond))
		}
		if err := <-writes; err != nil {
			t.Fatal(err)
		}
		if err := l.wait(pick(time.Minute, 3*time.Minute)); err != nil {
			t.Error(err)
			break
		}
	}
	restarts, lost, duplicated := l.count()
	l.figures("failover", restarts, lost, duplicated, "replicas", len(replicas), "failovers", len(leaseTimes), "self_exits", selfExits, "lease", leaseFlags,
		"takeover_lease_max", maxOf(leaseTimes), "takeover_restart_max", maxOf(restartTimes))
}

// failover SIGKILLs the leading replica, waits until the Lease has a new
// holder and a Deployment restarted, starts a replacement replica in the
// killed one's place and returns both times, counted from the kill. A
// replica that exited by itself is replaced first and counted in selfExits.
func failover(t *testing.T, l *load, replicas []*cluster.Manager, selfExits *int) (lease, restart time.Duration) {
	t.Helper()
	f := l.f
	replaceExited(t, f, replicas, selfExits)
	i := leader(t, replicas)
	before := holder(f)
	if _, inFlight, err := l.progress(); err == nil {
		t.Logf("SIGKILL of the leader with %d changes not yet answered", inFlight)
	}
	replicas[i].Kill()
	killed := time.Now()
	// The killed leader can write no more: any restart from here on is the
	// new leader's.
	gens, err := l.generations()
	if err != nil {
		t.Fatal(err)
	}
	cluster.Eventually(t, time.Minute, "another replica to take over and restart", func() (bool, error) {
		if h := holder(f); lease == 0 && h != "" && h != before {
			lease = time.Since(killed)
		}
		if restart == 0 {
			now, err := l.generations()
			if err != nil {
				return false, err
			}
			for k := range now {
				if now[k] > gens[k] {
					restart = time.Since(killed)
					break
				}
			}
		}
		return lease > 0 && restart > 0, fmt.Errorf("Lease taken after %s, first restart after %s (0: not yet)", lease, restart)
	})
	replicas[i] = f.Env.StartManager(t, fixture.ManagerNamespace, electionFlags...)
	return lease, restart
}

// replaceExited starts a replacement for every replica that exited by
// itself and counts it in selfExits: a leader that cannot renew in time (a
// loaded machine, short timings) stops leading and exits; a Deployment
// would start it again.
func replaceExited(t *testing.T, f *fixture.F, replicas []*cluster.Manager, selfExits *int) {
	t.Helper()
	for j, m := range replicas {
		if m.Exited() {
			t.Logf("replica %d exited by itself; starting a replacement", j)
			*selfExits++
			replicas[j] = f.Env.StartManager(t, fixture.ManagerNamespace, electionFlags...)
		}
	}
}

// leader returns the index of the one replica whose /metrics says it
// leads.
func leader(t *testing.T, replicas []*cluster.Manager) int {
	t.Helper()
	idx := -1
	cluster.Eventually(t, 30*time.Second, "exactly one replica to lead", func() (bool, error) {
		var leaders []int
		for i, m := range replicas {
			if text, err := m.Metrics(); err == nil && leading.MatchString(text) {
				leaders = append(leaders, i)
			}
		}
		if len(leaders) == 1 {
			idx = leaders[0]
		}
		return len(leaders) == 1, fmt.Errorf("replicas leading: %v", leaders)
	})
	return idx
}

// holder returns the Lease's holderIdentity, "" when there is none.
func holder(f *fixture.F) string {
	var lease coordinationv1.Lease
	if err := f.Env.Client.Get(f.Ctx, client.ObjectKey{Namespace: fixture.ManagerNamespace, Name: leaseName}, &lease); err != nil || lease.Spec.HolderIdentity == nil {
		return ""
	}
	return *lease.Spec.HolderIdentity
}

func maxOf(ds []time.Duration) time.Duration {
	var m time.Duration
	for _, d := range ds {
		m = max(m, d)
	}
	return m.Round(time.Millisecond)
}
