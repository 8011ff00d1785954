package fanout

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/integration/fixture"
)

// tiers labels the consumers for the waves: app-04 is the canary, app-02
// and app-03 the main wave, app-00 and app-01 no wave. Names and waves run
// in opposite orders, so a restart order by name (the budget's tie-break)
// fails the test.
func tiers(i int, d *appsv1.Deployment) {
	switch i {
	case 4:
		d.Labels["tier"] = "canary"
	case 2, 3:
		d.Labels["tier"] = "main"
	}
}

// A Secret consumed by five Deployments changes under a policy with three
// waves (canary with a bake, main, then the workloads no wave selects) and
// restart.maxConcurrent 1. Counted from the Deployments' own status: each
// restarts exactly once; the main wave begins only after the canary has
// been available for the bake; the last group only after the main wave is
// available; there is never more than one rollout at a time.
//
// The manager runs with a --wave-poll of 10 minutes, so a held wave that
// only polled would start minutes late (and the test would time out):
// each wave starts within a fraction of the poll after the one before
// ended (its bake included), which only the wake on a completion and at
// the bake's end can do.
func TestWavesRunInOrderWithTheirBake(t *testing.T) {
	const wavePoll = 10 * time.Minute
	f := fixture.Setup(t, "--wave-poll="+wavePoll.String())
	run := f.NS
	const bake = 20 * time.Second
	f.Policy("waved", `
discovery: {workloadSelector: {}}
restart:
  minInterval: 0s
  maxConcurrent: 1
  waves:
  - {name: canary, selector: {matchLabels: {tier: canary}}, bake: 20s}
  - {name: main, selector: {matchLabels: {tier: main}}}`)
	names := consumers(f, run, "shared", 5, tiers)
	watch := followRollouts(t, f.Env, fanoutLabel, run)
	gates := followGates(t, f)

	f.SetSecret("shared", map[string]string{"v": "2"})
	watch.WaitSettled(t, 4*time.Minute, 1, names...)
	f.Barrier()

	key := func(i int) string { return fmt.Sprintf("%s/app-%02d", f.NS, i) }
	t.Logf("restarts began in the order %v", watch.Started())
	// The watch and the manager see a rollout finish at slightly different
	// moments, and a request's completion time has whole seconds.
	const slack = 2 * time.Second
	_, canaryUp := watch.Times(key(4))
	for _, i := range []int{2, 3} {
		if began, _ := watch.Times(key(i)); began.Before(canaryUp.Add(bake - slack)) {
			t.Errorf("main wave %s began %s after the canary was available; the canary's bake is %s",
				key(i), began.Sub(canaryUp).Round(time.Millisecond), bake)
		}
	}
	for _, i := range []int{0, 1} {
		began, _ := watch.Times(key(i))
		for _, j := range []int{2, 3} {
			if _, up := watch.Times(key(j)); began.Before(up.Add(-slack)) {
				t.Errorf("%s (no wave) began %s before main-wave %s was available", key(i), up.Sub(began).Round(time.Millisecond), key(j))
			}
		}
	}
	// Each wave began promptly after the one before ended: far within the
	// poll, however loaded the machine.
	const prompt = wavePoll / 10
	mainBegan, mainUp := firstBegan(watch, key(2), key(3)), lastUp(watch, key(2), key(3))
	if late := mainBegan.Sub(canaryUp.Add(bake)); late > prompt {
		t.Errorf("the main wave began %s after the canary's bake ended; a woken wave begins within %s (the poll is %s)", late.Round(time.Millisecond), prompt, wavePoll)
	}
	if late := firstBegan(watch, key(0), key(1)).Sub(mainUp); late > prompt {
		t.Errorf("the workloads no wave selects began %s after the main wave was available; a woken wave begins within %s (the poll is %s)", late.Round(time.Millisecond), prompt, wavePoll)
	}
	if peak, when := watch.Peak(); peak > 1 {
		t.Errorf("%d rollouts were in progress at once (%s); restart.maxConcurrent is 1", peak, when)
	}
	for _, k := range names {
		if n := watch.Restarts()[k]; n != 1 {
			t.Errorf("%s restarted %d times, want exactly 1", k, n)
		}
	}

	// The held requests said why in their status, naming their wave and
	// the one before. (Their Events cannot show it: the events API folds
	// a request's Events of one reason into the first one's series.)
	for request, says := range map[string][]string{
		"deployment-app-02": {`wave "main" (2 of 3) waits for wave "canary" (1 of 3) to bake (restart.waves bake 20s) until `},
		"deployment-app-00": {`the workloads no wave selects (3 of 3) waits for wave "main" (2 of 3) to roll out the change of Secret/shared: `},
	} {
		seen := gates.Seen(request)
		for _, want := range says {
			if !slices.ContainsFunc(seen, func(g string) bool { return strings.HasPrefix(g, "EarlierWave: "+want) }) {
				t.Errorf("request %s never said %q; its gates: %q", request, want, seen)
			}
		}
	}
	for _, kr := range f.Requests() {
		if kr.Status.Phase != kickv1alpha1.PhaseSucceeded || kr.Status.RestartCount != 1 {
			t.Errorf("request %s: phase %s, restartCount %d, want Succeeded after 1", kr.Name, kr.Status.Phase, kr.Status.RestartCount)
		}
	}
}

// firstBegan is when the first of keys began its rollout.
func firstBegan(w rolloutWatch, keys ...string) time.Time {
	var first time.Time
	for _, k := range keys {
		if began, _ := w.Times(k); first.IsZero() || began.Before(first) {
			first = began
		}
	}
	return first
}

// lastUp is when the last of keys became available again.
func lastUp(w rolloutWatch, keys ...string) time.Time {
	var last time.Time
	for _, k := range keys {
		if _, up := w.Times(k); up.After(last) {
			last = up
		}
	}
	return last
}

// gates records, through one watch, every gate a namespace's KickRequests
// wrote to their status ("Reason: message"), in order.
type gates struct {
	mu   sync.Mutex
	seen map[string][]string
}

func followGates(t *testing.T, f *fixture.F) *gates {
	t.Helper()
	g := &gates{seen: map[string][]string{}}
	f.WatchRequests(func(kr *kickv1alpha1.KickRequest) {
		if kr.Status.Gate == nil {
			return
		}
		line := string(kr.Status.Gate.Reason) + ": " + kr.Status.Gate.Message
		g.mu.Lock()
		defer g.mu.Unlock()
		if s := g.seen[kr.Name]; len(s) == 0 || s[len(s)-1] != line {
			g.seen[kr.Name] = append(s, line)
		}
	})
	return g
}

// Seen returns the gates a request wrote, in order.
func (g *gates) Seen(request string) []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.seen[request])
}
