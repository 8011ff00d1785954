package main

import (
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

func TestLeaderElectionTimings(t *testing.T) {
	o := parsed(t)
	if o.leaseDuration != 15*time.Second || o.renewDeadline != 10*time.Second || o.retryPeriod != 2*time.Second {
		t.Errorf("defaults %s/%s/%s, want controller-runtime's 15s/10s/2s", o.leaseDuration, o.renewDeadline, o.retryPeriod)
	}
	if err := o.validate(); err != nil {
		t.Errorf("defaults refused: %v", err)
	}
	short := parsed(t, "--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=3s", "--leader-elect-retry-period=500ms")
	if err := short.validate(); err != nil {
		t.Errorf("short timings refused: %v", err)
	}
	for _, args := range [][]string{
		{"--leader-elect-lease-duration=10s"},                                    // not above the renew deadline
		{"--leader-elect-renew-deadline=2s"},                                     // not above 1.2 × the retry period
		{"--leader-elect-retry-period=0s"},                                       // no retries
		{"--leader-elect-lease-duration=5s", "--leader-elect-renew-deadline=6s"}, // lease shorter than the deadline
	} {
		o := parsed(t, args...)
		err := o.validate()
		if err == nil || !strings.Contains(err.Error(), "--leader-elect-lease-duration") {
			t.Errorf("%v accepted or unclear: %v", args, err)
		}
	}
}

func TestGCPercent(t *testing.T) {
	if o := parsed(t); o.gcPercent != defaultGCPercent {
		t.Errorf("default --gc-percent %d, want %d", o.gcPercent, defaultGCPercent)
	}
	if o := parsed(t, "--gc-percent=100"); o.validate() != nil {
		t.Errorf("--gc-percent=100 refused: %v", o.validate())
	}
	o := parsed(t, "--gc-percent=0")
	if err := o.validate(); err == nil || !strings.Contains(err.Error(), "--gc-percent") {
		t.Errorf("--gc-percent=0 accepted or unclear: %v", err)
	}
}

func TestReleaseIdleMemory(t *testing.T) {
	if o := parsed(t); !o.releaseIdleMemory {
		t.Error("--release-idle-memory is off by default, want on")
	}
	if o := parsed(t, "--release-idle-memory=false"); o.releaseIdleMemory {
		t.Error("--release-idle-memory=false left it on")
	}
}

func TestTuneClient(t *testing.T) {
	cfg := &rest.Config{}
	tuneClient(cfg, parsed(t))
	if !cfg.DisableCompression || cfg.QPS != 0 {
		t.Errorf("defaults: DisableCompression %v, QPS %v; want compression off, no client-side limit", cfg.DisableCompression, cfg.QPS)
	}
	cfg = &rest.Config{}
	tuneClient(cfg, parsed(t, "--kube-api-compression", "--kube-api-qps=50", "--kube-api-burst=100"))
	if cfg.DisableCompression || cfg.QPS != 50 || cfg.Burst != 100 {
		t.Errorf("flags not applied: DisableCompression %v, QPS %v, Burst %d", cfg.DisableCompression, cfg.QPS, cfg.Burst)
	}
	// A kubeconfig that turns compression off keeps it off.
	cfg = &rest.Config{DisableCompression: true}
	tuneClient(cfg, parsed(t, "--kube-api-compression"))
	if !cfg.DisableCompression {
		t.Error("--kube-api-compression overrode a kubeconfig's disable-compression")
	}
}
