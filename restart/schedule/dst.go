package schedule

import (
	"time"

	"github.com/robfig/cron/v3"
)

// robfig/cron matches wall-clock times, so a start time the clock skips when
// daylight-saving time begins (02:30 when 02:00 jumps to 03:00) never occurs
// that day. For a Deny window that would silently lift a freeze once a year.
// KICK instead opens such a window when the clock resumes, at the end of the
// gap. A start time the clock repeats when daylight-saving time ends opens
// the window at both instants, as robfig/cron does.

// starBit is robfig/cron's marker, in the day-of-month and day-of-week bit
// sets, for a field written as "*" or "?".
const starBit = 1 << 63

// next returns the first start strictly after t: a robfig/cron match or the
// end of a skipped gap that swallowed a match. Zero if there is none within
// the five years robfig/cron searches.
func (w *window) next(t time.Time) time.Time {
	from := t
	if _, off := t.In(w.loc).Zone(); off%60 == 0 {
		// Starts fall on whole minutes, so the first one after t is the first
		// at or after the next whole minute; starting there spares robfig/cron
		// a second-by-second scan. (Zones had odd-second offsets only before
		// about 1900.)
		from = t.Truncate(time.Minute).Add(time.Minute - time.Nanosecond)
	}
	n := w.sched.Next(from)
	limit := n
	if limit.IsZero() {
		limit = t.AddDate(5, 0, 0)
	}
	if g := w.nextSkippedStart(t, limit); !g.IsZero() {
		return g
	}
	return n
}

// nextSkippedStart returns the first clock jump in (t, limit) whose skipped
// wall-clock range contains a match, or zero.
func (w *window) nextSkippedStart(t, limit time.Time) time.Time {
	for {
		_, g := t.In(w.loc).ZoneBounds()
		if g.IsZero() || !g.Before(limit) {
			return time.Time{}
		}
		if w.skipsMatch(g) {
			return g.In(t.Location())
		}
		t = g
	}
}

// skipsMatch reports whether the zone change at g moves the clock forward
// over a wall-clock minute the cron expression matches.
func (w *window) skipsMatch(g time.Time) bool {
	before := g.Add(-time.Nanosecond).In(w.loc)
	_, offBefore := before.Zone()
	_, offAfter := g.In(w.loc).Zone()
	if offAfter <= offBefore {
		return false
	}
	// The wall clock would have read [from, from+gap) but jumps over it.
	from := time.Date(before.Year(), before.Month(), before.Day(), before.Hour(), before.Minute(), before.Second(),
		before.Nanosecond(), time.UTC).Add(time.Nanosecond)
	to := from.Add(time.Duration(offAfter-offBefore) * time.Second)
	for m := from.Truncate(time.Minute); m.Before(to); m = m.Add(time.Minute) {
		if !m.Before(from) && wallMatches(w.sched, m) {
			return true
		}
	}
	return false
}

// wallMatches reports whether the wall-clock reading m (fields read in UTC)
// matches the expression, with cron's rule that day-of-month and day-of-week
// are alternatives unless one of them is "*".
func wallMatches(s *cron.SpecSchedule, m time.Time) bool {
	has := func(bits uint64, v int) bool { return bits&(1<<uint(v)) != 0 }
	if m.Second() != 0 || !has(s.Second, 0) || !has(s.Minute, m.Minute()) || !has(s.Hour, m.Hour()) ||
		!has(s.Month, int(m.Month())) {
		return false
	}
	dom, dow := has(s.Dom, m.Day()), has(s.Dow, int(m.Weekday()))
	if s.Dom&starBit != 0 || s.Dow&starBit != 0 {
		return dom && dow
	}
	return dom || dow
}
