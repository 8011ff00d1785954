package rollup

import (
	"reflect"
	"testing"
	"time"
)

var (
	change  = time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC) // nanoseconds, as records keep it
	tls     = Source{Kind: "Secret", Name: "web-tls"}
	db      = Source{Kind: "Secret", Name: "db"}
	maxWait = 15 * time.Minute
)

// restarted is a request whose last restart answered src's change at t.
func restarted(src Source, t time.Time, o Outcome, completed time.Time) Member {
	return Member{Namespace: "web", RestartedFor: src, RestartedAt: t, Observed: t.Truncate(time.Microsecond), Outcome: o, Completed: completed}
}

// waiting is an open request that saw the change at t and has not restarted for it.
func waiting(t time.Time, o Outcome) Member {
	return Member{Namespace: "web", Observed: t.Truncate(time.Microsecond), Outcome: o}
}

// TestBuildCounts: requests are grouped by the source and change their restart answered, and
// each group counts its requests by where they stand; open requests that have not restarted for
// the change yet join it by the change time they saw (microseconds).
func TestBuildCounts(t *testing.T) {
	done := change.Add(4*time.Minute + 12*time.Second)
	members := []Member{
		restarted(tls, change, Succeeded, change.Add(time.Minute)),
		restarted(tls, change, Succeeded, done),
		restarted(tls, change, Failed, change.Add(2*time.Minute)),
		restarted(tls, change, InProgress, time.Time{}),
		restarted(tls, change, Waiting, time.Time{}), // a budget wait records its change first
		waiting(change, Held),
		waiting(change, Waiting),
		// An earlier change of the same Secret is another fan-out.
		restarted(tls, change.Add(-time.Hour), Succeeded, change.Add(-50*time.Minute)),
		// A request open for a change no restart answered yet belongs to no known fan-out.
		waiting(change.Add(time.Second), Waiting),
		// A person's request (no source recorded) belongs to none.
		{Namespace: "web", Outcome: Succeeded, Completed: done},
	}
	got := Build(members)
	want := []Group{
		{Key: Key{Namespace: "web", Source: tls, ChangedAt: change}, Workloads: 7, Succeeded: 2, Failed: 1, Held: 1, Waiting: 2, InProgress: 1, LastCompletion: done},
		{Key: Key{Namespace: "web", Source: tls, ChangedAt: change.Add(-time.Hour)}, Workloads: 1, Succeeded: 1, LastCompletion: change.Add(-50 * time.Minute)},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Build:\n got %+v\nwant %+v", got, want)
	}
	if got[0].Open() != 4 {
		t.Errorf("open = %d, want 4", got[0].Open())
	}
}

// TestBuildReopened: a request that restarted for an older change and is open again for a newer
// one counts in the newer fan-out only; a finished one stays in the fan-out it restarted for.
func TestBuildReopened(t *testing.T) {
	older := change.Add(-time.Hour)
	reopened := restarted(tls, older, Waiting, older.Add(time.Minute))
	reopened.Observed = change.Truncate(time.Microsecond)
	members := []Member{
		restarted(tls, change, InProgress, time.Time{}),
		reopened,
		restarted(tls, older, Succeeded, older.Add(time.Minute)),
	}
	got := Build(members)
	if len(got) != 2 || got[0].ChangedAt != change || got[0].Workloads != 2 || got[0].Waiting != 1 ||
		got[1].ChangedAt != older || got[1].Workloads != 1 || got[1].Succeeded != 1 {
		t.Fatalf("Build: %+v", got)
	}
}

// TestBuildSeparatesSourcesAndNamespaces: two Secrets changed at the same instant, or one name
// in two namespaces, are separate fan-outs, newest change first and then by source.
func TestBuildSeparatesSourcesAndNamespaces(t *testing.T) {
	other := restarted(tls, change, Succeeded, change)
	other.Namespace = "shop"
	got := Build([]Member{
		restarted(tls, change, Succeeded, change),
		restarted(db, change, Succeeded, change),
		other,
		restarted(db, change.Add(time.Second), Succeeded, change),
	})
	var keys []string
	for _, g := range got {
		keys = append(keys, g.Namespace+"/"+g.Source.String()+"@"+g.ChangedAt.Format(time.RFC3339Nano))
	}
	want := []string{
		"web/Secret/db@2026-03-01T12:00:01.123456789Z",
		"shop/Secret/web-tls@2026-03-01T12:00:00.123456789Z",
		"web/Secret/db@2026-03-01T12:00:00.123456789Z",
		"web/Secret/web-tls@2026-03-01T12:00:00.123456789Z",
	}
	if !reflect.DeepEqual(keys, want) {
		t.Fatalf("groups:\n got %v\nwant %v", keys, want)
	}
}

// TestBuildWaves: the waves count is the number of distinct waves among a fan-out's requests,
// zero when requests carry none.
func TestBuildWaves(t *testing.T) {
	var members []Member
	for i, wave := range []int{1, 1, 2, 3, 3} {
		m := restarted(tls, change, Succeeded, change.Add(time.Duration(i)*time.Second))
		m.Wave = wave
		members = append(members, m)
	}
	if got := Build(members); len(got) != 1 || got[0].Waves != 3 {
		t.Fatalf("Build: %+v, want 3 waves", got)
	}
	if got := Build(members[:0:0]); len(got) != 0 {
		t.Fatalf("no members: %+v", got)
	}
	if got := Build([]Member{restarted(tls, change, Succeeded, change)}); got[0].Waves != 0 {
		t.Fatalf("no waves: %+v", got)
	}
}

// TestDue: a fan-out whose requests all finished is due Settle after its last completion, at
// that completion's time; an open one when maxWait after the change passed, at that time; one
// that finished only after maxWait keeps the maxWait time, so a restarted manager computes the
// same time.
func TestDue(t *testing.T) {
	last := change.Add(4 * time.Minute)
	finished := Group{Key: Key{Source: tls, ChangedAt: change}, Workloads: 2, Succeeded: 2, LastCompletion: last}
	open := finished
	open.Succeeded, open.InProgress = 1, 1
	late := finished
	late.LastCompletion = change.Add(maxWait + time.Minute)
	deadline := change.Add(maxWait)
	cases := []struct {
		name string
		g    Group
		now  time.Time
		at   time.Time
		due  bool
		next time.Time
	}{
		{"finished, settling", finished, last.Add(Settle - time.Nanosecond), last, false, last.Add(Settle)},
		{"finished and settled", finished, last.Add(Settle), last, true, last.Add(Settle)},
		{"open before maxWait", open, deadline.Add(-time.Nanosecond), deadline, false, deadline},
		{"open at maxWait", open, deadline, deadline, true, deadline},
		{"finished after maxWait", late, late.LastCompletion.Add(Settle), deadline, true, deadline},
		{"open, nothing finished", Group{Key: finished.Key, Workloads: 1, Waiting: 1}, change, deadline, false, deadline},
	}
	for _, tc := range cases {
		at, due := Due(tc.g, maxWait, tc.now)
		if !at.Equal(tc.at) || due != tc.due {
			t.Errorf("%s: Due = %v, %v; want %v, %v", tc.name, at, due, tc.at, tc.due)
		}
		if next := NextCheck(tc.g, maxWait); !next.Equal(tc.next) {
			t.Errorf("%s: NextCheck = %v, want %v", tc.name, next, tc.next)
		}
	}
}

// TestPendingConsumersKeepTheFanOutOpen: without a restart budget KICK writes a request only as
// it restarts the workload, so a fan-out whose first requests all finished may still have
// consumers to restart. Those that carry no request for the change and do not run it yet keep
// the summary from being due and are counted when maxWait sends it; a consumer that already
// runs the change without a request is no restart of the fan-out; a consumer whose request
// answers the change is counted once, by its request.
func TestPendingConsumersKeepTheFanOutOpen(t *testing.T) {
	last := change.Add(time.Minute)
	a := restarted(tls, change, Succeeded, last)
	a.Target = "Deployment/a"
	b := restarted(tls, change, Succeeded, last)
	b.Target = "Deployment/b"
	// c's request answered an earlier change of the Secret: not this fan-out's.
	c := restarted(tls, change.Add(-time.Hour), Succeeded, change.Add(-50*time.Minute))
	c.Target = "Deployment/c"
	members := []Member{a, b, c}
	groups := Build(members)
	if len(groups) != 2 || !groups[0].ChangedAt.Equal(change) {
		t.Fatalf("Build = %+v", groups)
	}
	consumers := []Consumer{
		{Target: "Deployment/a", Carries: true},
		{Target: "Deployment/b", Carries: false}, // the cache may lag; its request counts
		{Target: "Deployment/c", Carries: false}, // still to restart
		{Target: "Deployment/d", Carries: false}, // still to restart, no request at all
		{Target: "Deployment/e", Carries: true},  // started after the change by other means
	}
	g := WithPending(groups[0], members, consumers)
	if g.Pending != 2 || g.Workloads != 4 || g.Succeeded != 2 || g.Open() != 2 {
		t.Fatalf("WithPending = %+v, want 2 pending of 4 workloads", g)
	}
	settled := last.Add(Settle)
	if at, due := Due(g, maxWait, settled); due {
		t.Fatalf("a fan-out with consumers still to restart is due at %v", at)
	}
	if next := NextCheck(g, maxWait); !next.Equal(change.Add(maxWait)) {
		t.Errorf("NextCheck = %v, want maxWait after the change", next)
	}
	if at, due := Due(g, maxWait, change.Add(maxWait)); !due || !at.Equal(change.Add(maxWait)) {
		t.Errorf("at maxWait: Due = %v, %v; want due at maxWait", at, due)
	}
	// Once every consumer carries the change (or has a request), the fan-out closes as before.
	for i := range consumers {
		consumers[i].Carries = true
	}
	g = WithPending(groups[0], members, consumers)
	if at, due := Due(g, maxWait, settled); !due || !at.Equal(last) || g.Workloads != 2 {
		t.Errorf("all consumers carry the change: Due = %v, %v with %+v; want due at the last completion", at, due, g)
	}
	// An open request waiting to restart for the change answers it.
	w := waiting(change, Waiting)
	w.Target = "Deployment/d"
	members = append(members, w)
	consumers[3].Carries = false
	g = WithPending(Build(members)[0], members, consumers)
	if g.Pending != 0 || g.Waiting != 1 || g.Workloads != 3 {
		t.Errorf("a consumer whose request waits for the change: %+v, want it counted once, as waiting", g)
	}
}
