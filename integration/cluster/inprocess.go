package cluster

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// InProcessManager returns a controller-runtime manager for one test: the
// shared control plane, the Env's scheme, a cache that sees only
// namespace, and no metrics endpoint, probes or leader election. mutate may
// adjust the options (a logger, cache transforms). Start it with
// RunManager once the controllers under test are registered.
func (e *Env) InProcessManager(t testing.TB, namespace string, mutate func(*ctrl.Options)) ctrl.Manager {
	t.Helper()
	opts := ctrl.Options{
		Scheme:                 e.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{namespace: {}}},
		// Every test registers the same controller names again.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	}
	if mutate != nil {
		mutate(&opts)
	}
	mgr, err := ctrl.NewManager(e.Config, opts)
	if err != nil {
		t.Fatal(err)
	}
	return mgr
}

// RunManager starts mgr and stops it when the test ends, failing the test
// if it returns an error or does not stop within 30 seconds. Cleanups
// registered after this call run before the manager stops.
func RunManager(t testing.TB, mgr ctrl.Manager) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-stopped:
			if err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("manager: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("the manager did not stop within 30s")
		}
	})
}
