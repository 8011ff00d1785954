package router

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestFIFOOrder(t *testing.T) {
	r, _ := newRouter(t)
	block := subscribe(t, r, "block", Block, 100, nil)
	drop := subscribe(t, r, "drop", DropOldest, 100, nil)
	for i := range 100 {
		publish(t, r, src("p", i))
	}
	for _, s := range []*Subscription{block, drop} {
		if s.Len() != 100 {
			t.Fatalf("%s: Len = %d, want 100", s.Name(), s.Len())
		}
		for i := range 100 {
			if _, n := origin(t, next(t, s)); n != i {
				t.Fatalf("%s: event %d has sequence %d", s.Name(), i, n)
			}
		}
	}
}

func TestFilter(t *testing.T) {
	r, reg := newRouter(t)
	all := subscribe(t, r, "all", DropOldest, 10, nil)
	phases := subscribe(t, r, "phases", Block, 10, func(ev Event) bool { return ev.Kind() == KindPhaseChanged })
	publish(t, r, src("p", 1))
	publish(t, r, phase("p", 2))
	publish(t, r, GateChanged{Provider: "flux"})
	if all.Len() != 3 || phases.Len() != 1 {
		t.Fatalf("Len: all %d (want 3), phases %d (want 1)", all.Len(), phases.Len())
	}
	if ev := next(t, phases); ev.Kind() != KindPhaseChanged {
		t.Fatalf("phases got %s", ev.Kind())
	}
	for name, want := range map[string]float64{"all": 3, "phases": 1} {
		if got := metric(t, reg, "kick_router_delivered_total", name); got != want {
			t.Errorf("delivered{%s} = %v, want %v", name, got, want)
		}
	}
	for kind, want := range map[EventKind]float64{KindSourceChanged: 1, KindPhaseChanged: 1, KindGateChanged: 1} {
		if got := metric(t, reg, "kick_router_published_total", string(kind)); got != want {
			t.Errorf("published{%s} = %v, want %v", kind, got, want)
		}
	}
}

func TestBlockBackPressure(t *testing.T) {
	r, reg := newRouter(t)
	waiting := make(chan string, 16)
	r.onWait = func(name string) { waiting <- name }
	s := subscribe(t, r, "driver", Block, 2, nil)
	publish(t, r, src("p", 1))
	publish(t, r, src("p", 2))
	if got := metric(t, reg, "kick_router_publish_wait_seconds", ""); got != 0 {
		t.Fatalf("publishes with room were counted as waits: %v", got)
	}

	done := make(chan error, 1)
	go func() { done <- r.Publish(context.Background(), src("p", 3)) }()
	if name := receive(t, waiting, "the third Publish to wait"); name != "driver" {
		t.Fatalf("Publish waits on %q, want driver", name)
	}
	select {
	case err := <-done:
		t.Fatalf("third Publish returned (%v) while the queue was full", err)
	default:
	}
	if _, n := origin(t, next(t, s)); n != 1 {
		t.Fatalf("first event is %d", n)
	}
	if err := receive(t, done, "the third Publish to finish"); err != nil {
		t.Fatalf("third Publish: %v", err)
	}
	for want := 2; want <= 3; want++ {
		if _, n := origin(t, next(t, s)); n != want {
			t.Fatalf("got event %d, want %d", n, want)
		}
	}
	if got := metric(t, reg, "kick_router_publish_wait_seconds", ""); got != 1 {
		t.Errorf("publish_wait_seconds count = %v, want 1", got)
	}
	if got := metric(t, reg, "kick_router_dropped_total", "driver"); got != 0 {
		t.Errorf("a block subscriber dropped %v events", got)
	}
}

func TestBlockPublishContextCancel(t *testing.T) {
	r, _ := newRouter(t)
	waiting := make(chan string, 16)
	r.onWait = func(name string) { waiting <- name }
	a := subscribe(t, r, "driver-a", Block, 1, nil)
	b := subscribe(t, r, "driver-b", Block, 1, nil)
	sink := subscribe(t, r, "sink", DropOldest, 4, nil)
	publish(t, r, src("p", 1))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- r.Publish(ctx, src("p", 2)) }()
	receive(t, waiting, "Publish to wait")
	// The drop-oldest subscriber already has the event while the publisher waits.
	for want := 1; want <= 2; want++ {
		if _, n := origin(t, next(t, sink)); n != want {
			t.Fatalf("sink got %d, want %d", n, want)
		}
	}
	cancel()
	err := receive(t, done, "Publish to return after cancel")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	var pe *PublishError
	if !errors.As(err, &pe) || !slices.Equal(pe.Subscribers, []string{"driver-a", "driver-b"}) {
		t.Fatalf("err = %#v, want a PublishError naming driver-a and driver-b", err)
	}
	if !strings.Contains(err.Error(), "driver-a") {
		t.Errorf("error text %q does not name the subscriber", err)
	}
	if a.Len() != 1 || b.Len() != 1 {
		t.Errorf("Len a=%d b=%d, want 1 and 1 (event 2 not queued)", a.Len(), b.Len())
	}

	// A deadline works the same way.
	dctx, dcancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer dcancel()
	if err := r.Publish(dctx, src("p", 3)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want context.DeadlineExceeded", err)
	}
}

func TestDropOldest(t *testing.T) {
	r, reg := newRouter(t)
	s := subscribe(t, r, "timeline", DropOldest, 10, nil)
	for i := range 1000 {
		publish(t, r, src("p", i))
	}
	if s.Len() != 10 {
		t.Fatalf("Len = %d, want 10", s.Len())
	}
	for want := 990; want < 1000; want++ {
		if _, n := origin(t, next(t, s)); n != want {
			t.Fatalf("got %d, want %d", n, want)
		}
	}
	for name, want := range map[string]float64{
		"kick_router_dropped_total":   990,
		"kick_router_delivered_total": 1000,
		"kick_router_queue_depth":     0,
	} {
		if got := metric(t, reg, name, "timeline"); got != want {
			t.Errorf("%s{timeline} = %v, want %v", name, got, want)
		}
	}
	if got := metric(t, reg, "kick_router_published_total", "SourceChanged"); got != 1000 {
		t.Errorf("published = %v, want 1000", got)
	}
}

func TestStalledDropOldestDoesNotSlowOthers(t *testing.T) {
	const n = 10000
	r, reg := newRouter(t)
	slow := subscribe(t, r, "slack", DropOldest, 8, nil)
	driver := subscribe(t, r, "driver", Block, 16, func(ev Event) bool { return ev.Kind() == KindSourceChanged })

	started, release := make(chan struct{}), make(chan struct{})
	slowDone := make(chan error, 1)
	go func() {
		first := true
		slowDone <- slow.Run(context.Background(), func(context.Context, Event) {
			if first {
				first = false
				close(started)
				<-release // stalled until the test ends
			}
		})
	}()
	driverDone := make(chan error, 1)
	go func() {
		want := 0
		for want < n {
			ev, err := driver.Next(context.Background())
			if err != nil {
				driverDone <- err
				return
			}
			if _, got, err := seq(ev); err != nil || got != want {
				driverDone <- fmt.Errorf("driver got %v (%v), want %d", got, err, want)
				return
			}
			want++
		}
		driverDone <- nil
	}()

	publish(t, r, phase("warmup", 0))
	receive(t, started, "the slow consumer to stall")
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	for i := range n {
		if err := r.Publish(ctx, src("p", i)); err != nil {
			t.Fatalf("Publish %d: %v", i, err)
		}
	}
	if err := receive(t, driverDone, "the driver to receive all events"); err != nil {
		t.Fatal(err)
	}
	if got := metric(t, reg, "kick_router_dropped_total", "slack"); got != n-8 {
		t.Errorf("slack dropped %v, want %d", got, n-8)
	}
	if slow.Len() != 8 {
		t.Errorf("slack Len = %d, want 8", slow.Len())
	}
	close(release)
	slow.Close()
	if err := receive(t, slowDone, "Run to return after Close"); err != nil {
		t.Errorf("Run: %v", err)
	}
}

func TestSubscriptionCloseUnblocksPublisher(t *testing.T) {
	r, reg := newRouter(t)
	waiting := make(chan string, 16)
	r.onWait = func(name string) { waiting <- name }
	s := subscribe(t, r, "driver", Block, 1, nil)
	publish(t, r, src("p", 1))
	done := make(chan error, 1)
	go func() { done <- r.Publish(context.Background(), src("p", 2)) }()
	receive(t, waiting, "Publish to wait")
	s.Close()
	if err := receive(t, done, "Publish to return after Close"); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	if _, err := s.Next(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Next after Close: %v, want ErrClosed", err)
	}
	publish(t, r, src("p", 3)) // skips the closed subscriber
	if got := metric(t, reg, "kick_router_delivered_total", "driver"); got != 1 {
		t.Errorf("delivered = %v, want 1", got)
	}
	if s.Len() != 0 {
		t.Errorf("Len after Close = %d", s.Len())
	}
	s.Close() // idempotent
	again := subscribe(t, r, "driver", Block, 1, nil)
	publish(t, r, src("p", 4))
	if _, n := origin(t, next(t, again)); n != 4 {
		t.Errorf("resubscribed driver got %d, want 4", n)
	}
}

func TestRouterClose(t *testing.T) {
	r, _ := newRouter(t)
	waiting := make(chan string, 16)
	r.onWait = func(name string) { waiting <- name }
	full := subscribe(t, r, "driver", Block, 1, nil)
	idle := subscribe(t, r, "idle", DropOldest, 1, func(Event) bool { return false })
	publish(t, r, src("p", 1))

	pubDone := make(chan error, 1)
	go func() { pubDone <- r.Publish(context.Background(), src("p", 2)) }()
	runDone := make(chan error, 1)
	go func() { runDone <- idle.Run(context.Background(), func(context.Context, Event) {}) }()
	receive(t, waiting, "Publish to wait")

	r.Close()
	if err := receive(t, pubDone, "Publish to return after Router.Close"); err != nil {
		t.Errorf("waiting Publish: %v", err)
	}
	if err := receive(t, runDone, "Run to return after Router.Close"); err != nil {
		t.Errorf("Run: %v", err)
	}
	if _, err := full.Next(context.Background()); !errors.Is(err, ErrClosed) {
		t.Errorf("Next: %v, want ErrClosed", err)
	}
	if err := r.Publish(context.Background(), src("p", 3)); !errors.Is(err, ErrClosed) {
		t.Errorf("Publish after Close: %v, want ErrClosed", err)
	}
	if _, err := r.Subscribe("late", Block, 1, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Subscribe after Close: %v, want ErrClosed", err)
	}
	r.Close() // idempotent
}

func TestSubscribeValidation(t *testing.T) {
	r, _ := newRouter(t)
	subscribe(t, r, "a", Block, 1, nil)
	for _, tc := range []struct {
		name     string
		policy   QueuePolicy
		capacity int
	}{
		{"a", DropOldest, 1}, // duplicate
		{"", Block, 1},
		{"b", QueuePolicy(0), 1},
		{"b", Block, 0},
	} {
		if _, err := r.Subscribe(tc.name, tc.policy, tc.capacity, nil); err == nil {
			t.Errorf("Subscribe(%q, %v, %d) succeeded", tc.name, tc.policy, tc.capacity)
		}
	}
	if err := r.Publish(context.Background(), nil); err == nil {
		t.Error("Publish(nil) succeeded")
	}
}

func TestNextAndRunHonourContext(t *testing.T) {
	r, _ := newRouter(t)
	s := subscribe(t, r, "s", DropOldest, 1, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Next(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Next: %v", err)
	}
	publish(t, r, src("p", 1))
	if ev, err := s.Next(ctx); err != nil || ev == nil {
		t.Errorf("Next with a queued event and a done context: %v, %v (queued events come first)", ev, err)
	}
	if err := s.Run(ctx, func(context.Context, Event) { t.Error("handler called") }); !errors.Is(err, context.Canceled) {
		t.Errorf("Run: %v", err)
	}
}

func TestSeveralConsumersShareOneSubscription(t *testing.T) {
	const consumers, events = 4, 200
	r, _ := newRouter(t)
	s := subscribe(t, r, "pool", Block, 8, nil)
	got := make(chan int, consumers)
	for range consumers {
		go func() {
			n := 0
			for {
				ev, err := s.Next(context.Background())
				if _, ok := ev.(GateChanged); ok || err != nil { // sentinel: one per consumer
					got <- n
					return
				}
				n++
			}
		}()
	}
	for i := range events {
		publish(t, r, src("p", i))
	}
	for range consumers {
		publish(t, r, GateChanged{Provider: "sentinel"})
	}
	total := 0
	for range consumers {
		total += receive(t, got, "a consumer to finish")
	}
	if total != events {
		t.Fatalf("consumed %d events, want %d", total, events)
	}
}

func TestMetricsAndLogging(t *testing.T) {
	// Two routers may share a registry; a nil registerer is allowed.
	r1, reg := newRouter(t)
	var logs []string
	r2 := New(Options{Registerer: reg, Log: func(msg string, kv ...any) { logs = append(logs, msg) }})
	defer r2.Close()
	r3 := New(Options{})
	defer r3.Close()
	subscribe(t, r1, "one", DropOldest, 1, nil)
	s := subscribe(t, r2, "two", DropOldest, 1, nil)
	subscribe(t, r3, "three", DropOldest, 1, nil)

	for i := range 5 {
		publish(t, r2, src("p", i))
	}
	if len(logs) != 1 {
		t.Fatalf("logged %d times while dropping, want once: %q", len(logs), logs)
	}
	next(t, s) // drains the queue: congestion ends
	publish(t, r2, src("p", 5))
	publish(t, r2, src("p", 6))
	if len(logs) != 2 {
		t.Fatalf("logged %d times, want 2 (again after draining)", len(logs))
	}
	if got := metric(t, reg, "kick_router_dropped_total", "two"); got != 5 {
		t.Errorf("dropped{two} = %v, want 5", got)
	}
	if got := metric(t, reg, "kick_router_queue_depth", "two"); got != 1 {
		t.Errorf("queue_depth{two} = %v, want 1", got)
	}
	if got := metric(t, reg, "kick_router_published_total", "SourceChanged"); got != 7 {
		t.Errorf("published = %v, want 7", got)
	}
}

// TestSubscriptionFamily: subscriptions that share a metrics label share its series, and each
// tells its owner which events its full drop-oldest queue discarded.
func TestSubscriptionFamily(t *testing.T) {
	r, reg := newRouter(t)
	var lostA, lostB []int
	a := subscribe(t, r, "notifications/a", DropOldest, 2, nil, MetricsLabel("notifications"),
		OnDrop(func(ev Event) { _, n := origin(t, ev); lostA = append(lostA, n) }))
	b := subscribe(t, r, "notifications/b", DropOldest, 4, nil, MetricsLabel("notifications"),
		OnDrop(func(ev Event) { _, n := origin(t, ev); lostB = append(lostB, n) }))
	for i := range 5 {
		publish(t, r, src("p", i))
	}
	if !slices.Equal(lostA, []int{0, 1, 2}) || !slices.Equal(lostB, []int{0}) {
		t.Fatalf("dropped: a %v (want 0 1 2), b %v (want 0)", lostA, lostB)
	}
	for name, want := range map[string]float64{
		"kick_router_dropped_total":   4,
		"kick_router_delivered_total": 10,
		"kick_router_queue_depth":     6, // 2 + 4
	} {
		if got := metric(t, reg, name, "notifications"); got != want {
			t.Errorf("%s{notifications} = %v, want %v", name, got, want)
		}
		if got := metric(t, reg, name, "notifications/a"); got != 0 {
			t.Errorf("%s has a series for the subscription name: %v", name, got)
		}
	}
	next(t, b)
	a.Close()
	if got := metric(t, reg, "kick_router_queue_depth", "notifications"); got != 3 {
		t.Errorf("queue_depth after one read and closing a = %v, want 3 (b's queue)", got)
	}
	// A block queue never drops, so its OnDrop is never called.
	blocked := subscribe(t, r, "driver", Block, 1, nil, OnDrop(func(Event) { t.Error("a block queue dropped") }))
	publish(t, r, src("q", 1))
	next(t, blocked)
}
