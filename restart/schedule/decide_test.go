package schedule

import (
	"strings"
	"testing"
	"time"

	"github.com/kick-operator/kick/api/v1alpha1"
)

type decideCase struct {
	name    string
	windows []v1alpha1.ScheduleWindow
	now     string
	open    bool
	next    string // RFC 3339; "" means zero
	msg     string // exact message; "" skips the check
	has     []string
}

func runDecideCases(t *testing.T, tests []decideCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustCompile(t, tt.windows...)
			now := at(t, tt.now)
			d := s.Decide(now)
			if d.Open != tt.open {
				t.Errorf("Open = %v, want %v (%s)", d.Open, tt.open, d.Message)
			}
			switch {
			case tt.next == "" && !d.Next.IsZero():
				t.Errorf("Next = %s, want zero", d.Next.UTC().Format(time.RFC3339Nano))
			case tt.next != "" && !d.Next.Equal(at(t, tt.next)):
				t.Errorf("Next = %s, want %s", d.Next.UTC().Format(time.RFC3339Nano), tt.next)
			}
			if !d.Next.IsZero() && !d.Next.After(now) {
				t.Errorf("Next %s is not after now %s", d.Next, now)
			}
			if tt.msg != "" && d.Message != tt.msg {
				t.Errorf("Message = %q\n   want   %q", d.Message, tt.msg)
			}
			for _, h := range tt.has {
				if !strings.Contains(d.Message, h) {
					t.Errorf("Message %q lacks %q", d.Message, h)
				}
			}
		})
	}
}

func TestDecideBasics(t *testing.T) {
	nightly := allow("0 2 * * *", "1h")
	runDecideCases(t, []decideCase{
		{
			name: "no windows: always open, never changes",
			now:  "2026-12-01T12:00:00Z", open: true, next: "",
			msg: "no schedule windows: restarts may run at any time",
		},
		{
			name: "inside an Allow window", windows: ws(nightly),
			now: "2026-12-01T02:30:00Z", open: true, next: "2026-12-01T03:00:00Z",
			msg: "inside Allow window 0 until 2026-12-01T03:00:00Z",
		},
		{
			name: "before an Allow window", windows: ws(nightly),
			now: "2026-12-01T01:00:00Z", open: false, next: "2026-12-01T02:00:00Z",
			msg: "outside every Allow window; next opens at 2026-12-01T02:00:00Z (window 0)",
		},
		{
			name: "after an Allow window", windows: ws(nightly),
			now: "2026-12-01T03:30:00Z", open: false, next: "2026-12-02T02:00:00Z",
			msg: "outside every Allow window; next opens at 2026-12-02T02:00:00Z (window 0)",
		},
		{
			name: "start instant is inside", windows: ws(nightly),
			now: "2026-12-01T02:00:00Z", open: true, next: "2026-12-01T03:00:00Z",
		},
		{
			name: "end instant is outside", windows: ws(nightly),
			now: "2026-12-01T03:00:00Z", open: false, next: "2026-12-02T02:00:00Z",
		},
		{
			name: "last nanosecond before the end is inside", windows: ws(nightly),
			now: "2026-12-01T02:59:59.999999999Z", open: true, next: "2026-12-01T03:00:00Z",
		},
		{
			name: "last nanosecond before the start is outside", windows: ws(nightly),
			now: "2026-12-01T01:59:59.999999999Z", open: false, next: "2026-12-01T02:00:00Z",
		},
		{
			name: "sub-second duration ends exactly", windows: ws(allow("0 2 * * *", "1.5s")),
			now: "2026-12-01T02:00:01.499999999Z", open: true, next: "2026-12-01T02:00:01.5Z",
		},
		{
			name: "earliest of several Allow windows is next", windows: ws(allow("0 6 * * *", "1h"), allow("0 4 * * *", "1h"), allow("0 5 * * *", "1h")),
			now: "2026-12-01T03:00:00Z", open: false, next: "2026-12-01T04:00:00Z",
			msg: "outside every Allow window; next opens at 2026-12-01T04:00:00Z (window 1)",
		},
		{
			name: "weekday restriction skips to Monday", windows: ws(allow("0 9 * * mon-fri", "8h")),
			now: "2026-11-28T10:00:00Z", open: false, next: "2026-11-30T09:00:00Z", // Saturday
		},
	})
}

func TestDecideDeny(t *testing.T) {
	workday := allow("0 0 * * *", "23h")  // 00:00-23:00 every day
	freeze := deny("0 2 * * *", "30m")    // 02:00-02:30 every day
	friday := deny("0 16 * * fri", "64h") // Friday 16:00 to Monday 08:00
	overlap := deny("15 2 * * *", "1h")   // 02:15-03:15
	runDecideCases(t, []decideCase{
		{
			name: "deny wins over an active allow", windows: ws(workday, freeze),
			now: "2026-12-01T02:10:00Z", open: false, next: "2026-12-01T02:30:00Z",
			msg: "inside Deny window 1 until 2026-12-01T02:30:00Z",
		},
		{
			name: "open again when the deny ends; next change is the allow end", windows: ws(workday, freeze),
			now: "2026-12-01T02:30:00Z", open: true, next: "2026-12-01T23:00:00Z",
			msg: "inside Allow window 0 until 2026-12-01T23:00:00Z",
		},
		{
			name: "open; a deny starting before the allow ends is next", windows: ws(workday, freeze),
			now: "2026-12-01T01:00:00Z", open: true, next: "2026-12-01T02:00:00Z",
			msg: "inside Allow window 0 until 2026-12-01T23:00:00Z; Deny window 1 starts at 2026-12-01T02:00:00Z",
		},
		{
			name: "deny only: open outside the deny window", windows: ws(freeze),
			now: "2026-12-01T01:00:00Z", open: true, next: "2026-12-01T02:00:00Z",
			msg: "outside every Deny window; Deny window 0 starts at 2026-12-01T02:00:00Z",
		},
		{
			name: "deny only: closed inside", windows: ws(freeze),
			now: "2026-12-01T02:00:00Z", open: false, next: "2026-12-01T02:30:00Z",
		},
		{
			name: "deny only: end instant is open", windows: ws(freeze),
			now: "2026-12-01T02:30:00Z", open: true, next: "2026-12-02T02:00:00Z",
		},
		{
			name: "weekend freeze spans days", windows: ws(friday),
			now: "2026-11-29T12:00:00Z", open: false, next: "2026-11-30T08:00:00Z", // Sunday
			msg: "inside Deny window 0 until 2026-11-30T08:00:00Z",
		},
		{
			name: "two overlapping denies: closed until the later ends", windows: ws(freeze, workday, overlap),
			now: "2026-12-01T02:20:00Z", open: false, next: "2026-12-01T03:15:00Z",
			msg: "inside Deny windows 0 and 2 until 2026-12-01T03:15:00Z",
		},
		{
			name:    "closed with no allow active: next is the allow start even if a deny covers it",
			windows: ws(allow("0 2 * * *", "1h"), deny("0 1 * * *", "3h")),
			now:     "2026-12-01T00:30:00Z", open: false, next: "2026-12-01T02:00:00Z",
		},
		{
			name: "closed by a deny and no allow: next is the deny end", windows: ws(allow("0 5 * * *", "1h"), deny("0 1 * * *", "3h")),
			now: "2026-12-01T01:30:00Z", open: false, next: "2026-12-01T04:00:00Z",
		},
	})
}

func TestDecideSpansAndOverlaps(t *testing.T) {
	runDecideCases(t, []decideCase{
		{
			name: "window spanning midnight, evening side", windows: ws(allow("0 22 * * *", "4h")),
			now: "2026-12-01T23:00:00Z", open: true, next: "2026-12-02T02:00:00Z",
		},
		{
			name: "window spanning midnight, morning side", windows: ws(allow("0 22 * * *", "4h")),
			now: "2026-12-02T01:59:00Z", open: true, next: "2026-12-02T02:00:00Z",
		},
		{
			name: "window spanning midnight, after it", windows: ws(allow("0 22 * * *", "4h")),
			now: "2026-12-02T02:00:00Z", open: false, next: "2026-12-02T22:00:00Z",
		},
		{
			name: "Friday night window still open on Saturday", windows: ws(allow("0 22 * * fri", "6h")),
			now: "2026-11-28T03:59:00Z", open: true, next: "2026-11-28T04:00:00Z",
		},
		{
			name: "two starts whose occurrences overlap form one stretch", windows: ws(allow("0,30 9 * * *", "45m")),
			now: "2026-12-01T09:10:00Z", open: true, next: "2026-12-01T10:15:00Z",
		},
		{
			name: "covered by the second occurrence only", windows: ws(allow("0,30 9 * * *", "45m")),
			now: "2026-12-01T10:14:59Z", open: true, next: "2026-12-01T10:15:00Z",
		},
		{
			name: "dense overlapping starts are followed to the real end", windows: ws(allow("*/10 9-10 * * *", "30m")),
			now: "2026-12-01T09:05:00Z", open: true, next: "2026-12-01T11:20:00Z",
		},
		{
			name: "duration much longer than the period", windows: ws(allow("*/5 9 * * *", "3h")),
			now: "2026-12-01T11:00:00Z", open: true, next: "2026-12-01T12:55:00Z",
		},
		{
			name: "occurrences that touch do not close in between", windows: ws(allow("0 1,2 * * *", "1h")),
			now: "2026-12-01T01:30:00Z", open: true, next: "2026-12-01T03:00:00Z",
		},
		{
			name: "a window open forever reports a lower bound", windows: ws(allow("* * * * *", "1m")),
			now: "2026-12-01T12:00:30Z", open: true,
			next: "2026-12-01T14:09:00Z", // maxRunSteps one-minute hops after 12:01
			has:  []string{"inside Allow window 0 until at least 2026-12-01T14:09:00Z"},
		},
		{
			name: "a daily 24h window is followed for about a week", windows: ws(allow("0 0 * * *", "24h")),
			now: "2026-12-01T12:00:00Z", open: true, next: "2026-12-10T00:00:00Z",
			msg: "inside Allow window 0 until at least 2026-12-10T00:00:00Z",
		},
		{
			name: "a weekday window that touches across midnights ends on Saturday", windows: ws(allow("0 0 * * mon-fri", "24h")),
			now: "2026-11-30T12:00:00Z", open: true, next: "2026-12-05T00:00:00Z",
			msg: "inside Allow window 0 until 2026-12-05T00:00:00Z",
		},
		{
			name: "a deny that never ends keeps the gate closed", windows: ws(allow("0 0 * * *", "24h"), deny("*/5 * * * *", "10m")),
			now: "2026-12-01T12:00:00Z", open: false,
			has:  []string{"inside Deny window 1 until at least "},
			next: "2026-12-02T09:25:00Z", // 11:55 plus 129 ten-minute hops
		},
	})
}

func TestDecideTimeZones(t *testing.T) {
	berlin := in("Europe/Berlin", allow("0 2 * * *", "1h"))
	ny := in("America/New_York", allow("0 9 * * mon-fri", "8h"))
	runDecideCases(t, []decideCase{
		{
			name: "Berlin in winter (UTC+1)", windows: ws(berlin),
			now: "2026-12-01T01:30:00Z", open: true, next: "2026-12-01T02:00:00Z",
			msg: "inside Allow window 0 until 2026-12-01T03:00:00+01:00 Europe/Berlin",
		},
		{
			name: "Berlin in winter, before", windows: ws(berlin),
			now: "2026-12-01T00:59:59Z", open: false, next: "2026-12-01T01:00:00Z",
			msg: "outside every Allow window; next opens at 2026-12-01T02:00:00+01:00 Europe/Berlin (window 0)",
		},
		{
			name: "Berlin in summer (UTC+2)", windows: ws(berlin),
			now: "2026-07-01T00:30:00Z", open: true, next: "2026-07-01T01:00:00Z",
		},
		{
			name: "Berlin in summer, 02:00 UTC is already outside", windows: ws(berlin),
			now: "2026-07-01T01:30:00Z", open: false, next: "2026-07-02T00:00:00Z",
		},
		{
			name: "New York business hours start on Monday 09:00 EST", windows: ws(ny),
			now: "2026-11-30T14:00:00Z", open: true, next: "2026-11-30T22:00:00Z",
		},
		{
			name: "New York on Saturday waits for Monday", windows: ws(ny),
			now: "2026-11-28T15:00:00Z", open: false, next: "2026-11-30T14:00:00Z",
			msg: "outside every Allow window; next opens at 2026-11-30T09:00:00-05:00 America/New_York (window 0)",
		},
		{
			name: "Kolkata half-hour offset", windows: ws(in("Asia/Kolkata", deny("0 0 * * *", "1h"))),
			now: "2026-12-01T18:30:00Z", open: false, next: "2026-12-01T19:30:00Z",
		},
	})
}

// The DST cases use 2026: New York springs forward on 8 March (02:00 EST ->
// 03:00 EDT, 07:00Z) and falls back on 1 November (02:00 EDT -> 01:00 EST,
// 06:00Z); Berlin on 29 March and 25 October, both at 01:00Z.
func TestDecideDaylightSaving(t *testing.T) {
	nyNight := in("America/New_York", allow("30 2 * * *", "1h"))
	nyDeny := in("America/New_York", deny("30 2 * * *", "1h"))
	nyEarly := in("America/New_York", allow("30 1 * * *", "1h"))
	runDecideCases(t, []decideCase{
		{
			name: "New York, day before spring forward: 02:30 EST", windows: ws(nyNight),
			now: "2026-03-07T07:30:00Z", open: true, next: "2026-03-07T08:30:00Z",
		},
		{
			name: "New York, spring forward: a skipped 02:30 opens at 03:00 EDT", windows: ws(nyNight),
			now: "2026-03-08T06:59:00Z", open: false, next: "2026-03-08T07:00:00Z",
			msg: "outside every Allow window; next opens at 2026-03-08T03:00:00-04:00 America/New_York (window 0)",
		},
		{
			name: "New York, spring forward: open one hour from 03:00 EDT", windows: ws(nyNight),
			now: "2026-03-08T07:30:00Z", open: true, next: "2026-03-08T08:00:00Z",
		},
		{
			name: "New York, spring forward: a Deny window is not lost", windows: ws(nyDeny),
			now: "2026-03-08T07:45:00Z", open: false, next: "2026-03-08T08:00:00Z",
			msg: "inside Deny window 0 until 2026-03-08T04:00:00-04:00 America/New_York",
		},
		{
			name: "New York, day after spring forward: 02:30 EDT", windows: ws(nyNight),
			now: "2026-03-08T08:00:00Z", open: false, next: "2026-03-09T06:30:00Z",
		},
		{
			name: "New York, fall back: 01:30 happens twice, the occurrences touch", windows: ws(nyEarly),
			now: "2026-11-01T05:45:00Z", open: true, next: "2026-11-01T07:30:00Z",
			msg: "inside Allow window 0 until 2026-11-01T02:30:00-05:00 America/New_York",
		},
		{
			name: "New York, fall back: open during the repeated hour", windows: ws(nyEarly),
			now: "2026-11-01T06:45:00Z", open: true, next: "2026-11-01T07:30:00Z",
		},
		{
			name: "New York, fall back: next day back to one occurrence", windows: ws(nyEarly),
			now: "2026-11-01T07:30:00Z", open: false, next: "2026-11-02T06:30:00Z",
		},
		{
			name: "Berlin, spring forward: skipped 02:30 opens at 03:00 CEST", windows: ws(in("Europe/Berlin", allow("30 2 * * *", "1h"))),
			now: "2026-03-29T00:30:00Z", open: false, next: "2026-03-29T01:00:00Z",
		},
		{
			name: "Berlin, fall back: a 24h window leaves the extra hour closed", windows: ws(in("Europe/Berlin", allow("0 0 * * *", "24h"))),
			now: "2026-10-25T22:30:00Z", open: false, next: "2026-10-25T23:00:00Z",
		},
		{
			name: "Berlin, the 23-hour spring day overlaps the next start", windows: ws(in("Europe/Berlin", allow("0 0 * * *", "24h"))),
			now: "2026-10-24T12:00:00Z", open: true, next: "2026-10-25T22:00:00Z",
		},
		{
			name:    "cron in an hour that is skipped entirely is matched once at its end",
			windows: ws(in("America/New_York", allow("*/20 2 * * *", "10m"))),
			now:     "2026-03-08T06:00:00Z", open: false, next: "2026-03-08T07:00:00Z",
		},
	})
}

func TestDecideNilAndZero(t *testing.T) {
	var nilSchedule *Schedule
	for _, s := range []*Schedule{nilSchedule, {}, mustCompile(t)} {
		d := s.Decide(time.Now())
		if !d.Open || !d.Next.IsZero() || d.Message == "" {
			t.Fatalf("empty schedule decided %+v", d)
		}
	}
}

func TestDecideKeepsCallerLocationAndIgnoresMonotonic(t *testing.T) {
	s := mustCompile(t, allow("0 2 * * *", "1h"))
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, tokyo) // 01:00Z
	d := s.Decide(now)
	if d.Open || !d.Next.Equal(at(t, "2026-12-01T02:00:00Z")) || d.Next.Location() != tokyo {
		t.Fatalf("Decide = %+v (location %v)", d, d.Next.Location())
	}
	// A reading from time.Now carries a monotonic clock; the answer must be
	// the same as for the same wall time without one.
	real := time.Now()
	if a, b := s.Decide(real), s.Decide(real.Round(0)); a != b {
		t.Fatalf("monotonic reading changed the decision: %+v vs %+v", a, b)
	}
}

func TestScheduleIsSafeForConcurrentUse(t *testing.T) {
	s := mustCompile(t, in("Europe/Berlin", allow("*/10 9-17 * * mon-fri", "30m")), deny("0 12 * * *", "1h"))
	base := at(t, "2026-12-01T00:00:00Z")
	want := make([]Decision, 48)
	for i := range want {
		want[i] = s.Decide(base.Add(time.Duration(i) * 30 * time.Minute))
	}
	done := make(chan struct{})
	for g := 0; g < 4; g++ {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range want {
				if got := s.Decide(base.Add(time.Duration(i) * 30 * time.Minute)); got != want[i] {
					t.Errorf("concurrent Decide differs at %d: %+v vs %+v", i, got, want[i])
				}
			}
		}()
	}
	for g := 0; g < 4; g++ {
		<-done
	}
}

func ws(w ...v1alpha1.ScheduleWindow) []v1alpha1.ScheduleWindow { return w }
