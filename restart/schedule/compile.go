package schedule

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	_ "time/tzdata" // zones must load in a distroless image without /usr/share/zoneinfo

	"github.com/robfig/cron/v3"

	"github.com/kick-operator/kick/api/v1alpha1"
)

// Schedule is a compiled set of windows. The zero value and a nil *Schedule
// have no windows and are always open. A Schedule is immutable and safe for
// concurrent use.
type Schedule struct {
	windows  []window
	hasAllow bool
}

// window is one compiled ScheduleWindow.
type window struct {
	index int // position in spec.schedule.windows, for messages
	deny  bool
	sched *cron.SpecSchedule // Location set to loc
	dur   time.Duration
	loc   *time.Location
}

// WindowError describes one problem with one window. Compile joins all of
// them with errors.Join; errors.As finds the first.
type WindowError struct {
	// Index is the window's position in spec.schedule.windows.
	Index int
	// Field is the offending field: "type", "cron", "duration" or "timeZone".
	Field string
	// Msg says what is wrong and how to fix it.
	Msg string
}

func (e *WindowError) Error() string { return fmt.Sprintf("window %d: %s", e.Index, e.Msg) }

// fiveFields parses minute, hour, day-of-month, month and day-of-week, and
// nothing else: no seconds field, no descriptors.
var fiveFields = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow)

// neverBefore is where Compile looks for a first match. Every possible
// month/day combination (29 February included) and weekday occurs within
// the five years robfig/cron searches from here.
var neverBefore = time.Date(1999, time.December, 31, 0, 0, 0, 0, time.UTC)

const cronHint = `five fields "minute hour day-of-month month day-of-week", e.g. "0 2 * * *"`

// Compile validates and compiles windows. The error, if any, joins one
// *WindowError per problem found, in window order, each naming the window's
// index and how to fix it.
func Compile(windows []v1alpha1.ScheduleWindow) (*Schedule, error) {
	s := &Schedule{windows: make([]window, 0, len(windows))}
	var errs []error
	for i := range windows {
		w, werrs := compileWindow(i, &windows[i])
		if len(werrs) > 0 {
			errs = append(errs, werrs...)
			continue
		}
		s.windows = append(s.windows, w)
		s.hasAllow = s.hasAllow || !w.deny
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return s, nil
}

func compileWindow(i int, in *v1alpha1.ScheduleWindow) (window, []error) {
	var errs []error
	fail := func(field, format string, args ...any) {
		errs = append(errs, &WindowError{Index: i, Field: field, Msg: fmt.Sprintf(format, args...)})
	}
	w := window{index: i}

	switch in.Type {
	case v1alpha1.WindowAllow:
	case v1alpha1.WindowDeny:
		w.deny = true
	default:
		fail("type", "type %q is not valid; use Allow or Deny", in.Type)
	}

	zone := in.EffectiveTimeZone()
	loc, err := loadLocation(zone)
	if err != nil {
		fail("timeZone", "%v", err)
	}
	w.loc = loc

	if sched, msg := parseCron(in.Cron, loc); msg != "" {
		fail("cron", "%s", msg)
	} else {
		w.sched = sched
	}

	switch d, err := time.ParseDuration(strings.TrimSpace(in.Duration)); {
	case strings.TrimSpace(in.Duration) == "":
		fail("duration", `duration is empty; give a positive Go duration such as "30m" or "1h30m"`)
	case err != nil:
		fail("duration", `duration %q is not a Go duration; write e.g. "30m" or "1h30m" (units ns, us, ms, s, m, h)`, in.Duration)
	case d <= 0:
		fail("duration", `duration %q must be positive, e.g. "30m" or "1h30m"`, in.Duration)
	default:
		w.dur = d
	}
	return w, errs
}

// loadLocation resolves an IANA zone name. "Local" is refused: it would make
// the schedule depend on the operator's host settings.
func loadLocation(name string) (*time.Location, error) {
	if name == "Local" {
		return nil, fmt.Errorf(`time zone "Local" is not allowed; name an IANA zone such as "Europe/Berlin" or "UTC"`)
	}
	if loc, ok := locations.Load(name); ok {
		return loc.(*time.Location), nil
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf(`unknown time zone %q; use an IANA name such as "Europe/Berlin" or "UTC"`, name)
	}
	locations.Store(name, loc)
	return loc, nil
}

// locations caches loaded zones by name (only valid names, so it stays as
// small as the zone database). Loading one parses tzdata, which would
// otherwise dominate Compile.
var locations sync.Map

// parseCron parses a five-field expression, pins it to loc (UTC when loc is
// nil because the zone was invalid) and checks that it ever matches. It
// returns a message for the user instead of an error.
func parseCron(expr string, loc *time.Location) (*cron.SpecSchedule, string) {
	spec := strings.TrimSpace(expr)
	switch {
	case spec == "":
		return nil, "cron is empty; give " + cronHint
	case strings.HasPrefix(spec, "TZ=") || strings.HasPrefix(spec, "CRON_TZ="):
		// Also keeps robfig/cron's prefix parsing, which can panic, unreachable.
		return nil, fmt.Sprintf("cron %q: a TZ= or CRON_TZ= prefix is not supported; set the window's timeZone instead", expr)
	case strings.HasPrefix(spec, "@"):
		return nil, fmt.Sprintf("cron %q: descriptors such as @daily or @every are not supported; give %s", expr, cronHint)
	}
	parsed, err := fiveFields.Parse(spec)
	if err != nil {
		return nil, fmt.Sprintf("cron %q: %v; give %s", expr, err, cronHint)
	}
	sched, ok := parsed.(*cron.SpecSchedule)
	if !ok {
		return nil, fmt.Sprintf("cron %q: unsupported expression; give %s", expr, cronHint)
	}
	if loc == nil { // the zone is reported separately; still check the expression
		loc = time.UTC
	}
	sched.Location = loc
	if (&window{sched: sched, loc: loc}).next(neverBefore).IsZero() {
		return nil, fmt.Sprintf("cron %q never matches a real date (check day-of-month against month)", expr)
	}
	return sched, ""
}
