/*
Copyright 2026 The KICK Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package freshness

import (
	"strings"
	"testing"
	"time"
)

func TestDecide(t *testing.T) {
	// A KICK stamp half a second into a second, as written and read back.
	stamp, ok := ParseStamp(FormatStamp(time.Date(2026, 5, 1, 10, 0, 0, 500000000, time.UTC)))
	if !ok {
		t.Fatal("stamp does not parse")
	}
	whole := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC) // σ from a Kubernetes object
	complete := Rollout{Start: stamp, Complete: true}

	tests := []struct {
		name   string
		change time.Time
		r      Rollout
		want   Verdict
	}{
		{"change 1ns after nanosecond stamp, same second", stamp.Add(time.Nanosecond), complete, Stale},
		{"change exactly at stamp", stamp, complete, Fresh},
		{"change 1ns before stamp", stamp.Add(-time.Nanosecond), complete, Fresh},
		{"change later in the second of a whole-second start", whole.Add(300 * time.Millisecond), Rollout{Start: whole, Complete: true}, Stale},
		{"change exactly at whole-second start", whole, Rollout{Start: whole, Complete: true}, Fresh},
		{"much later change", stamp.Add(time.Hour), complete, Stale},
		{"no known change", time.Time{}, complete, Fresh},
		{"no known change, unknown start", time.Time{}, Rollout{Complete: true}, Fresh},
		{"change, unknown start of a complete rollout", stamp, Rollout{Complete: true}, Stale},
		{"incomplete with newer change", stamp.Add(time.Hour), Rollout{Start: stamp, Reason: RolloutInProgress}, InProgress},
		{"incomplete without change", time.Time{}, Rollout{Reason: Paused}, InProgress},
		// A rollout its controller gave up on is judged, not waited for: the
		// next change restarts it, the change it already carries does not.
		{"failed rollout, newer change", stamp.Add(time.Second), Rollout{Start: stamp, Reason: ProgressDeadlineExceeded}, Stale},
		{"failed rollout carrying the change", stamp, Rollout{Start: stamp, Reason: ProgressDeadlineExceeded}, Fresh},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Decide(At(tc.change), tc.r); got != tc.want {
				t.Fatalf("Decide = %s, want %s", got, tc.want)
			}
		})
	}
}

// The sub-second part of a stamp must survive a Deployment inspection: a
// change 1ns after KICK's own restart is stale, one at the stamp is not.
func TestDecideDeploymentStampSameSecond(t *testing.T) {
	stamp := base.Add(250 * time.Millisecond)
	d, rss := stampedDeployment(stamp)
	r := Deployment(d, rss)
	if !r.Complete {
		t.Fatalf("rollout not complete: %+v", r)
	}
	if got := Decide(At(stamp.Add(time.Nanosecond)), r); got != Stale {
		t.Fatalf("change 1ns after stamp: %s, want Stale", got)
	}
	if got := Decide(At(stamp), r); got != Fresh {
		t.Fatalf("change at stamp: %s, want Fresh", got)
	}
}

func TestExplain(t *testing.T) {
	start := time.Date(2026, 5, 1, 10, 0, 0, 500000000, time.FixedZone("+02", 2*3600))
	complete := Rollout{Start: start, Complete: true}
	tests := []struct {
		name   string
		change time.Time
		r      Rollout
		want   string
	}{
		{"stale", start.Add(time.Nanosecond), complete,
			"dependency changed at 2026-05-01T08:00:00.500000001Z, after the rollout started at 2026-05-01T08:00:00.5Z: restart needed"},
		{"fresh", start, complete,
			"dependency changed at 2026-05-01T08:00:00.5Z, not after the rollout started at 2026-05-01T08:00:00.5Z: no restart needed"},
		{"no change", time.Time{}, complete,
			"no dependency change recorded; rollout started at 2026-05-01T08:00:00.5Z: no restart needed"},
		{"in progress", start, Rollout{Reason: RolloutInProgress, Message: "1 of 3 replicas updated"},
			"rollout not complete (RolloutInProgress): 1 of 3 replicas updated; freshness is decided once it completes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Explain(At(tc.change), tc.r)
			if got != tc.want {
				t.Fatalf("Explain =\n  %q\nwant\n  %q", got, tc.want)
			}
			if strings.Contains(got, "\n") {
				t.Fatalf("Explain is not one line: %q", got)
			}
		})
	}
}

func TestNewerWithMixedPrecision(t *testing.T) {
	stamp := time.Date(2026, 11, 29, 13, 27, 11, 30_000_000, time.UTC) // a KICK restart stamp
	second := time.Date(2026, 11, 29, 13, 27, 11, 0, time.UTC)         // a Kubernetes timestamp
	baseline := func(seen time.Time) Change { return Change{Earliest: second, Latest: seen} }
	for _, tc := range []struct {
		name   string
		change Change
		start  time.Time
		want   bool
	}{
		{"exact, strictly later", At(stamp.Add(time.Nanosecond)), stamp, true},
		{"exact, equal", At(stamp), stamp, false},
		{"exact, earlier", At(stamp.Add(-time.Nanosecond)), stamp, false},
		{"baseline seen after the stamp, same second", baseline(stamp.Add(time.Millisecond)), stamp, true},
		{"baseline seen before the stamp", baseline(stamp.Add(-time.Millisecond)), stamp, false},
		{"baseline vs a whole-second start in the same second", baseline(second.Add(900 * time.Millisecond)), second, false},
		{"baseline vs a whole-second start a second earlier", baseline(second.Add(time.Millisecond)), second.Add(-time.Second), true},
		{"no change", Change{}, stamp, false},
	} {
		if got := Newer(tc.change, tc.start); got != tc.want {
			t.Errorf("%s: Newer = %v, want %v", tc.name, got, tc.want)
		}
	}
}
