package argocd

import (
	"errors"
	"fmt"
	"strings"
	"time"
	_ "time/tzdata" // window time zones must load where no zoneinfo is installed

	argov1alpha1 "github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"github.com/robfig/cron/v3"
)

// windowParser reads schedules the way Argo CD does: five fields, no
// descriptors.
var windowParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow)

// boundarySlack moves a re-check just past a window boundary: Argo CD
// counts a window as open only strictly after its start.
const boundarySlack = time.Second

// window is one sync window, checked and compiled.
type window struct {
	spec     *argov1alpha1.InlineSyncWindow
	position int // 1-based, in the AppProject's spec.syncWindows
	schedule cron.Schedule
	duration time.Duration
	location *time.Location
}

// WindowVerdict is what an AppProject's sync windows say about one
// Application at one moment.
type WindowVerdict struct {
	// Open is Argo CD's own answer (CanSync for an automated sync).
	Open bool
	// Next is shortly after the earliest start or end of a matching window
	// still to come; zero when there is none. The verdict may change then.
	Next time.Time
	// Message explains a closed verdict.
	Message string
}

// WindowError is a sync window that cannot be evaluated as written.
type WindowError struct {
	Project  string
	Position int
	Window   string
	Err      error
}

func (e *WindowError) Error() string {
	return fmt.Sprintf("AppProject %s: sync window %d (%s): %v", e.Project, e.Position, e.Window, e.Err)
}

func (e *WindowError) Unwrap() error { return e.Err }

// EvaluateWindows applies proj's sync windows to app the way the Argo CD
// application controller does for an automated sync: the windows matching
// the application (upstream Matches, including AND mode), then upstream
// CanSync with no manual-sync bypass and no overrun. Matching windows are
// validated first, because upstream quietly reads an unknown time zone as
// UTC; a window that cannot be read is a *WindowError. now dates the next
// boundary; upstream itself reads the clock.
func EvaluateWindows(proj *argov1alpha1.AppProject, app *argov1alpha1.Application, now time.Time) (WindowVerdict, error) {
	matched := proj.Spec.SyncWindows.Matches(app)
	if !matched.HasWindows() {
		return WindowVerdict{Open: true}, nil
	}
	windows := make([]window, 0, len(*matched))
	for _, spec := range *matched {
		w, err := compileWindow(spec, position(proj.Spec.SyncWindows, spec))
		if err != nil {
			return WindowVerdict{}, &WindowError{Project: proj.Namespace + "/" + proj.Name, Position: w.position, Window: describe(spec), Err: err}
		}
		windows = append(windows, w)
	}
	open, err := matched.CanSync(false, nil)
	if err != nil {
		return WindowVerdict{}, &WindowError{Project: proj.Namespace + "/" + proj.Name, Window: "matching windows", Err: err}
	}
	v := WindowVerdict{Open: open, Next: nextBoundary(windows, now)}
	if !open {
		v.Message = closedMessage(windows, now)
	}
	return v, nil
}

func position(all argov1alpha1.SyncWindows, w *argov1alpha1.InlineSyncWindow) int {
	for i, x := range all {
		if x == w {
			return i + 1
		}
	}
	return 0
}

// compileWindow checks a window the way Argo CD's own validation does, and
// more strictly: the time zone must exist and the duration must be
// positive.
func compileWindow(spec *argov1alpha1.InlineSyncWindow, pos int) (window, error) {
	w := window{spec: spec, position: pos}
	if spec.Kind != "allow" && spec.Kind != "deny" {
		return w, fmt.Errorf("kind %q is neither allow nor deny", spec.Kind)
	}
	var err error
	if w.schedule, err = windowParser.Parse(spec.Schedule); err != nil {
		return w, fmt.Errorf("schedule %q does not parse: %w", spec.Schedule, err)
	}
	if w.duration, err = time.ParseDuration(spec.Duration); err != nil {
		return w, fmt.Errorf("duration %q does not parse: %w", spec.Duration, err)
	}
	if w.duration <= 0 {
		return w, fmt.Errorf("duration %q is not positive, so the window is never open", spec.Duration)
	}
	// LoadLocation reads "" as UTC, as Argo CD does.
	if w.location, err = time.LoadLocation(spec.TimeZone); err != nil {
		return w, fmt.Errorf("time zone %q is unknown (Argo CD would silently use UTC)", spec.TimeZone)
	}
	return w, nil
}

// span returns the occurrence of w that is open at now (start before now,
// end after it), if any, and the next start after now.
func (w window) span(now time.Time) (start time.Time, active bool, next time.Time) {
	local := now.In(w.location)
	first := w.schedule.Next(local.Add(-w.duration))
	if !first.IsZero() && first.Before(local) {
		return first, true, w.schedule.Next(local)
	}
	return time.Time{}, false, first
}

// nextBoundary is shortly after the earliest moment still to come at which
// a window opens or closes. Re-evaluation then asks upstream again, so a
// boundary that changes nothing only costs one evaluation.
func nextBoundary(windows []window, now time.Time) time.Time {
	var best time.Time
	consider := func(t time.Time) {
		if t.IsZero() || t.Before(now) {
			return
		}
		if best.IsZero() || t.Before(best) {
			best = t
		}
	}
	for _, w := range windows {
		start, active, next := w.span(now)
		if active {
			consider(start.Add(w.duration))
		}
		consider(next)
	}
	if best.IsZero() {
		return best
	}
	return best.Add(boundarySlack).UTC()
}

func closedMessage(windows []window, now time.Time) string {
	var deny, allow []string
	for _, w := range windows {
		_, active, _ := w.span(now)
		switch {
		case w.spec.Kind == "deny" && active:
			deny = append(deny, describeAt(w))
		case w.spec.Kind == "allow" && !active:
			allow = append(allow, describeAt(w))
		}
	}
	switch {
	case len(deny) > 0:
		return "inside deny " + plural(len(deny), "window") + " " + strings.Join(deny, ", ")
	case len(allow) > 0:
		return "outside allow " + plural(len(allow), "window") + " " + strings.Join(allow, ", ")
	}
	return "the matching sync windows do not allow an automated sync now"
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

func describeAt(w window) string {
	return fmt.Sprintf("%d (%s)", w.position, describe(w.spec))
}

// describe names a window by what it says.
func describe(w *argov1alpha1.InlineSyncWindow) string {
	tz := w.TimeZone
	if tz == "" {
		tz = "UTC"
	}
	s := fmt.Sprintf("%s %q for %s, %s", w.Kind, w.Schedule, w.Duration, tz)
	if w.Description != "" {
		s += ": " + w.Description
	}
	return s
}

// IsWindowError reports whether err is a sync window that cannot be read.
func IsWindowError(err error) bool {
	var we *WindowError
	return errors.As(err, &we)
}
