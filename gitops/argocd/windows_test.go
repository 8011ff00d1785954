package argocd

import (
	"fmt"
	"strings"
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func mustCompile(t *testing.T, spec argov1alpha1.InlineSyncWindow) window {
	t.Helper()
	w, err := compileWindow(&spec, 1)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestNextBoundary(t *testing.T) {
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	nightly := argov1alpha1.InlineSyncWindow{Kind: "allow", Schedule: "0 2 * * *", Duration: "1h"}
	berlin := nightly
	berlin.TimeZone = "Europe/Berlin"
	long := argov1alpha1.InlineSyncWindow{Kind: "deny", Schedule: "0 0 * * *", Duration: "30h"}
	never := argov1alpha1.InlineSyncWindow{Kind: "allow", Schedule: "0 0 30 2 *", Duration: "1h"}
	cases := []struct {
		name    string
		windows []argov1alpha1.InlineSyncWindow
		now     string
		want    string
	}{
		{name: "before the start", windows: []argov1alpha1.InlineSyncWindow{nightly}, now: "2026-01-15T01:00:00Z", want: "2026-01-15T02:00:01Z"},
		{name: "inside: the end", windows: []argov1alpha1.InlineSyncWindow{nightly}, now: "2026-01-15T02:30:00Z", want: "2026-01-15T03:00:01Z"},
		{name: "at the start", windows: []argov1alpha1.InlineSyncWindow{nightly}, now: "2026-01-15T02:00:00Z", want: "2026-01-15T02:00:01Z"},
		{name: "after: tomorrow", windows: []argov1alpha1.InlineSyncWindow{nightly}, now: "2026-01-15T03:00:00Z", want: "2026-01-16T02:00:01Z"},
		{name: "time zone", windows: []argov1alpha1.InlineSyncWindow{berlin}, now: "2026-01-15T00:30:00Z", want: "2026-01-15T01:00:01Z"},
		{name: "time zone in summer: inside, the end", windows: []argov1alpha1.InlineSyncWindow{berlin}, now: "2026-07-15T00:30:00Z", want: "2026-07-15T01:00:01Z"},
		{name: "earliest of several", windows: []argov1alpha1.InlineSyncWindow{nightly, berlin}, now: "2026-01-15T00:30:00Z", want: "2026-01-15T01:00:01Z"},
		{name: "overlapping occurrences: the earliest end", windows: []argov1alpha1.InlineSyncWindow{long}, now: "2026-01-15T03:00:00Z", want: "2026-01-15T06:00:01Z"},
		{name: "never fires", windows: []argov1alpha1.InlineSyncWindow{never}, now: "2026-01-15T03:00:00Z"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var ws []window
			for _, spec := range c.windows {
				ws = append(ws, mustCompile(t, spec))
			}
			got := nextBoundary(ws, at(c.now))
			if c.want == "" {
				if !got.IsZero() {
					t.Fatalf("boundary = %s, want none", got)
				}
				return
			}
			if !got.Equal(at(c.want)) {
				t.Fatalf("boundary = %s, want %s", got.Format(time.RFC3339), c.want)
			}
		})
	}
}

func TestCompileWindowRejects(t *testing.T) {
	cases := []struct {
		spec argov1alpha1.InlineSyncWindow
		want string
	}{
		{argov1alpha1.InlineSyncWindow{Kind: "Allow", Schedule: "* * * * *", Duration: "1h"}, "neither allow nor deny"},
		{argov1alpha1.InlineSyncWindow{Kind: "allow", Schedule: "* * * *", Duration: "1h"}, "schedule"},
		{argov1alpha1.InlineSyncWindow{Kind: "allow", Schedule: "@daily", Duration: "1h"}, "schedule"},
		{argov1alpha1.InlineSyncWindow{Kind: "allow", Schedule: "0 2 * * *", Duration: "1 hour"}, "duration"},
		{argov1alpha1.InlineSyncWindow{Kind: "allow", Schedule: "0 2 * * *", Duration: "0s"}, "not positive"},
		{argov1alpha1.InlineSyncWindow{Kind: "deny", Schedule: "0 2 * * *", Duration: "-1h"}, "not positive"},
		{argov1alpha1.InlineSyncWindow{Kind: "allow", Schedule: "0 2 * * *", Duration: "1h", TimeZone: "Mars/Olympus"}, "time zone"},
	}
	for _, c := range cases {
		if _, err := compileWindow(&c.spec, 1); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("compileWindow(%+v) = %v, want an error about %s", c.spec, err, c.want)
		}
	}
}

// The verdict comes from upstream, which reads the clock; windows are laid
// out relative to now so the table holds at any time of day.
func TestEvaluateWindows(t *testing.T) {
	now := time.Now()
	always := func(kind string) *argov1alpha1.InlineSyncWindow {
		return &argov1alpha1.InlineSyncWindow{Kind: kind, Schedule: "* * * * *", Duration: "1h", Applications: []string{"*"}}
	}
	later := now.Add(6 * time.Hour).UTC()
	laterAllow := &argov1alpha1.InlineSyncWindow{Kind: "allow", Schedule: fmt.Sprintf("%d %d * * *", later.Minute(), later.Hour()), Duration: "1m", Applications: []string{"web"}}
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		t.Fatal(err)
	}
	// Open from an hour ago to two hours ahead on Tokyo's clock; read as UTC
	// it would be eight hours away.
	tokyoAllow := &argov1alpha1.InlineSyncWindow{Kind: "allow", Schedule: fmt.Sprintf("0 %d * * *", (now.In(tokyo).Hour()+23)%24),
		Duration: "3h", TimeZone: "Asia/Tokyo", Namespaces: []string{"shop"}}
	tokyoAsUTC := *tokyoAllow
	tokyoAsUTC.TimeZone = ""
	andDeny := always("deny")
	andDeny.Applications, andDeny.Namespaces, andDeny.UseAndOperator = []string{"web"}, []string{"elsewhere"}, true
	orDeny := *andDeny
	orDeny.UseAndOperator = false
	manualDeny := always("deny")
	manualDeny.ManualSync = true
	otherApp := always("deny")
	otherApp.Applications = []string{"api"}
	byCluster := always("deny")
	byCluster.Applications, byCluster.Clusters = nil, []string{"https://kubernetes.default.svc"}
	broken := &argov1alpha1.InlineSyncWindow{Kind: "deny", Schedule: "0 2 * * *", Duration: "1h", TimeZone: "Nowhere/Land", Applications: []string{"web"}}
	brokenElsewhere := *broken
	brokenElsewhere.Applications = []string{"api"}

	cases := []struct {
		name    string
		windows []*argov1alpha1.InlineSyncWindow
		open    bool
		msg     string
		next    time.Duration // approximate distance of the boundary; 0: none checked
		err     string
	}{
		{name: "no windows", open: true},
		{name: "allow open", windows: []*argov1alpha1.InlineSyncWindow{always("allow")}, open: true},
		{name: "deny active", windows: []*argov1alpha1.InlineSyncWindow{always("deny")}, msg: "inside deny window 1", next: time.Minute},
		{name: "deny wins over allow", windows: []*argov1alpha1.InlineSyncWindow{always("allow"), always("deny")}, msg: "inside deny window 2"},
		{name: "allow closed", windows: []*argov1alpha1.InlineSyncWindow{laterAllow}, msg: "outside allow window 1", next: 6 * time.Hour},
		{name: "one allow open of two", windows: []*argov1alpha1.InlineSyncWindow{laterAllow, always("allow")}, open: true},
		{name: "deny for another app", windows: []*argov1alpha1.InlineSyncWindow{otherApp}, open: true},
		{name: "deny by cluster", windows: []*argov1alpha1.InlineSyncWindow{byCluster}, msg: "inside deny"},
		{name: "AND mode needs every selector", windows: []*argov1alpha1.InlineSyncWindow{andDeny}, open: true},
		{name: "OR mode needs one selector", windows: []*argov1alpha1.InlineSyncWindow{&orDeny}, msg: "inside deny"},
		{name: "manual sync is no bypass", windows: []*argov1alpha1.InlineSyncWindow{manualDeny}, msg: "inside deny"},
		{name: "time zone honoured", windows: []*argov1alpha1.InlineSyncWindow{tokyoAllow}, open: true},
		{name: "same window in UTC is closed", windows: []*argov1alpha1.InlineSyncWindow{&tokyoAsUTC}, msg: "outside allow"},
		{name: "broken matching window", windows: []*argov1alpha1.InlineSyncWindow{always("allow"), broken}, err: `AppProject argocd/team: sync window 2 (deny "0 2 * * *" for 1h, Nowhere/Land): time zone "Nowhere/Land" is unknown`},
		{name: "broken window of another app", windows: []*argov1alpha1.InlineSyncWindow{&brokenElsewhere}, open: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			proj := &argov1alpha1.AppProject{ObjectMeta: metav1.ObjectMeta{Namespace: "argocd", Name: "team"},
				Spec: argov1alpha1.AppProjectSpec{SyncWindows: c.windows}}
			app := &argov1alpha1.Application{ObjectMeta: metav1.ObjectMeta{Namespace: "argocd", Name: "web"},
				Spec: argov1alpha1.ApplicationSpec{Destination: argov1alpha1.ApplicationDestination{Server: "https://kubernetes.default.svc", Namespace: "shop"}}}
			v, err := EvaluateWindows(proj, app, now)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) || !IsWindowError(err) {
					t.Fatalf("error = %v, want a window error containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if v.Open != c.open || !strings.Contains(v.Message, c.msg) {
				t.Fatalf("verdict = %+v, want open=%v mentioning %q", v, c.open, c.msg)
			}
			if c.next > 0 {
				if d := v.Next.Sub(now); d <= 0 || d > c.next+2*time.Minute || d < c.next-2*time.Minute && c.next > time.Hour {
					t.Fatalf("next boundary in %s, want about %s", d, c.next)
				}
			}
		})
	}
}
