package schedule

import (
	"errors"
	"strings"
	"testing"

	"github.com/kick-operator/kick/api/v1alpha1"
)

func TestCompileValid(t *testing.T) {
	tests := []struct {
		name    string
		windows []v1alpha1.ScheduleWindow
		allow   bool
	}{
		{"nil", nil, false},
		{"empty", []v1alpha1.ScheduleWindow{}, false},
		{"allow, default zone", []v1alpha1.ScheduleWindow{allow("0 2 * * *", "1h")}, true},
		{"deny only", []v1alpha1.ScheduleWindow{deny("0 2 * * *", "1h")}, false},
		{"names, ranges, steps, question mark", []v1alpha1.ScheduleWindow{
			allow("*/15 9-17 ? jan-dec mon-fri", "10m"),
			deny("0 0 1,15 * ?", "1h30m"),
		}, true},
		{"surrounding spaces", []v1alpha1.ScheduleWindow{allow("  0 2 * * *  ", "30m")}, true},
		{"zones", []v1alpha1.ScheduleWindow{
			in("UTC", allow("0 2 * * *", "1h")),
			in("Etc/UTC", allow("0 2 * * *", "1h")),
			in("Europe/Berlin", allow("0 2 * * *", "1h")),
			in("America/New_York", deny("0 2 * * *", "1h")),
			in("Asia/Kolkata", deny("0 2 * * *", "1h")),
		}, true},
		{"leap day only", []v1alpha1.ScheduleWindow{allow("0 0 29 2 *", "24h")}, true},
		{"start time only in a DST gap", []v1alpha1.ScheduleWindow{
			// 02:30 on the last Sunday of March never exists in Berlin; it opens at 03:00.
			in("Europe/Berlin", deny("30 2 25-31 3 sun", "1h")),
		}, false},
		{"sub-second duration", []v1alpha1.ScheduleWindow{allow("0 2 * * *", "1.5s")}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Compile(tt.windows)
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			if len(s.windows) != len(tt.windows) || s.hasAllow != tt.allow {
				t.Fatalf("compiled %d windows (hasAllow %v), want %d (%v)", len(s.windows), s.hasAllow, len(tt.windows), tt.allow)
			}
			for i, w := range s.windows {
				if w.index != i || w.loc == nil || w.sched == nil || w.dur <= 0 {
					t.Fatalf("window %d compiled badly: %+v", i, w)
				}
			}
		})
	}
}

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		name    string
		windows []v1alpha1.ScheduleWindow
		// want lists every expected message, in order; each is matched as a
		// prefix of the corresponding WindowError.
		want   []string
		fields []string
	}{
		{
			name:    "cron field out of range",
			windows: []v1alpha1.ScheduleWindow{allow("61 * * * *", "1h")},
			want:    []string{`window 0: cron "61 * * * *": end of range (61) above maximum (59)`},
			fields:  []string{"cron"},
		},
		{
			name:    "unknown zone names the index",
			windows: []v1alpha1.ScheduleWindow{daily(), daily(), in("Europe/Berln", daily())},
			want:    []string{`window 2: unknown time zone "Europe/Berln"`},
			fields:  []string{"timeZone"},
		},
		{
			name:    "Local zone refused",
			windows: []v1alpha1.ScheduleWindow{in("Local", daily())},
			want:    []string{`window 0: time zone "Local" is not allowed`},
			fields:  []string{"timeZone"},
		},
		{
			name:    "path-like zone",
			windows: []v1alpha1.ScheduleWindow{in("../../etc/passwd", daily())},
			want:    []string{`window 0: unknown time zone "../../etc/passwd"`},
			fields:  []string{"timeZone"},
		},
		{
			name:    "descriptor",
			windows: []v1alpha1.ScheduleWindow{allow("@daily", "1h"), allow("@every 1h", "1h")},
			want: []string{
				`window 0: cron "@daily": descriptors such as @daily or @every are not supported`,
				`window 1: cron "@every 1h": descriptors`,
			},
			fields: []string{"cron", "cron"},
		},
		{
			name: "time zone prefixes",
			windows: []v1alpha1.ScheduleWindow{
				allow("TZ=Europe/Berlin 0 2 * * *", "1h"),
				allow("CRON_TZ=UTC 0 2 * * *", "1h"),
				allow("TZ=UTC", "1h"), // makes robfig/cron's own prefix parsing panic
				allow(" CRON_TZ=UTC", "1h"),
			},
			want: []string{
				`window 0: cron "TZ=Europe/Berlin 0 2 * * *": a TZ= or CRON_TZ= prefix is not supported; set the window's timeZone`,
				`window 1: cron "CRON_TZ=UTC 0 2 * * *": a TZ= or CRON_TZ= prefix`,
				`window 2: cron "TZ=UTC": a TZ= or CRON_TZ= prefix`,
				`window 3: cron " CRON_TZ=UTC": a TZ= or CRON_TZ= prefix`,
			},
			fields: []string{"cron", "cron", "cron", "cron"},
		},
		{
			name:    "seconds field",
			windows: []v1alpha1.ScheduleWindow{allow("0 0 2 * * *", "1h")},
			want:    []string{`window 0: cron "0 0 2 * * *": expected exactly 5 fields, found 6`},
			fields:  []string{"cron"},
		},
		{
			name:    "too few fields",
			windows: []v1alpha1.ScheduleWindow{allow("0 2 * *", "1h")},
			want:    []string{`window 0: cron "0 2 * *": expected exactly 5 fields, found 4`},
			fields:  []string{"cron"},
		},
		{
			name:    "empty cron",
			windows: []v1alpha1.ScheduleWindow{allow("  ", "1h")},
			want:    []string{`window 0: cron is empty; give five fields`},
			fields:  []string{"cron"},
		},
		{
			name:    "bad step and name",
			windows: []v1alpha1.ScheduleWindow{allow("*/0 * * * *", "1h"), allow("0 2 * * funday", "1h")},
			want:    []string{`window 0: cron "*/0 * * * *": step of range should be a positive number`, `window 1: cron "0 2 * * funday": failed to parse int from funday`},
			fields:  []string{"cron", "cron"},
		},
		{
			name:    "never matches",
			windows: []v1alpha1.ScheduleWindow{allow("0 0 30 2 *", "1h"), allow("0 0 31 4,6,9,11 *", "1h")},
			want:    []string{`window 0: cron "0 0 30 2 *" never matches a real date`, `window 1: cron "0 0 31 4,6,9,11 *" never matches`},
			fields:  []string{"cron", "cron"},
		},
		{
			name: "durations",
			windows: []v1alpha1.ScheduleWindow{
				allow("0 2 * * *", "0s"), allow("0 2 * * *", "-5m"), allow("0 2 * * *", "1 hour"), allow("0 2 * * *", ""), allow("0 2 * * *", "5"),
			},
			want: []string{
				`window 0: duration "0s" must be positive`,
				`window 1: duration "-5m" must be positive`,
				`window 2: duration "1 hour" is not a Go duration`,
				`window 3: duration is empty`,
				`window 4: duration "5" is not a Go duration`,
			},
			fields: []string{"duration", "duration", "duration", "duration", "duration"},
		},
		{
			name:    "type",
			windows: []v1alpha1.ScheduleWindow{{Cron: "0 2 * * *", Duration: "1h"}, {Type: "allow", Cron: "0 2 * * *", Duration: "1h"}},
			want:    []string{`window 0: type "" is not valid; use Allow or Deny`, `window 1: type "allow" is not valid`},
			fields:  []string{"type", "type"},
		},
		{
			name: "every problem of every window is reported, in order",
			windows: []v1alpha1.ScheduleWindow{
				daily(),
				{Type: "Sometimes", Cron: "@hourly", Duration: "0", TimeZone: "Mars/Olympus"},
				daily(),
				in("Europe/Berln", allow("61 * * * *", "1h")),
			},
			want: []string{
				`window 1: type "Sometimes"`,
				`window 1: unknown time zone "Mars/Olympus"`,
				`window 1: cron "@hourly": descriptors`,
				`window 1: duration "0" must be positive`,
				`window 3: unknown time zone "Europe/Berln"`,
				`window 3: cron "61 * * * *": end of range`,
			},
			fields: []string{"type", "timeZone", "cron", "duration", "timeZone", "cron"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Compile(tt.windows)
			if err == nil {
				t.Fatalf("Compile succeeded, want errors %q", tt.want)
			}
			if s != nil {
				t.Fatalf("Compile returned a schedule with an error")
			}
			joined, ok := err.(interface{ Unwrap() []error })
			if !ok {
				t.Fatalf("error %T is not a joined error", err)
			}
			errs := joined.Unwrap()
			if len(errs) != len(tt.want) {
				t.Fatalf("got %d errors, want %d:\n%v", len(errs), len(tt.want), err)
			}
			for i, e := range errs {
				var we *WindowError
				if !errors.As(e, &we) {
					t.Fatalf("error %d is %T, want *WindowError", i, e)
				}
				if !strings.HasPrefix(e.Error(), tt.want[i]) {
					t.Errorf("error %d = %q\nwant prefix %q", i, e.Error(), tt.want[i])
				}
				if we.Field != tt.fields[i] {
					t.Errorf("error %d field = %q, want %q", i, we.Field, tt.fields[i])
				}
				if !strings.Contains(err.Error(), e.Error()) {
					t.Errorf("joined error lacks %q", e.Error())
				}
			}
		})
	}
}

func TestCompileErrorsSayHowToFix(t *testing.T) {
	_, err := Compile([]v1alpha1.ScheduleWindow{
		allow("61 * * * *", "1h"),
		in("Europe/Berln", daily()),
		allow("0 2 * * *", "0s"),
		allow("@daily", "1h"),
	})
	for _, hint := range []string{
		`give five fields "minute hour day-of-month month day-of-week", e.g. "0 2 * * *"`,
		`use an IANA name such as "Europe/Berlin"`,
		`e.g. "30m" or "1h30m"`,
	} {
		if !strings.Contains(err.Error(), hint) {
			t.Errorf("errors lack the hint %q:\n%v", hint, err)
		}
	}
}

func daily() v1alpha1.ScheduleWindow { return allow("0 2 * * *", "1h") }
