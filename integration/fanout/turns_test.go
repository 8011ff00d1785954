package fanout

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/integration/fixture"
)

// A Secret that 120 Deployments of one namespace consume changes, and
// right after a Secret of one Deployment in another namespace. Neither
// has a restart budget, so each restart goes out from the restarter's own
// queue, which takes turns between namespaces: the other namespace's
// restart goes out after a few of the big fan-out's, not after all of
// them. With two workers (--max-concurrent-reconciles=2) and one queue in
// arrival order it came after nearly all of them.
//
// How many of the fan-out's restarts go out before the other namespace's
// is mostly how many fit into the time the manager takes to notice the
// second Secret's change (its read and record on an API server busy with
// the fan-out): 9 to 16 of them in CI and here, with 60 Deployments. So
// the fan-out is large and the bound is a quarter of it: taking turns
// stays well below, one queue in arrival order far above.
//
// Order is asserted, from a watch of the Deployments, not speed.
func TestAFanOutDoesNotDelayAnotherNamespace(t *testing.T) {
	const fanOut = 120
	big := fixture.Setup(t, "--max-concurrent-reconciles=2")
	run := big.NS
	small := &fixture.F{T: t, Env: big.Env, NS: big.Env.Namespace(t), Ctx: big.Ctx, Mgr: big.Mgr}
	for _, f := range []*fixture.F{big, small} {
		f.Policy("all", `
discovery: {workloadSelector: {}}
restart: {minInterval: 0s}`)
	}
	names := consumers(big, run, "shared", fanOut)
	lone := consumers(small, run, "own", 1)[0]
	watch := followRollouts(t, big.Env, fanoutLabel, run)

	big.SetSecret("shared", map[string]string{"v": "2"})
	// The fan-out is queued once its first restart has gone out.
	cluster.Eventually(t, time.Minute, "the fan-out's first restart", func() (bool, error) {
		return len(watch.Started()) > 0, nil
	})
	small.SetSecret("own", map[string]string{"v": "2"})
	watch.WaitSettled(t, 3*time.Minute, 1, append(names, lone)...)
	big.Barrier()

	order := watch.Started()
	before := slices.Index(order, lone)
	if before < 0 {
		t.Fatalf("%s never restarted; restarts began in the order %v", lone, order)
	}
	ahead := 0
	for _, k := range order[:before] {
		if strings.HasPrefix(k, big.NS+"/") {
			ahead++
		}
	}
	t.Logf("%d of the fan-out's %d restarts began before the other namespace's", ahead, fanOut)
	if ahead > fanOut/4 {
		t.Errorf("%d of the fan-out's %d restarts began before the other namespace's one restart; taking turns, a few would", ahead, fanOut)
	}
	for _, k := range append(names, lone) {
		if n := watch.Restarts()[k]; n != 1 {
			t.Errorf("%s restarted %d times, want exactly 1", k, n)
		}
	}
}
