package request

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kick-operator/kick/restart/assess"
)

// The wake rule of a fan-out in waves: a completion wakes one waiter per
// group (its scout); only a scout that finds the wait over (the earlier
// wave now bakes, or is done) wakes the rest of its group, once. A fan-out
// of 500 workloads, 250 in each of two waves, costs O(N) wakes, not one
// per waiter per completion.
func TestWaveWakeRule(t *testing.T) {
	var w waveWaiters
	t0 := time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)
	rolling := groupOf("shop", "p", &assess.WaveHold{Source: "Secret/tls", Change: t0, Wave: 0})
	baking := groupOf("shop", "p", &assess.WaveHold{Source: "Secret/tls", Change: t0, Wave: 0, Baking: true})
	req := func(i int) types.NamespacedName {
		return types.NamespacedName{Namespace: "shop", Name: fmt.Sprintf("deployment-main-%03d", i)}
	}
	const waiters, earlier = 250, 250
	for i := range waiters {
		if wake := w.wait(req(i), rolling); len(wake) != 0 {
			t.Fatalf("joining a group woke %v", wake)
		}
	}
	if s := w.scouts("shop", "other"); len(s) != 0 {
		t.Errorf("another policy's completion woke %v", s)
	}
	wakes := 0
	for range earlier - 1 {
		// A request of the earlier wave finished; the wave still rolls
		// out: the scout looks and stays.
		scouts := w.scouts("shop", "p")
		if len(scouts) != 1 {
			t.Fatalf("scouts %v, want one per group", scouts)
		}
		wakes += len(scouts)
		if again := w.wait(scouts[0], rolling); len(again) != 0 {
			t.Fatalf("a scout that stays woke %v", again)
		}
	}
	// The last one finishes: the scout finds the wave baking and wakes
	// its group once; each waiter joins the baking group.
	scout := w.scouts("shop", "p")[0]
	wakes++
	rest := w.wait(scout, baking)
	if len(rest) != waiters-1 {
		t.Fatalf("the wave's end woke %d waiters, want the other %d", len(rest), waiters-1)
	}
	wakes += len(rest)
	for _, r := range rest {
		if again := w.wait(r, baking); len(again) != 0 {
			t.Fatalf("regrouping woke %v", again)
		}
	}
	// The bake ends: every waiter looks at that moment by itself; the first
	// to go wakes the others once, then nobody else is woken.
	first := w.leave(req(0))
	if len(first) != waiters-1 {
		t.Fatalf("the bake's end woke %d, want %d", len(first), waiters-1)
	}
	wakes += len(first)
	for i := 1; i < waiters; i++ {
		if again := w.leave(req(i)); len(again) != 0 {
			t.Fatalf("leaving a dissolved group woke %v", again)
		}
	}
	if limit := earlier + 3*waiters; wakes > limit {
		t.Errorf("%d wakes for %d completions and %d waiters, want at most %d", wakes, earlier, waiters, limit)
	}
	if len(w.seat) != 0 || len(w.groups) != 0 {
		t.Errorf("left behind: %d seats, %d fan-outs", len(w.seat), len(w.groups))
	}
}

// The waiters remembered are bounded, in all and per namespace: one
// tenant's fan-out leaves room for another's; past the bound a waiter
// relies on the wave poll.
func TestWaveWaitersBound(t *testing.T) {
	var w waveWaiters
	g := groupOf("shop", "p", &assess.WaveHold{Source: "Secret/tls"})
	for i := range maxNamespaceWaiters + 10 {
		w.wait(types.NamespacedName{Namespace: "shop", Name: fmt.Sprint(i)}, g)
	}
	if n := len(w.seat); n != maxNamespaceWaiters {
		t.Errorf("one namespace seated %d waiters, at most %d", n, maxNamespaceWaiters)
	}
	other := groupOf("bank", "p", &assess.WaveHold{Source: "Secret/tls"})
	w.wait(types.NamespacedName{Namespace: "bank", Name: "web"}, other)
	if _, ok := w.seat[types.NamespacedName{Namespace: "bank", Name: "web"}]; !ok {
		t.Error("another namespace found no seat")
	}
	for ns := 0; len(w.seat) < maxWaveWaiters; ns++ {
		for i := range maxNamespaceWaiters {
			w.wait(types.NamespacedName{Namespace: fmt.Sprint("ns-", ns), Name: fmt.Sprint(i)}, g)
		}
	}
	w.wait(types.NamespacedName{Namespace: "late", Name: "web"}, g)
	if n := len(w.seat); n > maxWaveWaiters {
		t.Errorf("%d waiters remembered, at most %d", n, maxWaveWaiters)
	}
	// Leaving frees the namespace's places.
	w.leave(types.NamespacedName{Namespace: "bank", Name: "web"})
	if n := w.seated["bank"]; n != 0 {
		t.Errorf("namespace bank still counts %d waiters", n)
	}
}

// Wave members read before a request of their namespace finished are not
// served after it, so the scout a completion wakes reads them afresh;
// another namespace's completion leaves them be (unless it shares the
// bucket).
func TestWaveCacheForgetsAtCompletion(t *testing.T) {
	var c waveCache
	t0 := time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)
	m := []assess.WaveMember{{Workload: "Deployment shop/canary"}}
	c.put("shop/p\x00Secret/tls", m, t0, c.epoch("shop"))
	if _, ok := c.get("shop/p\x00Secret/tls", t0, c.epoch("shop")); !ok {
		t.Fatal("not served before any completion")
	}
	other := "ns-0"
	for i := 1; epochBucket(other) == epochBucket("shop"); i++ {
		other = fmt.Sprintf("ns-%d", i)
	}
	c.completed(other)
	if _, ok := c.get("shop/p\x00Secret/tls", t0, c.epoch("shop")); !ok {
		t.Error("another namespace's completion dropped the members")
	}
	c.completed("shop")
	if _, ok := c.get("shop/p\x00Secret/tls", t0, c.epoch("shop")); ok {
		t.Error("served after a completion in its namespace")
	}
}
