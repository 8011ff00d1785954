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
// An incomplete rollout gives InProgress whatever the change. Otherwise
// the workload is Stale only when latestChange is strictly after r.Start:
// a change at exactly the start counts as picked up. A zero latestChange
// means no change is known and gives Fresh (the zero time is never after
// any start).
//
// latestChange must keep its sub-second part; truncating it to seconds
// would make a change in the same second as the rollout look fresh.
func Decide(latestChange time.Time, r Rollout) Verdict {
	switch {
	case !r.Complete:
		return InProgress
	case latestChange.After(r.Start):
		return Stale
	default:
		return Fresh
	}
}

// Explain says in one line why Decide reaches its verdict.
func Explain(latestChange time.Time, r Rollout) string {
	switch Decide(latestChange, r) {
	case InProgress:
		msg := "rollout not complete (" + r.Reason + ")"
		if r.Message != "" {
			msg += ": " + r.Message
		}
		return msg + "; freshness is decided once it completes"
	case Stale:
		return fmt.Sprintf("dependency changed at %s, after the rollout started at %s: restart needed",
			explainTime(latestChange), explainTime(r.Start))
	default:
		if latestChange.IsZero() {
			return fmt.Sprintf("no dependency change recorded; rollout started at %s: no restart needed",
				explainTime(r.Start))
		}
		return fmt.Sprintf("dependency changed at %s, not after the rollout started at %s: no restart needed",
			explainTime(latestChange), explainTime(r.Start))
	}
}

func explainTime(t time.Time) string {
	if t.IsZero() {
		return "(unknown)"
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// LatestChange returns the latest of changes, or the zero time when there
// are none.
func LatestChange(changes []time.Time) time.Time {
	var t time.Time
	for _, c := range changes {
		t = later(t, c)
	}
	return t
}
