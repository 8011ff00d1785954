package schedule

import (
	"testing"
	"time"

	"github.com/kick-operator/kick/api/v1alpha1"
)

func allow(cron, dur string) v1alpha1.ScheduleWindow {
	return v1alpha1.ScheduleWindow{Type: v1alpha1.WindowAllow, Cron: cron, Duration: dur}
}

func deny(cron, dur string) v1alpha1.ScheduleWindow {
	return v1alpha1.ScheduleWindow{Type: v1alpha1.WindowDeny, Cron: cron, Duration: dur}
}

func in(zone string, w v1alpha1.ScheduleWindow) v1alpha1.ScheduleWindow {
	w.TimeZone = zone
	return w
}

// at parses an RFC 3339 time (fractional seconds allowed).
func at(t testing.TB, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func mustCompile(t testing.TB, windows ...v1alpha1.ScheduleWindow) *Schedule {
	t.Helper()
	s, err := Compile(windows)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	return s
}
