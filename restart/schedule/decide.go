package schedule

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Decision is the schedule's answer at one instant.
type Decision struct {
	// Open reports whether a restart may run now.
	Open bool
	// Message explains the answer in plain words, for conditions and events.
	Message string
	// Next is the earliest later instant at which Open can change, always a
	// window start or end; zero when it never changes. Re-evaluate then: the
	// answer may still be the same, for example when another window takes
	// over exactly there. One exception keeps Decide cheap: a window whose
	// occurrences overlap back to back for more than about a week (such as
	// "0 0 * * *" for 24h) is followed only that far, and Next is then the
	// end of the last occurrence examined; the message says "until at least".
	Next time.Time
	// Deny is set when a Deny window closes the schedule (not the absence
	// of an open Allow window).
	Deny bool
}

// Decide evaluates the schedule at now. A nil Schedule is always open.
func (s *Schedule) Decide(now time.Time) Decision {
	if s == nil || len(s.windows) == 0 {
		return Decision{Open: true, Message: "no schedule windows: restarts may run at any time"}
	}
	now = now.Round(0) // compare wall clocks only

	// One cron evaluation per window tells which windows are active.
	covering := make([]time.Time, len(s.windows))
	active := make([]bool, len(s.windows))
	anyDeny, anyAllow := false, false
	for i := range s.windows {
		covering[i], active[i] = s.windows[i].startCovering(now)
		if active[i] {
			if s.windows[i].deny {
				anyDeny = true
			} else {
				anyAllow = true
			}
		}
	}

	switch {
	case anyDeny:
		return s.insideDeny(now, covering, active)
	case s.hasAllow && !anyAllow:
		return s.outsideAllow(now)
	default:
		return s.open(now, covering, active)
	}
}

// insideDeny: closed until every active Deny window has ended.
func (s *Schedule) insideDeny(now time.Time, covering []time.Time, active []bool) Decision {
	var (
		until   time.Time
		exact   = true
		last    *window
		indices []string
	)
	for i := range s.windows {
		w := &s.windows[i]
		if !w.deny || !active[i] {
			continue
		}
		indices = append(indices, strconv.Itoa(w.index))
		end, ok := w.runEnd(covering[i], now)
		exact = exact && ok // a lower bound anywhere makes the total one too
		if end.After(until) {
			until, last = end, w
		}
	}
	noun := "Deny window " + indices[0]
	if len(indices) > 1 {
		noun = "Deny windows " + joinAnd(indices)
	}
	return Decision{
		Open:    false,
		Message: fmt.Sprintf("inside %s %s", noun, last.until(until, exact)),
		Next:    until,
		Deny:    true,
	}
}

// outsideAllow: closed until some Allow window starts.
func (s *Schedule) outsideAllow(now time.Time) Decision {
	var (
		next  time.Time
		first *window
	)
	for i := range s.windows {
		w := &s.windows[i]
		if w.deny {
			continue
		}
		if n := w.next(now); !n.IsZero() && (next.IsZero() || n.Before(next)) {
			next, first = n, w
		}
	}
	if first == nil {
		return Decision{Open: false, Message: "outside every Allow window, and none opens again"}
	}
	return Decision{
		Open:    false,
		Message: fmt.Sprintf("outside every Allow window; next opens at %s (window %d)", first.format(next), first.index),
		Next:    next,
	}
}

// open: no Deny window is active and some Allow window is (or there are
// none). It closes when the last active Allow window ends or a Deny window
// starts, whichever comes first.
func (s *Schedule) open(now time.Time, covering []time.Time, active []bool) Decision {
	var (
		allowEnd   time.Time
		allowExact = true
		allowWin   *window
		denyStart  time.Time
		denyWin    *window
	)
	for i := range s.windows {
		w := &s.windows[i]
		switch {
		case w.deny:
			if n := w.next(now); !n.IsZero() && (denyStart.IsZero() || n.Before(denyStart)) {
				denyStart, denyWin = n, w
			}
		case active[i]:
			end, ok := w.runEnd(covering[i], now)
			allowExact = allowExact && ok
			if end.After(allowEnd) {
				allowEnd, allowWin = end, w
			}
		}
	}

	var msg strings.Builder
	next := allowEnd
	if allowWin != nil {
		fmt.Fprintf(&msg, "inside Allow window %d %s", allowWin.index, allowWin.until(allowEnd, allowExact))
	} else {
		msg.WriteString("outside every Deny window")
	}
	if denyWin != nil && (allowWin == nil || denyStart.Before(allowEnd)) {
		next = denyStart
		fmt.Fprintf(&msg, "; Deny window %d starts at %s", denyWin.index, denyWin.format(denyStart))
	}
	return Decision{Open: true, Message: msg.String(), Next: next}
}

// until phrases the end of an active window.
func (w *window) until(end time.Time, exact bool) string {
	if exact {
		return "until " + w.format(end)
	}
	return "until at least " + w.format(end)
}

// format renders t in the window's zone, naming the zone unless it is UTC.
func (w *window) format(t time.Time) string {
	s := t.In(w.loc).Format(time.RFC3339)
	if name := w.loc.String(); name != "UTC" {
		s += " " + name
	}
	return s
}

func joinAnd(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}
