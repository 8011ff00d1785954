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
	"fmt"
	"time"
)

// Verdict is the outcome of comparing a dependency change with a rollout.
type Verdict string

const (
	// Stale: the latest relevant change is newer than the complete
	// rollout, so the running pods may not carry it; restart.
	Stale Verdict = "Stale"
	// Fresh: the complete rollout started at or after the latest relevant
	// change (or there is none); nothing to do.
	Fresh Verdict = "Fresh"
	// InProgress: the rollout is not complete; decide once it is.
	InProgress Verdict = "InProgress"
)

// Decide compares the latest relevant dependency change with a rollout.
// An incomplete rollout gives InProgress whatever the change, except one
// its controller gave up on (ProgressDeadlineExceeded): waiting for it
// would wait for ever, and a newer change may be what fixes it, so it is
// judged like a complete one. Otherwise
// the workload is Stale only when latestChange is strictly after r.Start:
// a change at exactly the start counts as picked up. A zero latestChange
// means no change is known and gives Fresh (the zero time is never after
// any start).
//
// latestChange must keep its sub-second part; truncating it to seconds
// would make a change in the same second as the rollout look fresh.
func Decide(latestChange Change, r Rollout) Verdict {
	switch {
	case !r.Complete && r.Reason != ProgressDeadlineExceeded:
		return InProgress
	case Newer(latestChange, r.Start):
		return Stale
	default:
		return Fresh
	}
}

// MaxClockSkew is how far a time KICK did not measure itself (a change
// annotation written by a client, a managedFields time, a restart stamp
// someone else wrote) may lie after the manager's own clock and still be
// believed. A later time is a clock gone wrong or a lie: believing it would
// date a change, or a restart, into the future and make every later change
// look older than it. Such times are counted as the manager's "now".
const MaxClockSkew = 5 * time.Second

// NotAfter bounds t, a time from outside the manager, by now plus
// MaxClockSkew: a later t is replaced by now. It reports whether it did.
func NotAfter(t, now time.Time) (time.Time, bool) {
	if t.After(now.Add(MaxClockSkew)) {
		return now, true
	}
	return t, false
}

// Change is when the newest relevant change came to be, as an interval:
// a change KICK saw happen is exact (Earliest == Latest); one dated from the
// API server's whole-second timestamps (a first observation) lies somewhere
// between Earliest and Latest.
type Change struct {
	Earliest, Latest time.Time
}

// At is an exactly known change.
func At(t time.Time) Change { return Change{Earliest: t, Latest: t} }

// IsZero reports that no change is known.
func (c Change) IsZero() bool { return c.Latest.IsZero() }

// Max is the newer of two changes, bound by bound.
func (c Change) Max(o Change) Change {
	return Change{Earliest: later(c.Earliest, o.Earliest), Latest: later(c.Latest, o.Latest)}
}

// Newer reports whether a change may be newer than a rollout start.
//
// A start known only to the second (taken from a Kubernetes timestamp) is
// compared with the earliest bound, strictly: equal whole seconds count as
// fresh, as the model requires, so adopting a workload applied together
// with its Secrets restarts nothing. A start KICK knows to the nanosecond
// (its own restart stamp) is compared with the latest bound: a Secret
// created in the same second as a restart, and seen after it, may be
// missing from the pods, so it counts as newer (the safe side).
func Newer(c Change, start time.Time) bool {
	if c.IsZero() {
		return false
	}
	if start.Nanosecond() == 0 {
		return c.Earliest.After(start)
	}
	return c.Latest.After(start)
}

// Explain says in one line why Decide reaches its verdict.
func Explain(latestChange Change, r Rollout) string {
	switch Decide(latestChange, r) {
	case InProgress:
		msg := "rollout not complete (" + r.Reason + ")"
		if r.Message != "" {
			msg += ": " + r.Message
		}
		return msg + "; freshness is decided once it completes"
	case Stale:
		return fmt.Sprintf("dependency changed at %s, after the rollout started at %s%s: restart needed",
			explainChange(latestChange), explainTime(r.Start), failed(r))
	default:
		if latestChange.IsZero() {
			return fmt.Sprintf("no dependency change recorded; rollout started at %s: no restart needed",
				explainTime(r.Start))
		}
		return fmt.Sprintf("dependency changed at %s, not after the rollout started at %s%s: no restart needed",
			explainChange(latestChange), explainTime(r.Start), failed(r))
	}
}

// failed notes a rollout its controller gave up on.
func failed(r Rollout) string {
	if !r.Complete && r.Reason == ProgressDeadlineExceeded {
		return " (that rollout exceeded its progress deadline)"
	}
	return ""
}

func explainChange(c Change) string {
	if c.Earliest.Equal(c.Latest) {
		return explainTime(c.Latest)
	}
	return explainTime(c.Earliest) + " (recorded to the second; seen by " + explainTime(c.Latest) + ")"
}

func explainTime(t time.Time) string {
	if t.IsZero() {
		return "(unknown)"
	}
	return t.UTC().Format(time.RFC3339Nano)
}
