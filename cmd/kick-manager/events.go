package main

import (
	"context"
	"fmt"

	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
)

// Restart Events go through a client of their own, throttled to
// restartEventQPS after a burst of restartEventBurst: client-go sends every
// Event from a goroutine of its own as soon as it is recorded, so a burst of
// 200 restarts would otherwise send 400 Events at once, competing with the
// restarts themselves for the API server. Throttled, the restarts go first
// and their Events follow within seconds; ordinary traffic never waits.
const (
	restartEventQPS   = 20
	restartEventBurst = 50
)

// throttledRecorders starts an Event broadcaster on its own throttled
// client; it stops when ctx ends.
type throttledRecorders struct {
	broadcaster events.EventBroadcaster
	scheme      *k8sruntime.Scheme
}

func newThrottledRecorders(ctx context.Context, cfg *rest.Config, scheme *k8sruntime.Scheme) (*throttledRecorders, error) {
	throttled := rest.CopyConfig(cfg)
	throttled.QPS, throttled.Burst = restartEventQPS, restartEventBurst
	cs, err := kubernetes.NewForConfig(throttled)
	if err != nil {
		return nil, fmt.Errorf("event client: %w", err)
	}
	b := events.NewBroadcaster(&events.EventSinkImpl{Interface: cs.EventsV1()})
	if err := b.StartRecordingToSinkWithContext(ctx); err != nil {
		return nil, fmt.Errorf("start the event broadcaster: %w", err)
	}
	go func() { <-ctx.Done(); b.Shutdown() }()
	return &throttledRecorders{broadcaster: b, scheme: scheme}, nil
}

// For returns a recorder reporting as the named component.
func (t *throttledRecorders) For(component string) events.EventRecorder {
	return t.broadcaster.NewRecorder(t.scheme, component)
}
