package fanout

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/integration/fixture"
)

// apiWrites sums the manager's own count of API requests
// (rest_client_requests_total) by method, leaving out the reads (GET, LIST,
// WATCH): every write the manager sent, to any object.
func apiWrites(t *testing.T, f *fixture.F) map[string]float64 {
	t.Helper()
	text, err := f.Mgr.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for line := range strings.SplitSeq(text, "\n") {
		rest, ok := strings.CutPrefix(line, "rest_client_requests_total{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		_, after, ok := strings.Cut(labels, `method="`)
		if !ok {
			continue
		}
		method, _, _ := strings.Cut(after, `"`)
		switch method {
		case "GET", "LIST", "WATCH":
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		out[method] += v
	}
	return out
}

func total(m map[string]float64) float64 {
	var n float64
	for _, v := range m {
		n += v
	}
	return n
}

// delta is after-before by method, as "PATCH=3 POST=2".
func delta(before, after map[string]float64) string {
	var parts []string
	for method, v := range after {
		if d := v - before[method]; d > 0 {
			parts = append(parts, fmt.Sprintf("%s=%.0f", method, d))
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

// quietWrites waits until the manager has sent no write for quiet, and
// returns its writes then.
func quietWrites(t *testing.T, f *fixture.F, quiet time.Duration) map[string]float64 {
	t.Helper()
	last, since := apiWrites(t, f), time.Now()
	cluster.Eventually(t, 2*time.Minute, "the manager to stop writing", func() (bool, error) {
		now := apiWrites(t, f)
		if total(now) != total(last) {
			last, since = now, time.Now()
		}
		return time.Since(since) >= quiet, fmt.Errorf("still writing: %s", delta(map[string]float64{}, now))
	})
	return last
}

// waitSucceeded waits until every named request has succeeded.
func waitSucceeded(f *fixture.F, requests ...string) {
	f.T.Helper()
	for _, kr := range requests {
		f.WaitPhase(kr, kickv1alpha1.PhaseSucceeded, 2*time.Minute)
	}
}

func appRequests(n int) []string {
	out := make([]string, n)
	for i := range n {
		out[i] = fmt.Sprintf("deployment-app-%02d", i)
	}
	return out
}

// writesPerRestart runs change once the consumers are baselined and the
// manager is quiet, waits for the requests to succeed and the manager to
// fall quiet again, and returns the manager's writes per restart.
func writesPerRestart(t *testing.T, f *fixture.F, restarts int, change func(), requests ...string) float64 {
	t.Helper()
	before := quietWrites(t, f, 3*time.Second)
	var mu sync.Mutex
	var seq []string
	watching := true
	watchRequests(t, f, func(kr *kickv1alpha1.KickRequest) {
		mu.Lock()
		defer mu.Unlock()
		if watching {
			seq = append(seq, kr.Name+":"+string(kr.Status.Phase))
		}
	})
	change()
	waitSucceeded(f, requests...)
	after := quietWrites(t, f, 3*time.Second)
	mu.Lock()
	watching = false
	t.Logf("request versions seen: %v", seq)
	mu.Unlock()
	per := (total(after) - total(before)) / float64(restarts)
	t.Logf("%d restarts: %.0f writes (%s), %.2f per restart", restarts, total(after)-total(before), delta(before, after), per)
	return per
}

// Without a budget, a restart costs at most noBudgetWrites API writes of
// the manager, whether its Secret is its own or shared (where the record of
// the change is written once for all), counted by the manager itself from
// the change until it falls quiet after the last request succeeded.
func TestARestartWithoutABudgetWritesLittle(t *testing.T) {
	f := fixture.Setup(t)
	f.Policy("all", `
discovery: {workloadSelector: {}}
restart: {minInterval: 0s}`)
	const n = 6
	consumers(f, f.NS, "shared", n)
	per := writesPerRestart(t, f, n, func() { f.SetSecret("shared", map[string]string{"v": "2"}) }, appRequests(n)...)
	if per > noBudgetWrites {
		t.Errorf("a fan-out without a budget wrote %.2f times per restart, want at most %d", per, noBudgetWrites)
	}
	// Each workload reads its own Secret, changed one at a time (the
	// benchmark's single change): the record is one write per restart.
	for i := range 3 {
		name := fmt.Sprintf("own-%d", i)
		f.Secret(name, map[string]string{"v": "1"}, nil)
		f.Deployment(name, 1, fixture.PodSpec(name))
		f.WaitAvailable(name)
		f.WaitObservation(name)
	}
	for i := range 3 {
		name := fmt.Sprintf("own-%d", i)
		per := writesPerRestart(t, f, 1, func() { f.SetSecret(name, map[string]string{"v": "2"}) }, "deployment-"+name)
		if per > noBudgetWrites {
			t.Errorf("a single change of %s wrote %.0f times, want at most %d", name, per, noBudgetWrites)
		}
	}
}

// With a budget, each restart also records its wait for a slot.
func TestACappedRestartWritesLittle(t *testing.T) {
	f := fixture.Setup(t)
	f.Policy("two-at-a-time", `
discovery: {workloadSelector: {}}
restart: {maxConcurrent: 2, minInterval: 0s}`)
	const n = 6
	consumers(f, f.NS, "shared", n)
	per := writesPerRestart(t, f, n, func() { f.SetSecret("shared", map[string]string{"v": "2"}) }, appRequests(n)...)
	if per > cappedWrites {
		t.Errorf("a fan-out through 2 slots wrote %.2f times per restart, want at most %d", per, cappedWrites)
	}
}

const (
	noBudgetWrites = 4
	cappedWrites   = 8
)
