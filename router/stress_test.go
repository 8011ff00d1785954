package router

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"testing"
)

// TestConcurrentStress runs many publishers and subscribers (plus subscribe/close churn) under the
// race detector and checks, per subscriber, per-publisher FIFO order and exact accounting:
// consumed + dropped == matching published == delivered.
func TestConcurrentStress(t *testing.T) {
	const publishers, perPublisher = 8, 1500
	r, reg := newRouter(t)
	isSentinel := func(ev Event) bool { g, ok := ev.(GateChanged); return ok && g.Provider == "sentinel" }
	sourcesOnly := func(ev Event) bool { return ev.Kind() == KindSourceChanged || isSentinel(ev) }
	phasesOnly := func(ev Event) bool { return ev.Kind() == KindPhaseChanged || isSentinel(ev) }

	type spec struct {
		name     string
		policy   QueuePolicy
		capacity int
		filter   func(Event) bool
		slow     bool
		want     int // matching events published (sentinel excluded)
	}
	// Even publishers send SourceChanged, odd ones PhaseChanged.
	half := publishers / 2 * perPublisher
	specs := []spec{
		{"block-all", Block, 4, nil, false, publishers * perPublisher},
		{"block-sources", Block, 1, sourcesOnly, true, half},
		{"drop-all", DropOldest, 3, nil, true, publishers * perPublisher},
		{"drop-phases", DropOldest, 16, phasesOnly, false, half},
		{"drop-slow", DropOldest, 2, nil, true, publishers * perPublisher},
	}

	type result struct {
		name     string
		consumed int
		err      error
	}
	results := make(chan result, len(specs))
	for _, sp := range specs {
		s := subscribe(t, r, sp.name, sp.policy, sp.capacity, sp.filter)
		go func() {
			last := map[string]int{}
			res := result{name: sp.name}
			defer func() { results <- res }()
			for {
				ev, err := s.Next(context.Background())
				if err != nil {
					res.err = err
					return
				}
				if isSentinel(ev) {
					return
				}
				pub, n, err := seq(ev)
				if err != nil {
					res.err = err
					return
				}
				prev, seen := last[pub]
				switch {
				case sp.policy == Block && n != prev+1 && !(n == 0 && !seen):
					res.err = fmt.Errorf("from %s got %d after %d (block subscribers lose nothing)", pub, n, prev)
					return
				case seen && n <= prev:
					res.err = fmt.Errorf("from %s got %d after %d (FIFO)", pub, n, prev)
					return
				}
				last[pub] = n
				res.consumed++
				if sp.slow {
					runtime.Gosched()
				}
			}
		}()
	}

	stop := make(chan struct{})
	churnDone := make(chan error, 1)
	go func() { // subscribers coming and going while events flow
		for i := 0; ; i++ {
			select {
			case <-stop:
				churnDone <- nil
				return
			default:
			}
			policy := DropOldest
			if i%2 == 1 {
				policy = Block // nobody consumes it: publishers wait on it until Close
			}
			s, err := r.Subscribe("churn", policy, 1, nil)
			if err != nil {
				churnDone <- err
				return
			}
			runtime.Gosched()
			s.Close()
		}
	}()

	var wg sync.WaitGroup
	errs := make(chan error, publishers)
	for p := range publishers {
		wg.Go(func() {
			name := "p" + strconv.Itoa(p)
			for i := range perPublisher {
				ev := src(name, i)
				if p%2 == 1 {
					ev = phase(name, i)
				}
				if err := r.Publish(context.Background(), ev); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	if err := receive(t, churnDone, "churn to stop"); err != nil {
		t.Fatalf("churn: %v", err)
	}
	select {
	case err := <-errs:
		t.Fatalf("Publish: %v", err)
	default:
	}
	// The sentinel is the newest event everywhere, so it is never dropped, and once a consumer
	// reaches it every earlier event was either consumed or dropped.
	publish(t, r, GateChanged{Provider: "sentinel"})

	byName := map[string]spec{}
	for _, sp := range specs {
		byName[sp.name] = sp
	}
	for range specs {
		res := receive(t, results, "consumers to reach the sentinel")
		if res.err != nil {
			t.Errorf("%s: %v", res.name, res.err)
			continue
		}
		sp := byName[res.name]
		dropped := int(metric(t, reg, "kick_router_dropped_total", res.name))
		delivered := int(metric(t, reg, "kick_router_delivered_total", res.name))
		if res.consumed+dropped != sp.want {
			t.Errorf("%s: consumed %d + dropped %d = %d, want %d", res.name, res.consumed, dropped, res.consumed+dropped, sp.want)
		}
		if delivered != sp.want+1 { // + sentinel
			t.Errorf("%s: delivered %d, want %d", res.name, delivered, sp.want+1)
		}
		if sp.policy == Block && dropped != 0 {
			t.Errorf("%s: block subscriber dropped %d", res.name, dropped)
		}
		if depth := metric(t, reg, "kick_router_queue_depth", res.name); depth != 0 {
			t.Errorf("%s: queue depth %v after draining", res.name, depth)
		}
		t.Logf("%s: consumed %d, dropped %d", res.name, res.consumed, dropped)
	}
	for kind, want := range map[EventKind]float64{KindSourceChanged: float64(half), KindPhaseChanged: float64(half), KindGateChanged: 1} {
		if got := metric(t, reg, "kick_router_published_total", string(kind)); got != want {
			t.Errorf("published{%s} = %v, want %v", kind, got, want)
		}
	}
}
