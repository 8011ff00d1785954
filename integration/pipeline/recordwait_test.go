package pipeline

import (
	"fmt"
	"testing"
	"time"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/integration/fixture"
)

// TestTheRecordFollowsTheRestartSeenOnTheWatch: the record of a change
// waits until the manager's own watch shows the restart it made at once,
// at most 20 ms. Five workloads, each restarted alone (its request written
// before the next change, so no fan-out), give five waits; at least one
// must end because the watch showed the restart. Had the driver no watch
// telling it, each would wait out its bound. (Five, because on a loaded
// machine one restart may take longer than the bound to be seen.)
func TestTheRecordFollowsTheRestartSeenOnTheWatch(t *testing.T) {
	f := fixture.Setup(t)
	f.Policy("all", selectAll)
	names := []string{"alpha", "bravo", "charlie", "delta", "echo"}
	for _, n := range names {
		f.Secret("s-"+n, map[string]string{"token": "one"}, nil)
		f.Deployment(n, 1, fixture.PodSpec("s-"+n))
	}
	for _, n := range names {
		f.WaitAvailable(n)
		f.WaitObservation("s-" + n)
	}
	waits := func() (looked, bound float64) {
		t.Helper()
		var err error
		if looked, err = f.Metric(`kick_observe_record_waits_total{ended="looked"}`); err != nil {
			t.Fatal(err)
		}
		if bound, err = f.Metric(`kick_observe_record_waits_total{ended="bound"}`); err != nil {
			t.Fatal(err)
		}
		return looked, bound
	}
	looked0, bound0 := waits()
	for i, n := range names {
		f.SetSecret("s-"+n, map[string]string{"token": "two"})
		f.WaitPhase("deployment-"+n, kickv1alpha1.PhaseSucceeded, 60*time.Second)
		cluster.Eventually(t, 30*time.Second, fmt.Sprintf("%d records written after their wait", i+1), func() (bool, error) {
			looked, bound := waits()
			return looked-looked0+bound-bound0 >= float64(i+1), nil
		})
	}
	looked, bound := waits()
	if looked-looked0+bound-bound0 != float64(len(names)) {
		t.Fatalf("%v waits ended by the watch and %v by the bound for %d changes", looked-looked0, bound-bound0, len(names))
	}
	if looked == looked0 {
		t.Fatalf("every record of %d single restarts waited out its 20 ms bound: the restart was never seen on the manager's watch", len(names))
	}
	t.Logf("waits ended by the watch: %v, by the bound: %v", looked-looked0, bound-bound0)
}
