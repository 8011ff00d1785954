package router

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// testTimeout bounds every wait in the tests, so a bug fails fast instead of hanging.
const testTimeout = 5 * time.Second

func newRouter(t testing.TB) (*Router, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	r := New(Options{Registerer: reg})
	t.Cleanup(r.Close)
	return r, reg
}

func subscribe(t testing.TB, r *Router, name string, p QueuePolicy, capacity int, filter func(Event) bool, opts ...SubscribeOption) *Subscription {
	t.Helper()
	s, err := r.Subscribe(name, p, capacity, filter, opts...)
	if err != nil {
		t.Fatalf("Subscribe(%q): %v", name, err)
	}
	return s
}

// src is a SourceChanged event numbered i (Source.Name), published by publisher p (Source.Namespace).
func src(p string, i int) Event {
	return SourceChanged{Source: ObjectRef{APIVersion: "v1", Kind: "Secret", Namespace: p, Name: strconv.Itoa(i)}, Class: ClassRelevant}
}

// phase is a PhaseChanged event numbered i, published by publisher p.
func phase(p string, i int) Event {
	return PhaseChanged{Request: RequestRef{Namespace: p, Name: strconv.Itoa(i)}, To: "Pending"}
}

// seq returns the publisher and sequence number of an event made by src or phase.
func seq(ev Event) (pub string, n int, err error) {
	var name string
	switch e := ev.(type) {
	case SourceChanged:
		pub, name = e.Source.Namespace, e.Source.Name
	case PhaseChanged:
		pub, name = e.Request.Namespace, e.Request.Name
	default:
		return "", 0, fmt.Errorf("unexpected event %T %s", ev, ev.Key())
	}
	n, err = strconv.Atoi(name)
	return pub, n, err
}

// origin is seq for the test goroutine.
func origin(t testing.TB, ev Event) (string, int) {
	t.Helper()
	pub, n, err := seq(ev)
	if err != nil {
		t.Fatal(err)
	}
	return pub, n
}

func publish(t testing.TB, r *Router, ev Event) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := r.Publish(ctx, ev); err != nil {
		t.Fatalf("Publish(%s): %v", ev.Key(), err)
	}
}

func next(t testing.TB, s *Subscription) Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	ev, err := s.Next(ctx)
	if err != nil {
		t.Fatalf("Next(%s): %v", s.Name(), err)
	}
	return ev
}

// receive waits for a value on ch, failing the test after testTimeout.
func receive[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(testTimeout):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// metric reads a counter, gauge, or histogram sample count from the registry; label is the value of
// the metric's only label ("" for an unlabelled metric). Missing series read as 0.
func metric(t testing.TB, g prometheus.Gatherer, name, label string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if label != "" && (len(m.GetLabel()) != 1 || m.GetLabel()[0].GetValue() != label) {
				continue
			}
			switch {
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				return float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return 0
}
