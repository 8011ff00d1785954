package schedule

import "time"

// A window whose occurrences overlap or touch (the duration reaches the next
// start) stays open across all of them, possibly for ever ("0 0 * * *" for
// 24h). runEnd follows such a stretch hop by hop, but stops once it has
// proved the window open until runHorizon after now, or after maxRunSteps
// hops, and reports the instant reached as a lower bound. The controller
// re-evaluates there, which costs nothing, instead of this package walking
// months of starts.
const (
	runHorizon  = 8 * 24 * time.Hour // longer than a week, so weekly patterns stay exact
	maxRunSteps = 128
)

// forwardSteps is how many single starts lastStartBy walks forward before it
// switches to a backward search, which wins when starts are dense.
const forwardSteps = 4

// startCovering returns a start s with s <= t < s+dur, if there is one. It
// costs one cron evaluation whatever the duration: the first start after
// t-dur covers t exactly when it is not after t.
func (w *window) startCovering(t time.Time) (time.Time, bool) {
	s := w.next(t.Add(-w.dur))
	if s.IsZero() || s.After(t) {
		return time.Time{}, false
	}
	return s, true
}

// runEnd returns the first instant after start at which the window is no
// longer open, following later starts that begin before (or exactly when)
// the current occurrence ends. exact is false when it stopped at runHorizon
// past now or after maxRunSteps hops; end is then an instant the window is
// open until, at least.
func (w *window) runEnd(start, now time.Time) (end time.Time, exact bool) {
	end = start.Add(w.dur)
	horizon := now.Add(runHorizon)
	for range maxRunSteps {
		n := w.next(start)
		if n.IsZero() || n.After(end) {
			return end, true
		}
		if end.After(horizon) {
			return end, false
		}
		start = w.lastStartBy(n, end)
		end = start.Add(w.dur)
	}
	return end, false
}

// lastStartBy returns the latest start s <= end, given a start n <= end.
func (w *window) lastStartBy(n, end time.Time) time.Time {
	for range forwardSteps {
		m := w.next(n)
		if m.IsZero() || m.After(end) {
			return n
		}
		n = m
	}
	// Dense starts: search backwards from end for the last one. Invariant:
	// some start lies in (lo, end] (n, at least) and none in (hi, end].
	lo, hi := n.Add(-time.Nanosecond), end
	for step := time.Second; step < end.Sub(n); step *= 2 {
		x := end.Add(-step)
		if m := w.next(x); !m.IsZero() && !m.After(end) {
			lo = x
			break
		}
		hi = x
	}
	// Starts fall on whole seconds, so (lo, hi] holds exactly one once it is
	// at most a second long.
	for hi.Sub(lo) > time.Second {
		mid := lo.Add(hi.Sub(lo) / 2)
		if m := w.next(mid); !m.IsZero() && !m.After(end) {
			lo = mid
		} else {
			hi = mid
		}
	}
	if m := w.next(lo); !m.IsZero() && !m.After(end) {
		return m
	}
	return n // unreachable with a consistent cron schedule
}
