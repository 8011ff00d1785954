package assess

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/freshness"
)

// FuzzAssess: the assessment never panics, and a newer change never turns
// a stale verdict fresh (nor makes a carried workload look carried less).
func FuzzAssess(f *testing.F) {
	f.Add(int64(60), int64(0), int64(30), true, false, false, "* * * * *", int64(3600), int64(0), "2026-05-01T10:05:00Z")
	f.Add(int64(-60), int64(999), int64(0), false, true, true, "bad", int64(-1), int64(10), "")
	f.Add(int64(0), int64(5), int64(500), true, false, true, "0 10 * * *", int64(0), int64(-5), "x/y")
	f.Fuzz(func(t *testing.T, changeSec, changeNanos, rolloutSec int64, complete, suspend, dryRun bool, cron string, windowSec, settleSec int64, annotation string) {
		facts := baseFacts()
		change := t0.Add(time.Duration(changeSec)*time.Second + time.Duration(changeNanos%1e9))
		facts.Dependencies[0].Record = relevant(change)
		facts.Rollout = freshness.Rollout{Start: t0.Add(time.Duration(rolloutSec) * time.Second), Complete: complete}
		p := &facts.Policies[0].Spec
		p.Suspend, p.DryRun = suspend, dryRun
		p.Schedule = &kickv1alpha1.ScheduleSpec{Windows: []kickv1alpha1.ScheduleWindow{{Type: kickv1alpha1.WindowDeny, Cron: cron,
			Duration: (time.Duration(windowSec) * time.Second).String()}}}
		p.Restart = &kickv1alpha1.RestartSpec{Settle: &metav1.Duration{Duration: time.Duration(settleSec) * time.Second}}
		facts.Request = &kickv1alpha1.KickRequest{ObjectMeta: metav1.ObjectMeta{Name: "r",
			Annotations: map[string]string{kickv1alpha1.ChangeAnnotation: annotation}}}

		before := Assess(facts)
		if before.Summary == "" {
			t.Fatal("empty summary")
		}
		later := facts
		later.Dependencies = append([]Dependency{}, facts.Dependencies...)
		later.Dependencies[0].Record = relevant(change.Add(time.Hour))
		after := Assess(later)
		if before.Verdict == Stale && after.Verdict == Fresh {
			t.Fatalf("a newer change turned stale into fresh: %s -> %s", before.VerdictMessage, after.VerdictMessage)
		}
		if !before.Carried && after.Carried {
			t.Fatalf("a newer change made the pods carry it: %s -> %s", before.VerdictMessage, after.VerdictMessage)
		}
		if Adds(before.Latest, after.Latest) {
			t.Fatalf("Λ went back: %v -> %v", before.Latest, after.Latest)
		}
	})
}

// FuzzParseChange: the change annotation parser never panics, and what it
// accepts formats back to a value it reads the same way.
func FuzzParseChange(f *testing.F) {
	for _, seed := range []string{"", "2026-05-01T10:00:00Z", "2026-05-01T10:00:00.123456789Z/2026-05-01T10:00:00.5Z",
		"9999-12-31T23:59:59Z", "2026-05-01T10:00:00+02:00", "x/y", "2026-05-01T10:00:00Z/", "/2026-05-01T10:00:00Z"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, v string) {
		c := ParseChange(v)
		if c.IsZero() {
			return
		}
		if c.Latest.Before(c.Earliest) {
			t.Fatalf("%q parsed to an interval that ends before it starts: %v", v, c)
		}
		if again := ParseChange(FormatChange(c)); !again.Earliest.Equal(c.Earliest) || !again.Latest.Equal(c.Latest) {
			t.Fatalf("%q: %v formats to %q, which reads back as %v", v, c, FormatChange(c), again)
		}
	})
}
