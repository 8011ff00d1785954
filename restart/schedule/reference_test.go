package schedule

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kick-operator/kick/api/v1alpha1"
)

// reference is a brute-force model of a schedule over a bounded range: it
// finds every start by checking each minute's wall-clock reading against
// the expression (through a UTC copy of the cron schedule, so none of the
// zone arithmetic under test is involved) and answers from the list.
type reference struct {
	windows  []refWindow
	hasAllow bool
	from, to time.Time // starts are complete in [from, to)
}

type refWindow struct {
	deny   bool
	dur    time.Duration
	starts []time.Time
}

func newReference(t *testing.T, s *Schedule, from, to time.Time) *reference {
	t.Helper()
	r := &reference{hasAllow: s.hasAllow, from: from, to: to}
	for _, w := range s.windows {
		// Every wall-clock reading the expression matches, read in UTC.
		wall := *w.sched
		wall.Location = time.UTC
		matching := map[time.Time]bool{}
		for m := wall.Next(wallOf(from, w.loc).Add(-48 * time.Hour)); m.Before(wallOf(to, w.loc).Add(48 * time.Hour)); m = wall.Next(m) {
			matching[m] = true
		}
		matches := func(m time.Time) bool { return matching[m] }
		rw := refWindow{deny: w.deny, dur: w.dur}
		for u := from; u.Before(to); u = u.Add(time.Minute) {
			now, prev := wallOf(u, w.loc), wallOf(u.Add(-time.Minute), w.loc)
			match := matches(now)
			// The clock jumped forward: minutes it skipped open the window now.
			for m := prev.Add(time.Minute); !match && m.Before(now); m = m.Add(time.Minute) {
				match = matches(m)
			}
			if match {
				rw.starts = append(rw.starts, u)
			}
		}
		r.windows = append(r.windows, rw)
	}
	return r
}

func wallOf(u time.Time, loc *time.Location) time.Time {
	l := u.In(loc)
	return time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), l.Minute(), l.Second(), 0, time.UTC)
}

func (w *refWindow) active(t time.Time) bool {
	i, _ := slices.BinarySearchFunc(w.starts, t.Add(-w.dur), func(s, x time.Time) int {
		if s.After(x) {
			return 1
		}
		return -1
	})
	return i < len(w.starts) && !w.starts[i].After(t)
}

func (r *reference) open(t time.Time) bool {
	allowActive := false
	for i := range r.windows {
		w := &r.windows[i]
		if w.active(t) {
			if w.deny {
				return false
			}
			allowActive = true
		}
	}
	return allowActive || !r.hasAllow
}

// events returns every window start and end in (after, before), sorted.
func (r *reference) events(after, before time.Time) []time.Time {
	var out []time.Time
	for _, w := range r.windows {
		for _, s := range w.starts {
			for _, e := range []time.Time{s, s.Add(w.dur)} {
				if e.After(after) && e.Before(before) {
					out = append(out, e)
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b time.Time) int { return a.Compare(b) })
	return slices.CompactFunc(out, time.Time.Equal)
}

// TestDecideMatchesReference compares Decide with the brute-force model at
// random instants around daylight-saving changes: Open must agree, nothing
// may change before Next, Next must be a window boundary, and for a single
// window Next must be exactly the next change.
func TestDecideMatchesReference(t *testing.T) {
	ny, berlin := "America/New_York", "Europe/Berlin"
	ranges := [][2]string{
		{"2026-03-01T00:00:00Z", "2026-04-04T00:00:00Z"}, // both spring changes
		{"2026-10-20T00:00:00Z", "2026-11-06T00:00:00Z"}, // both autumn changes
	}
	configs := []struct {
		name    string
		windows []v1alpha1.ScheduleWindow
	}{
		{"utc nightly", ws(allow("0 2 * * *", "1h"))},
		{"ny skipped start", ws(in(ny, allow("30 2 * * *", "1h")))},
		{"ny repeated start deny", ws(in(ny, deny("30 1 * * *", "90m")))},
		{"berlin dense overlaps", ws(in(berlin, allow("*/10 2-3 * * *", "25m")))},
		{"berlin whole skipped hour", ws(in(berlin, deny("*/20 2 * * *", "5m")))},
		{"berlin 24h", ws(in(berlin, allow("0 0 * * *", "24h")))},
		{"ny office hours with lunch freeze", ws(in(ny, allow("0 9 * * mon-fri", "8h")), in(ny, deny("0 12 * * *", "1h")))},
		{"mixed zones", ws(in(berlin, allow("0 22 * * fri", "58h")), deny("30 1 * * sun", "2h"), in(ny, allow("0 3 * * *", "90m")))},
		{"deny only", ws(in(berlin, deny("0 2 * * *", "2h")), in(ny, deny("0 3 * * *", "30m")))},
		{"kolkata overlaps", ws(in("Asia/Kolkata", allow("15 */4 * * *", "5h")), in("Asia/Kolkata", deny("0 3 * * *", "45m")))},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range configs {
		s := mustCompile(t, c.windows...)
		for _, rg := range ranges {
			from, to := at(t, rg[0]), at(t, rg[1])
			ref := newReference(t, s, from, to)
			// Sample where the model is complete: at least three days of
			// history before (the longest window) and lookahead after.
			lo, hi := from.Add(72*time.Hour), to.Add(-72*time.Hour)
			for range 150 {
				now := lo.Add(time.Duration(rng.Int64N(int64(hi.Sub(lo)))))
				if rng.IntN(3) == 0 {
					now = now.Truncate(time.Minute) // land on boundaries too
				}
				checkAgainstReference(t, c.name, s, ref, now)
			}
		}
	}
}

func checkAgainstReference(t *testing.T, name string, s *Schedule, ref *reference, now time.Time) {
	t.Helper()
	d := s.Decide(now)
	if want := ref.open(now); d.Open != want {
		t.Fatalf("%s at %s: Open = %v, reference %v (%s)", name, now.Format(time.RFC3339Nano), d.Open, want, d.Message)
	}
	limit := ref.to
	if !d.Next.IsZero() {
		if !d.Next.After(now) {
			t.Fatalf("%s at %s: Next %s not after now", name, now, d.Next)
		}
		if d.Next.Before(limit) {
			limit = d.Next
			if !slices.ContainsFunc(ref.events(now, ref.to), d.Next.Equal) {
				t.Fatalf("%s at %s: Next %s is no window boundary", name, now, d.Next)
			}
		}
	}
	var firstChange time.Time
	for _, e := range ref.events(now, ref.to) {
		if ref.open(e) != d.Open {
			firstChange = e
			break
		}
	}
	if !firstChange.IsZero() && firstChange.Before(limit) {
		t.Fatalf("%s at %s: state changes at %s, before Next %s (%s)", name, now, firstChange, d.Next, d.Message)
	}
	exact := !strings.Contains(d.Message, "until at least")
	if len(s.windows) == 1 && exact && !firstChange.IsZero() && !d.Next.Equal(firstChange) {
		t.Fatalf("%s at %s: Next = %s, want exactly the next change %s (%s)", name, now, d.Next, firstChange, d.Message)
	}
}
