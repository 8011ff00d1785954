package sinks

import (
	"context"
	"testing"
	"time"

	"github.com/kick-operator/kick/router"
)

func TestQueueDropsOldest(t *testing.T) {
	q := newQueue(2)
	ev := func(name string) router.PhaseChanged {
		return router.PhaseChanged{Request: router.RequestRef{Name: name}}
	}
	dropped := 0
	for _, n := range []string{"a", "b", "c", "d"} {
		if q.push(ev(n)) {
			dropped++
		}
	}
	if dropped != 2 || q.len() != 2 {
		t.Fatalf("dropped %d, len %d", dropped, q.len())
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	for _, want := range []string{"c", "d"} {
		got, ok := q.pop(ctx)
		if !ok || got.Request.Name != want {
			t.Fatalf("pop = %q, %v; want %q", got.Request.Name, ok, want)
		}
	}
	short, cancelShort := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancelShort()
	if _, ok := q.pop(short); ok {
		t.Fatal("pop from an empty queue returned an event")
	}
	go func() { time.Sleep(10 * time.Millisecond); q.push(ev("e")) }()
	if got, ok := q.pop(ctx); !ok || got.Request.Name != "e" {
		t.Fatalf("pop after waiting = %q, %v", got.Request.Name, ok)
	}
}
