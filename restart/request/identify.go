package request

import (
	"sync"
	"time"

	"github.com/kick-operator/kick/restart/assess"
)

// identifyGrace is how long the driver waits for a rollout it cannot date
// yet (a Deployment whose controller has not created the ReplicaSet of its
// template, or whose ReplicaSet the cache does not show yet) before it opens
// a request to wait for it. The Deployment controller normally answers
// within a second; a workload applied together with its Secret, or a
// GitOps sync that changes both, is then judged on the ReplicaSet that runs
// the new template instead of getting a request that can only end
// KickNoLongerRequired. When the controller is slower than this (stopped,
// overloaded), the request is opened as before and waits for the rollout.
const identifyGrace = 15 * time.Second

// identifyPollMin and identifyPollMax bound how soon the driver looks again
// at a rollout it cannot date: nothing wakes the driver when a ReplicaSet
// appears, so it polls, first quickly, then at most every identifyPollMax.
const (
	identifyPollMin = 100 * time.Millisecond
	identifyPollMax = 2 * time.Second
)

// rolloutUnidentified reports an assessment that cannot tell yet whether
// the running pods carry the change: the rollout is in progress and nothing
// dates the template being rolled out (freshness.Rollout.Since is zero).
func rolloutUnidentified(a *assess.Assessment) bool {
	return a.Verdict == assess.InProgress && a.Rollout.Since.IsZero()
}

// identifyWaits remembers, per workload, since when the driver has been
// waiting for its rollout to be identified. An entry lives from the first
// look that could not date the rollout until the next look that takes a
// decision (or gives up waiting), so the map holds only workloads being
// waited for right now.
type identifyWaits struct {
	mu    sync.Mutex
	since map[WorkloadKey]time.Time
	// gauge is told the number of waits after each change; nil: not told.
	gauge func(int)
}

// wait reports whether the driver should look at k again later instead of
// opening a request, and how soon. It starts k's wait on the first call and
// ends it (returning false) once identifyGrace has passed.
func (w *identifyWaits) wait(k WorkloadKey, now time.Time) (time.Duration, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	defer w.report()
	first, ok := w.since[k]
	if !ok {
		if w.since == nil {
			w.since = map[WorkloadKey]time.Time{}
		}
		w.since[k] = now
		return identifyPollMin, true
	}
	waited := now.Sub(first)
	if waited >= identifyGrace {
		delete(w.since, k)
		return 0, false
	}
	// Look again after as long as the wait has lasted (doubling), within
	// the bounds and never past the grace.
	return min(max(waited, identifyPollMin), identifyPollMax, identifyGrace-waited), true
}

// done ends k's wait, if there is one.
func (w *identifyWaits) done(k WorkloadKey) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.since[k]; ok {
		delete(w.since, k)
		w.report()
	}
}

// report hands the number of waits to the gauge; w.mu is held.
func (w *identifyWaits) report() {
	if w.gauge != nil {
		w.gauge(len(w.since))
	}
}

// waiting is the number of workloads being waited for.
func (w *identifyWaits) waiting() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.since)
}

// errIdentifying puts a workload back on the driver's queue after the
// given time, keeping the change it was handed: its rollout cannot be
// dated yet.
type errIdentifying struct{ after time.Duration }

func (e errIdentifying) Error() string {
	return "the workload's rollout cannot be dated yet; look again in " + e.after.String()
}
