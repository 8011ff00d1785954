package rollup

import (
	"testing"
	"time"
)

// TestLedger: a recorded fan-out is handled, one not recorded is not, whatever the location
// of its time (a key read back from the status equals the one built from the requests). Since
// moves to LookBack before now but never past a hold, and forgets the records it passes.
func TestLedger(t *testing.T) {
	since := change.Add(-time.Hour)
	a := Key{Namespace: "web", Source: tls, ChangedAt: change}
	b := Key{Namespace: "web", Source: db, ChangedAt: change.Add(time.Minute)}
	l := NewLedger(since, []Key{a, {Namespace: "web", Source: db, ChangedAt: since.Add(-time.Second)}})
	if got := l.Sent(); len(got) != 1 || got[0] != a {
		t.Fatalf("Sent = %v, want only a (the other is before Since)", got)
	}
	local := a
	local.ChangedAt = a.ChangedAt.In(time.FixedZone("x", 3600))
	if !l.Handled(local) || l.Handled(b) {
		t.Fatalf("Handled(a) = %v, Handled(b) = %v; want true, false", l.Handled(local), l.Handled(b))
	}
	if !l.Handled(Key{Namespace: "web", Source: db, ChangedAt: since.Add(-time.Nanosecond)}) {
		t.Error("a change before Since is not handled")
	}

	// A hold keeps Since before it; the records after it stay.
	if l.Advance(change.Add(time.Hour), a.ChangedAt) || !l.Since().Equal(a.ChangedAt) {
		t.Fatalf("Since = %v, want held at %v with nothing dropped", l.Since(), a.ChangedAt)
	}
	// Without a hold Since goes to LookBack before now and drops a.
	now := change.Add(time.Hour)
	if !l.Advance(now, time.Time{}) || !l.Since().Equal(now.Add(-LookBack)) || len(l.Sent()) != 0 {
		t.Fatalf("Since = %v, Sent = %v; want %v and nothing", l.Since(), l.Sent(), now.Add(-LookBack))
	}
	// It never moves back.
	if l.Advance(now, change); !l.Since().Equal(now.Add(-LookBack)) {
		t.Fatalf("Since moved back to %v", l.Since())
	}
	if l.Handled(Key{Namespace: "web", Source: tls, ChangedAt: now.Add(-LookBack)}) {
		t.Error("a change at Since is handled")
	}
}

// TestLedgerBound: beyond MaxRecords the oldest records go and Since moves just past them, so
// what they record stays handled.
func TestLedgerBound(t *testing.T) {
	l := NewLedger(change, nil)
	keys := make([]Key, MaxRecords+3)
	for i := range keys {
		keys[i] = Key{Namespace: "web", Source: tls, ChangedAt: change.Add(time.Duration(i) * time.Second)}
		l.Record(keys[i])
	}
	if !l.Advance(change, change) {
		t.Fatal("nothing dropped beyond the bound")
	}
	if n := len(l.Sent()); n != MaxRecords {
		t.Fatalf("%d records, want %d", n, MaxRecords)
	}
	if want := keys[2].ChangedAt.Add(time.Nanosecond); !l.Since().Equal(want) {
		t.Fatalf("Since = %v, want %v", l.Since(), want)
	}
	for _, k := range keys {
		if !l.Handled(k) {
			t.Fatalf("%v not handled", k.ChangedAt)
		}
	}
}

// TestUnanswered: the earliest change an open request waits for and no restart of it answered
// yet; finished requests and requests that restarted for their newest change do not count.
func TestUnanswered(t *testing.T) {
	later := change.Add(time.Minute)
	if got := Unanswered([]Member{restarted(tls, change, Succeeded, later), restarted(tls, change, InProgress, time.Time{})}); !got.IsZero() {
		t.Fatalf("Unanswered = %v, want none", got)
	}
	reopened := restarted(tls, change, Waiting, time.Time{})
	reopened.Observed = later.Add(time.Minute).Truncate(time.Microsecond)
	got := Unanswered([]Member{reopened, waiting(later, Held), waiting(change.Add(-time.Hour), Succeeded)})
	if !got.Equal(later.Truncate(time.Microsecond)) {
		t.Fatalf("Unanswered = %v, want %v", got, later)
	}
}
