package main

import (
	"strings"
	"testing"
	"time"
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
