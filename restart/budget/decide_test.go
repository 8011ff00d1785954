package budget

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)

func newWaiter(ns, name, policy string, limit int, change time.Duration) Waiter {
	return Waiter{Key: ns + "/" + name, Namespace: ns, Policy: policy, PolicyLimit: limit, Change: t0.Add(change)}
}

func usage(byPolicy map[string]int) Usage {
	u := Usage{ByNamespace: map[string]int{}, ByPolicy: byPolicy}
	for k, n := range byPolicy {
		ns, _, _ := strings.Cut(k, "/")
		u.ByNamespace[ns] += n
		u.Total += n
	}
	return u
}

func TestPolicyCapHoldsAndSaysHowMany(t *testing.T) {
	var waiting []Waiter
	for i := range 37 {
		waiting = append(waiting, newWaiter("shop", fmt.Sprintf("w%d", i), "web-tls", 5, time.Duration(i)))
	}
	v := Decide(State{Usage: usage(map[string]int{"shop/web-tls": 5}), Waiting: waiting}, waiting[0])
	if v.Granted {
		t.Fatal("granted a sixth restart under maxConcurrent 5")
	}
	if want := "5 of 5 restarts of KickPolicy web-tls in progress (restart.maxConcurrent); 37 waiting"; v.Message != want {
		t.Fatalf("message %q, want %q", v.Message, want)
	}
	v = Decide(State{Usage: usage(map[string]int{"shop/web-tls": 4}), Waiting: waiting}, waiting[0])
	if !v.Granted || v.Message != "restart slot 5 of 5 of KickPolicy web-tls" {
		t.Fatalf("the oldest waiter with one slot free: %+v", v)
	}
}

func TestPolicyOldestChangeGoesFirst(t *testing.T) {
	older := newWaiter("shop", "a", "p", 2, 0)
	younger := newWaiter("shop", "b", "p", 2, time.Second)
	s := State{Usage: usage(map[string]int{"shop/p": 1}), Waiting: []Waiter{older, younger}}
	if v := Decide(s, younger); v.Granted {
		t.Fatalf("the younger change took the last slot ahead of the older one: %+v", v)
	} else if !strings.Contains(v.Message, "1 requests with older changes go first") {
		t.Fatalf("message %q", v.Message)
	}
	if v := Decide(s, older); !v.Granted {
		t.Fatalf("the oldest change was refused: %+v", v)
	}
	// Another policy's waiters do not queue ahead.
	other := newWaiter("shop", "c", "q", 2, -time.Hour)
	s.Waiting = append(s.Waiting, other)
	if v := Decide(s, older); !v.Granted {
		t.Fatalf("a waiter of another policy held this policy's slot: %+v", v)
	}
}

func TestNoCapGrants(t *testing.T) {
	w := newWaiter("a", "x", "p", 0, 0)
	if v := Decide(State{Usage: usage(map[string]int{"a/p": 1000})}, w); !v.Granted {
		t.Fatalf("no cap, refused: %+v", v)
	}
}

func TestClusterCapHolds(t *testing.T) {
	w := newWaiter("a", "x", "p", 0, 0)
	v := Decide(State{ClusterLimit: 3, Usage: usage(map[string]int{"a/p": 2, "b/q": 1}), Waiting: []Waiter{w}}, w)
	if v.Granted || v.Message != "3 of 3 restarts in progress in the cluster (--max-concurrent-restarts); 1 waiting" {
		t.Fatalf("%+v", v)
	}
}

// A namespace with 500 waiting requests never starves one with a single
// request: run the cluster queue one grant at a time (each restart ends
// before the next grant) and see when the lone request is served.
func TestClusterTurnsAreFair(t *testing.T) {
	var waiting []Waiter
	for i := range 500 {
		waiting = append(waiting, newWaiter("busy", fmt.Sprintf("w%03d", i), "p", 0, time.Duration(i)))
	}
	lone := newWaiter("quiet", "only", "p", 0, time.Hour) // its change is the newest
	lastGrant := map[string]time.Time{}
	now := t0
	served := 0
	for round := 0; round < 10; round++ {
		if round == 3 {
			waiting = append(waiting, lone)
		}
		s := State{ClusterLimit: 1, Usage: usage(nil), Waiting: waiting, LastGrant: lastGrant}
		var granted *Waiter
		for i := range waiting {
			if Decide(s, waiting[i]).Granted {
				if granted != nil {
					t.Fatalf("round %d: two requests granted the one slot", round)
				}
				granted = &waiting[i]
			}
		}
		if granted == nil {
			t.Fatalf("round %d: the free slot was given to nobody", round)
		}
		now = now.Add(time.Second)
		lastGrant[granted.Namespace] = now
		if granted.Key == lone.Key {
			served = round
			break
		}
		waiting = slices.DeleteFunc(waiting, func(w Waiter) bool { return w.Key == granted.Key })
	}
	if served == 0 || served > 4 {
		t.Fatalf("the lone request of namespace quiet was served in round %d; it started waiting in round 3", served)
	}
}

func TestClusterShareKeepsANamespaceFromTakingEverySlot(t *testing.T) {
	busy := []Waiter{newWaiter("busy", "a", "p", 0, 0), newWaiter("busy", "b", "p", 0, 1)}
	quiet := newWaiter("quiet", "c", "p", 0, time.Hour)
	// busy holds 3 of 4 slots; share is 2 with two namespaces active.
	s := State{ClusterLimit: 4, Usage: usage(map[string]int{"busy/p": 3}), Waiting: append(busy, quiet),
		LastGrant: map[string]time.Time{"quiet": t0.Add(time.Minute)}}
	if v := Decide(s, busy[0]); v.Granted {
		t.Fatalf("busy took a fourth slot while quiet waits: %+v", v)
	}
	if v := Decide(s, quiet); !v.Granted {
		t.Fatalf("quiet refused: %+v", v)
	}
}

func TestPickLeavesNoSlotIdle(t *testing.T) {
	// a and b are both past their share (limit 10, three namespaces active:
	// share 4), c holds one and waits for nothing: the free slot still goes.
	w := []Waiter{newWaiter("a", "x", "p", 0, 0), newWaiter("b", "y", "p", 0, 1)}
	u := usage(map[string]int{"a/p": 4, "b/p": 4, "c/p": 1})
	if got := Pick(10, u, w, nil); len(got) != 1 {
		t.Fatalf("picked %v for one free slot", got)
	}
}

func TestWaitersOfAFullPolicyDoNotHoldClusterSlots(t *testing.T) {
	blocked := newWaiter("a", "x", "full", 1, 0) // its policy has its one slot in use
	ready := newWaiter("b", "y", "p", 0, time.Hour)
	s := State{ClusterLimit: 2, Usage: usage(map[string]int{"a/full": 1}), Waiting: []Waiter{blocked, ready},
		LastGrant: map[string]time.Time{"b": t0}}
	if v := Decide(s, ready); !v.Granted {
		t.Fatalf("a waiter whose policy is full held the cluster's free slot: %+v", v)
	}
}

func TestPickGivesEachNamespaceOneBeforeAnySecond(t *testing.T) {
	var w []Waiter
	for _, ns := range []string{"a", "b", "c"} {
		for i := range 3 {
			w = append(w, newWaiter(ns, fmt.Sprint(i), "p", 0, time.Duration(i)))
		}
	}
	got := Pick(3, usage(nil), w, nil)
	seen := map[string]bool{}
	for _, k := range got {
		ns, _, _ := strings.Cut(k, "/")
		if seen[ns] {
			t.Fatalf("picked %v: namespace %s twice before every namespace had one", got, ns)
		}
		seen[ns] = true
	}
	if len(got) != 3 {
		t.Fatalf("picked %v for three free slots", got)
	}
}
