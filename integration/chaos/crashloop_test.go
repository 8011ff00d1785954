package chaos

import (
	"testing"
	"time"

	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/integration/fixture"
)

// TestCrashLoop SIGKILLs the manager at random moments while every Secret
// changes round after round, and starts a new one each time (same
// namespace, same flags): a kill may land while Secrets are written,
// between a change and its KickRequest, between a restart patch and the
// status that records it, or while a new manager syncs its caches; every
// other kill waits for the moment the round's restarts are under way.
// Every Deployment must still restart exactly once per round.
func TestCrashLoop(t *testing.T) {
	deployments, rounds, kills := pick(30, 200), pick(5, 10), pick(5, 20)
	// Writes are spread over spread; kills land within window of a
	// round's start, so both writes and restarts are hit.
	spread := pick(time.Second, 4*time.Second)
	window := spread + pick(time.Second, 6*time.Second)

	start := time.Now()
	f := fixture.Setup(t)
	l := newLoad(f, deployments)
	killed, pendingAtKills := 0, 0
	for r := 1; r <= rounds; r++ {
		writes := l.change(spread)
		roundStart := time.Now()
		for range kills*r/rounds - kills*(r-1)/rounds {
			// The fault's moment: every other kill at random, the others
			// as soon as the round's restarts are under way, when many
			// are in flight (or at the timeout, should the round be over).
			hot := killed%2 == 1
			if hot {
				_ = cluster.Poll(window, "restarts under way", func() (bool, error) {
					answered, pending, err := l.progress()
					return answered > 0 && pending > 0, err
				})
			} else {
				time.Sleep(l.randN(window)) // the fault's moment, from the seed
			}
			_, inFlight, err := l.progress()
			if err != nil {
				t.Fatal(err)
			}
			f.Mgr.Kill()
			pendingAtKills += inFlight
			t.Logf("round %d: SIGKILL (hot %t) at +%s with %d changes not yet answered", r, hot, time.Since(roundStart).Round(time.Millisecond), inFlight)
			killed++
			f.Mgr = f.Env.StartManager(t, fixture.ManagerNamespace)
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
	l.figures("crash-loop", restarts, lost, duplicated, "kills", killed, "pending_at_kills", pendingAtKills, "duration", time.Since(start).Round(time.Second))
}
