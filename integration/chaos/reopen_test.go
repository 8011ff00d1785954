package chaos

import (
	"fmt"
	"slices"
	"testing"
	"time"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/integration/fixture"
)

// TestABurstOfReopenedRequestsLeavesTheRestartsToTheDriver: forty
// Deployments share a Secret and each has a finished request from an
// earlier restart, the usual state of a production cluster. With one
// worker per controller, the Secret's next change puts all forty in the
// driver's queue at once, and its record reaches the request reconciler
// while most still wait there. A finished request that restarted its
// workload itself at that point would race the driver for the same change
// and record it in two status writes, Executing (with a KickStarted Event)
// and Succeeded; instead each request leaves the restart to the driver,
// which restarts the workload and reopens the request with the stamp. Each
// workload restarts exactly once for the change, and no request records a
// restart of its own (a KickStarted Event); a request's second cycle is
// one status write, Succeeded, unless it looked while the driver's reopen
// was in flight (those are counted in the log).
func TestABurstOfReopenedRequestsLeavesTheRestartsToTheDriver(t *testing.T) {
	const n = 40
	f := sharingDeployments(t, n, "--max-concurrent-reconciles=1")

	// The first change gives every workload its request.
	f.SetSecret("db", map[string]string{"password": "bravo"})
	waitCycles(t, f, n, 1)
	for i := range n {
		f.WaitReplicaSets(name(i), 2)
	}

	// The second change reopens them all at once.
	writes := watchStatusWrites(f)
	f.SetSecret("db", map[string]string{"password": "charlie"})
	waitCycles(t, f, n, 2)
	for i := range n {
		f.WaitReplicaSets(name(i), 3)
	}
	// A request that looked while the driver's reopen was in flight
	// follows the restart from this process's memory, recording Executing
	// first: no second restart, but more status writes. Logged, not failed.
	more := 0
	for i := range n {
		kr := "deployment-" + name(i)
		if got := writes.of(kr); len(got) != 1 || got[0] != kickv1alpha1.PhaseSucceeded {
			more++
			t.Logf("request %s recorded its second cycle in status writes %v", kr, got)
		}
	}
	t.Logf("%d of %d requests recorded their second cycle in more than one status write", more, n)
	reasons, err := requestEvents(f)
	if err != nil {
		t.Fatal(err)
	}
	for kr, got := range reasons {
		if slices.Contains(got, "KickStarted") {
			t.Errorf("request %s recorded its restart as started before it succeeded (Events %v): it raced the driver", kr, got)
		}
	}
	// Nothing restarts after the last request finished.
	f.Barrier()
	for i := range n {
		if rs := f.ReplicaSets(name(i)); len(rs) != 3 {
			t.Fatalf("%s has %d ReplicaSets after two changes, want 3: %v", name(i), len(rs), rs)
		}
	}
}

// waitCycles waits until the requests of the first n workloads have all
// succeeded restarts restarts.
func waitCycles(t *testing.T, f *fixture.F, n int, restarts int32) {
	t.Helper()
	cluster.Eventually(t, 120*time.Second, fmt.Sprintf("every request to succeed restart %d", restarts), func() (bool, error) {
		for i := range n {
			kr, err := f.Request("deployment-" + name(i))
			if err != nil {
				return false, err
			}
			if kr.Status.Phase != kickv1alpha1.PhaseSucceeded || kr.Status.RestartCount != restarts {
				return false, fmt.Errorf("%s: phase %q after %d restarts; requests %s", kr.Name, kr.Status.Phase, kr.Status.RestartCount, requestPhases(f))
			}
		}
		return true, nil
	})
}
