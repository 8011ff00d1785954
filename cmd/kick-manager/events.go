package main

import (
	"context"
	"fmt"

	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/kick-operator/kick/restart/recorder"
)

// Restart Events go through a client of their own, throttled to
// restartEventQPS after a burst of restartEventBurst, so a burst of 200
// restarts and their 400 Events do not compete for the API server: the
// restarts go first and their Events follow within seconds; ordinary
// traffic never waits. The recorder holds at most its queue of Events
// meanwhile (package recorder).
const (
	restartEventQPS   = 20
	restartEventBurst = 50
)

// newThrottledRecorders starts an Event recorder on its own throttled
// client; it stops when ctx ends.
func newThrottledRecorders(ctx context.Context, cfg *rest.Config, scheme *k8sruntime.Scheme) (*recorder.Broadcaster, error) {
	throttled := rest.CopyConfig(cfg)
	throttled.QPS, throttled.Burst = restartEventQPS, restartEventBurst
	cs, err := kubernetes.NewForConfig(throttled)
	if err != nil {
		return nil, fmt.Errorf("event client: %w", err)
	}
	b, err := recorder.New(recorder.Options{Client: cs.EventsV1(), Scheme: scheme, Registerer: metrics.Registry})
	if err != nil {
		return nil, err
	}
	b.Start(ctx)
	return b, nil
}
