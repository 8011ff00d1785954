package main

import (
	"bytes"
	"strings"
	"testing"

	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// The manager's logger, built as main builds it, writes the same line with
// its context as controller-runtime's own logger, but a reconcile's logger
// that writes nothing costs far less: its context is not encoded.
func TestManagerLoggerEncodesContextOnlyForLines(t *testing.T) {
	var lazyOut, eagerOut bytes.Buffer
	lazy := newLogger(&zap.Options{DestWriter: &lazyOut})
	eager := zap.New(zap.UseFlagOptions(&zap.Options{DestWriter: &eagerOut}))

	lazy.WithValues("controller", "observe-secret", "Secret", klog.KRef("team-a", "db")).
		WithValues("reconcileID", "6f1c").Info("source content changed", "consumers", 2)
	eager.WithValues("controller", "observe-secret", "Secret", klog.KRef("team-a", "db")).
		WithValues("reconcileID", "6f1c").Info("source content changed", "consumers", 2)
	strip := func(s string) string { // drop the timestamp, the only field that differs
		i := strings.Index(s, `"ts":`)
		j := strings.Index(s[i:], ",")
		return s[:i] + s[i+j+1:]
	}
	if got, want := strip(lazyOut.String()), strip(eagerOut.String()); got != want || !strings.Contains(got, `"reconcileID":"6f1c"`) {
		t.Fatalf("the manager's logger wrote\n%s\ncontroller-runtime's writes\n%s", got, want)
	}

	lazyAllocs := testing.AllocsPerRun(200, func() {
		lazy.WithValues("controller", "observe-secret", "Secret", klog.KRef("team-a", "db")).WithValues("reconcileID", "6f1c").V(1).Info("not written")
	})
	eagerAllocs := testing.AllocsPerRun(200, func() {
		eager.WithValues("controller", "observe-secret", "Secret", klog.KRef("team-a", "db")).WithValues("reconcileID", "6f1c").V(1).Info("not written")
	})
	if lazyAllocs >= eagerAllocs*3/4 {
		t.Errorf("a reconcile's logger that writes nothing: %.0f allocations with the manager's logger, %.0f with controller-runtime's; the context is still encoded up front", lazyAllocs, eagerAllocs)
	}
}
