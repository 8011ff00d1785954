package entry

import (
	"fmt"
	"strings"
	"time"
)

// Narrate fills each entry's Note from the entries before it on the same
// workload: how long after the change a restart came and what it waited
// for, how long a rollout took, how long a gate has held. es must be
// sorted by time; entries of several workloads may be mixed.
func Narrate(es []Entry) {
	type cycle struct {
		change   *time.Time // oldest change not yet answered by a restart
		gate     *Entry     // first blocking gate decision since that change
		restart  *time.Time
		lastGate *Entry
	}
	cycles := map[string]*cycle{}
	for i := range es {
		e := &es[i]
		c := cycles[e.Key()]
		if c == nil {
			c = &cycle{}
			cycles[e.Key()] = c
		}
		switch e.Type {
		case Change:
			if c.change == nil && !e.KeysUnread {
				t := e.Time
				c.change, c.gate = &t, nil
			}
		case Gate:
			if e.Reason != "Allowed" && e.Reason != "" {
				if c.gate == nil {
					c.gate = e
				}
				c.lastGate = e
				if c.change != nil {
					e.Note = Duration(e.Time.Sub(*c.change)) + " after the change"
				}
			} else if c.lastGate != nil {
				e.Note = "held for " + Duration(e.Time.Sub(c.lastGate.Time)) + " by " + holdReason(c.lastGate)
				c.lastGate = nil
			}
		case Restart:
			var parts []string
			if c.change != nil {
				parts = append(parts, "restarted "+Duration(e.Time.Sub(*c.change))+" after the change")
			}
			if c.gate != nil {
				parts = append(parts, "waited "+Duration(e.Time.Sub(c.gate.Time))+" for "+holdReason(c.gate))
			}
			e.Note = strings.Join(parts, "; ")
			t := e.Time
			c.restart, c.change, c.gate, c.lastGate = &t, nil, nil, nil
		case Completion, Failure:
			if c.restart != nil {
				if d := e.Time.Sub(*c.restart); d < time.Second {
					e.Note = "within a second of the restart"
				} else {
					e.Note = Duration(d) + " after the restart"
				}
			}
			c.restart = nil
		case Finished:
			c.change, c.gate, c.lastGate = nil, nil, nil
		}
	}
}

// holdReason names what held a restart back: the gate's message when it
// has one, else its stage and reason.
func holdReason(g *Entry) string {
	if g.Message != "" {
		return strings.TrimSuffix(firstLine(g.Message), ".")
	}
	if g.Stage != "" {
		return "the " + g.Stage + " gate (" + g.Reason + ")"
	}
	return g.Reason
}

// Duration is d for people: "14 ms" below a tenth of a second, "0.8 s"
// below ten seconds, "42 s", "3m05s", "3h12m", "2d4h".
func Duration(d time.Duration) string {
	if d < 0 {
		d = -d
	}
	switch {
	case d < 100*time.Millisecond:
		return fmt.Sprintf("%d ms", d.Milliseconds())
	case d < 10*time.Second:
		return fmt.Sprintf("%.1f s", d.Seconds())
	case d < time.Minute:
		return fmt.Sprintf("%d s", int(d.Round(time.Second).Seconds()))
	case d < time.Hour:
		d = d.Round(time.Second)
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		d = d.Round(time.Minute)
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	d = d.Round(time.Hour)
	return fmt.Sprintf("%dd%dh", int(d.Hours())/24, int(d.Hours())%24)
}

// Line renders an entry as one terminal line: time, type, summary, then
// the message and note.
func Line(e Entry, loc *time.Location) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s  %-10s %s", e.Time.In(loc).Format("2006-01-02 15:04:05.000"), e.Type, e.Summary)
	if e.Message != "" && e.Type != Event {
		b.WriteString(" — " + firstLine(e.Message))
	}
	if e.Until != nil {
		b.WriteString(" (may open at " + e.Until.In(loc).Format("15:04:05") + ")")
	}
	if e.Note != "" {
		b.WriteString("; " + e.Note)
	}
	return b.String()
}

// Workload states, for the colour band of a lane.
const (
	StateIdle       = "idle"       // nothing pending
	StateChanged    = "changed"    // a change awaits its restart
	StateWaiting    = "waiting"    // a gate holds the restart back
	StateRestarting = "restarting" // restarted, rollout in progress
	StateFailed     = "failed"     // the last request failed
)

// State is the state a workload is in after the entries es (sorted).
func State(es []Entry) string {
	s := StateIdle
	for _, e := range es {
		switch e.Type {
		case Change:
			if s != StateWaiting && !e.KeysUnread {
				s = StateChanged
			}
		case Gate:
			if e.Reason != "Allowed" && e.Reason != "" {
				s = StateWaiting
			} else {
				s = StateChanged
			}
		case Restart:
			s = StateRestarting
		case Completion, Finished:
			s = StateIdle
		case Failure:
			s = StateFailed
		}
	}
	return s
}
