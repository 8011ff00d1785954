package router

import (
	"context"
	"testing"
)

// BenchmarkPublish fans events out to one block subscriber and three drop-oldest subscribers, each
// drained by its own goroutine (the production shape: restart driver, two sinks, timeline).
func BenchmarkPublish(b *testing.B) {
	r, _ := newRouter(b)
	subs := []*Subscription{subscribe(b, r, "driver", Block, 1024, nil)}
	for _, name := range []string{"webhooks", "slack", "timeline"} {
		subs = append(subs, subscribe(b, r, name, DropOldest, 256, nil))
	}
	done := make(chan struct{}, len(subs))
	for _, s := range subs {
		go func() {
			_ = s.Run(context.Background(), func(context.Context, Event) {})
			done <- struct{}{}
		}()
	}
	ev := src("p", 1)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := r.Publish(ctx, ev); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	r.Close()
	for range subs {
		<-done
	}
}
