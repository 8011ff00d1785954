package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kick-operator/kick/integration/cluster"
)

// TestQuickSmoke runs the whole benchmark in -quick mode against the
// kick-manager binary: every phase must produce numbers and every change a
// restart (two small bursts included, each counted). Speed targets are for
// `make bench`.
func TestQuickSmoke(t *testing.T) {
	manager := cluster.Binary(t, "kick-manager")
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	dir := t.TempDir()
	jsonPath, logPath := filepath.Join(dir, "bench.json"), filepath.Join(dir, "controller.log")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("controller log (tail):\n%s", tail(logPath, 8000))
		}
	})
	args := []string{"-quick", "-bursts", "2", "-json", jsonPath, "-bin-dir", cluster.K8sBinDir(t), "-controller-log", logPath,
		"-controller", manager + " --kubeconfig {kubeconfig} --namespace kick-system" +
			" --metrics-bind-address {metrics-addr} --health-probe-bind-address {probe-addr}"}
	var report bytes.Buffer
	res, err := run(ctx, args, &report)
	t.Log(report.String())
	if err != nil {
		t.Fatalf("harness failed: %v", err)
	}
	// Timing verdicts are not asserted (2 shared CPUs make them noisy);
	// every phase must have produced numbers, and every change a restart.
	if res.Memory.PeakMB == 0 || res.Memory.SteadyMB == 0 {
		t.Errorf("no memory samples: steady %.1f MB, peak %.1f MB", res.Memory.SteadyMB, res.Memory.PeakMB)
	}
	if res.Single.Restarts != res.Rounds || res.Burst.Restarted != 2*res.Deployments {
		t.Errorf("restarts missing: single changes %d/%d (missed %v), bursts %d/%d (missing %v)",
			res.Single.Restarts, res.Rounds, res.Single.Missed, res.Burst.Restarted, 2*res.Deployments, res.Burst.Missing)
	}
	if len(res.Burst.Runs) != 2 {
		t.Fatalf("-bursts 2 measured %d bursts", len(res.Burst.Runs))
	}
	for i, b := range res.Burst.Runs {
		if b.Restarted != res.Deployments || b.TotalMS <= 0 || b.PeakMB <= 0 {
			t.Errorf("burst %d: %d/%d restarted, last after %.0f ms, peak %.1f MB", i+1, b.Restarted, res.Deployments, b.TotalMS, b.PeakMB)
		}
	}
	if res.API.PerRestart == nil {
		t.Error("kick-manager exposes rest_client_requests_total, but API calls per restart were not measured")
	}
	if _, err := os.Stat(jsonPath); err != nil {
		t.Errorf("no JSON report: %v", err)
	}
}
