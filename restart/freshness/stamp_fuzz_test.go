package freshness

import (
	"strings"
	"testing"
	"time"
)

// minStampYear and maxStampYear bound the times a stamp can carry: RFC 3339
// has four-digit years.
const minStampYear, maxStampYear = 0, 9999

// FuzzParseStamp feeds arbitrary restartedAt values (anyone who can edit a
// pod template writes them): ParseStamp never panics, returns UTC, and
// whatever it accepts survives FormatStamp and ParseStamp again unchanged.
func FuzzParseStamp(f *testing.F) {
	for _, seed := range []string{
		"2026-05-01T10:00:00.123456789Z",
		"2026-05-01T12:00:00+02:00",
		"2026-05-01T10:00:00Z",
		"2026-05-01T10:00:00.5-07:30",
		"0000-01-01T00:00:00Z",
		"9999-12-31T23:59:59.999999999Z",
		"0000-01-01T00:00:00+01:00",
		"9999-12-31T23:59:59-01:00",
		"2026-02-30T10:00:00Z",
		"2026-05-01T24:00:00Z",
		"2026-05-01T10:00:60Z",
		"2026-05-01 10:00:00Z",
		"2026-05-01T10:00:00,5Z",
		"2026-05-01T10:00:00.1234567891Z",
		"2026-05-01T10:00:00+24:00",
		"+2026-05-01T10:00:00Z",
		"", "now", "\x00", "2026-05-01T10:00:00Z\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, value string) {
		got, ok := ParseStamp(value)
		if !ok {
			if !got.IsZero() {
				t.Fatalf("ParseStamp(%q) refused the value but returned %v", value, got)
			}
			return
		}
		if got.Location() != time.UTC {
			t.Fatalf("ParseStamp(%q) = %v, not in UTC", value, got)
		}
		if y := got.Year(); y < minStampYear || y > maxStampYear {
			// A zone offset pushed the instant out of RFC 3339's years:
			// it has no canonical stamp.
			return
		}
		canonical := FormatStamp(got)
		again, ok := ParseStamp(canonical)
		if !ok || !again.Equal(got) || again != got {
			t.Fatalf("ParseStamp(%q) = %v, formatted %q, parsed again %v (%t)", value, got, canonical, again, ok)
		}
		if FormatStamp(again) != canonical {
			t.Fatalf("FormatStamp is not stable for %q", value)
		}
	})
}

// FuzzFormatStamp formats arbitrary instants in arbitrary zones: a stamp is
// always 30 characters in UTC, parses back to the same instant, and stamps
// sort as strings the way their instants sort in time.
func FuzzFormatStamp(f *testing.F) {
	f.Add(int64(1_777_636_800), int64(123_456_789), int16(120), int64(1_777_636_800), int64(123_456_790), int16(-450))
	f.Add(int64(0), int64(0), int16(0), int64(-1), int64(999_999_999), int16(0))
	f.Add(int64(253_402_300_799), int64(999_999_999), int16(0), int64(-62_167_219_200), int64(0), int16(0))
	f.Add(int64(1_777_636_800), int64(0), int16(0), int64(1_777_636_799), int64(999_999_999), int16(1439))
	lo := time.Date(minStampYear, 1, 1, 0, 0, 0, 0, time.UTC)
	hi := time.Date(maxStampYear, 12, 31, 23, 59, 59, 999_999_999, time.UTC)
	instant := func(sec, nsec int64, offset int16) (time.Time, bool) {
		t := time.Unix(sec, nsec).In(time.FixedZone("", int(offset%1440)*60))
		return t, !t.Before(lo) && !t.After(hi)
	}
	f.Fuzz(func(t *testing.T, sec1, nsec1 int64, off1 int16, sec2, nsec2 int64, off2 int16) {
		a, okA := instant(sec1, nsec1, off1)
		b, okB := instant(sec2, nsec2, off2)
		if !okA || !okB {
			return
		}
		sa, sb := FormatStamp(a), FormatStamp(b)
		for _, c := range []struct {
			t time.Time
			s string
		}{{a, sa}, {b, sb}} {
			if len(c.s) != len("2006-01-02T15:04:05.000000000Z") || !strings.HasSuffix(c.s, "Z") {
				t.Fatalf("FormatStamp(%v) = %q, not a fixed-width UTC stamp", c.t, c.s)
			}
			back, ok := ParseStamp(c.s)
			if !ok || !back.Equal(c.t) {
				t.Fatalf("FormatStamp(%v) = %q, which parses to %v (%t)", c.t, c.s, back, ok)
			}
		}
		if cmp := strings.Compare(sa, sb); cmp != a.Compare(b) {
			t.Fatalf("stamps %q and %q compare %d, their instants %d", sa, sb, cmp, a.Compare(b))
		}
	})
}
