package schedule

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kick-operator/kick/api/v1alpha1"
)

// FuzzCompile checks that Compile never panics on arbitrary cron, zone and
// duration strings, that every error it returns is a *WindowError naming
// the window, and that a schedule it accepts decides sanely at any instant
// between 1970 and 2500.
func FuzzCompile(f *testing.F) {
	seeds := []struct {
		cron, zone, dur string
	}{
		{"0 2 * * *", "", "1h"},
		{"*/15 9-17 ? jan-dec mon-fri", "Europe/Berlin", "10m"},
		{"30 2 * * *", "America/New_York", "1h"},
		{"30 2 25-31 3 sun", "Europe/Berlin", "1h"},
		{"0 0 29 2 *", "Asia/Kolkata", "24h"},
		{"* * * * *", "UTC", "1ns"},
		{"0 0 * * *", "Pacific/Chatham", "2562047h"},
		{"61 * * * *", "UTC", "1h"},
		{"0 0 30 2 *", "UTC", "1h"},
		{"TZ=UTC", "", "1h"},
		{"TZ=", "", "1h"},
		{"CRON_TZ=Europe/Berlin 0 2 * * *", "Europe/Berlin", "30m"},
		{"@every 1h", "", "1h"},
		{"@daily", "", "1h"},
		{"0/18446744073709551615 * * * *", "", "1h"},
		{"0-59/9223372036854775807 * * * *", "", "1h"},
		{"1-2-3 * * * *", "", "1h"},
		{"*/ * * * *", "", "1h"},
		{"- * * * *", "", "-1h"},
		{"", "", ""},
		{"0 2 * * *", "Local", "1h"},
		{"0 2 * * *", "../../../../etc/localtime", "1h"},
		{"0 2 * * *", "Europe/Berln", "0"},
		{"\x00 \xff * * *", "\x00", "9999999999999999999h"},
	}
	for i, s := range seeds {
		f.Add(s.cron, s.zone, s.dur, i%2 == 0, int64(1_790_000_000+i*86_400*37))
	}
	lo, hi := time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC).Unix(), time.Date(2500, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	f.Fuzz(func(t *testing.T, expr, zone, dur string, deny bool, sec int64) {
		w := v1alpha1.ScheduleWindow{Type: v1alpha1.WindowAllow, Cron: expr, Duration: dur, TimeZone: zone}
		if deny {
			w.Type = v1alpha1.WindowDeny
		}
		s, err := Compile([]v1alpha1.ScheduleWindow{w})
		if err != nil {
			if s != nil {
				t.Fatal("schedule returned with an error")
			}
			for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
				var we *WindowError
				if !errors.As(e, &we) || we.Index != 0 || !strings.HasPrefix(e.Error(), "window 0: ") {
					t.Fatalf("unexpected error %T %q", e, e)
				}
			}
			return
		}
		if sec < lo || sec > hi {
			sec = lo + (sec%(hi-lo)+(hi-lo))%(hi-lo)
		}
		now := time.Unix(sec, 0)
		d := s.Decide(now)
		if d.Message == "" {
			t.Fatal("empty message")
		}
		if !d.Next.IsZero() && !d.Next.After(now) {
			t.Fatalf("Next %s not after now %s", d.Next, now)
		}
	})
}
