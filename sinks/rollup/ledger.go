package rollup

import (
	"slices"
	"time"
)

// LookBack is how long after a change its fan-out may first show (its first request reaches
// the cache) and still be summarized, when nothing else holds the ledger: a Ledger never
// moves Since closer to now than this.
const LookBack = 10 * time.Minute

// MaxRecords bounds the summaries a Ledger remembers. Beyond it the oldest records are
// dropped and Since moves past them; a fan-out older than that still open is given up.
const MaxRecords = 256

// Ledger is a policy's record of its summaries, kept in the policy's status so that each
// fan-out's summary is sent once across manager restarts and leader changes: every fan-out
// whose change is at or after Since is summarized unless the ledger records it as sent.
// Since only moves forward, and never past a fan-out not summarized yet that the caller can
// see (an open or unsent group, a request waiting for a change no restart answered yet).
type Ledger struct {
	since time.Time
	sent  map[Key]bool
}

// NewLedger returns the ledger stored as since and sent.
func NewLedger(since time.Time, sent []Key) *Ledger {
	l := &Ledger{since: since, sent: make(map[Key]bool, len(sent))}
	for _, k := range sent {
		l.Record(k)
	}
	return l
}

// norm gives k one form whatever the time's location or monotonic reading, so that a key
// read back from the status equals the one built from the requests.
func norm(k Key) Key {
	k.ChangedAt = k.ChangedAt.UTC()
	return k
}

// Since is the time from which changes are summarized.
func (l *Ledger) Since() time.Time { return l.since }

// Sent lists the recorded summaries, oldest change first (then by source).
func (l *Ledger) Sent() []Key {
	out := make([]Key, 0, len(l.sent))
	for k := range l.sent {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b Key) int {
		if c := a.ChangedAt.Compare(b.ChangedAt); c != 0 {
			return c
		}
		return compare(a.Source.String(), b.Source.String())
	})
	return out
}

// Handled reports whether the summary of k needs no sending: it was sent, or its change is
// before Since.
func (l *Ledger) Handled(k Key) bool { return k.ChangedAt.Before(l.since) || l.sent[norm(k)] }

// Record notes that the summary of k was sent (or given up after its retries).
func (l *Ledger) Record(k Key) {
	if !k.ChangedAt.Before(l.since) {
		l.sent[norm(k)] = true
	}
}

// Advance moves Since forward at now: to LookBack before now, but not past hold (the
// earliest change the caller still has to summarize or may yet see; zero for none). It
// forgets the records before the new Since and, beyond MaxRecords, the oldest ones, moving
// Since just past them. It reports whether the stored form changed (a record was dropped).
func (l *Ledger) Advance(now, hold time.Time) bool {
	to := now.Add(-LookBack)
	if !hold.IsZero() && hold.Before(to) {
		to = hold
	}
	if to.After(l.since) {
		l.since = to
	}
	if extra := len(l.sent) - MaxRecords; extra > 0 {
		// Count only the records Since keeps: those before it go below anyway.
		kept := slices.DeleteFunc(l.Sent(), func(k Key) bool { return k.ChangedAt.Before(l.since) })
		if extra = len(kept) - MaxRecords; extra > 0 {
			l.since = kept[extra-1].ChangedAt.Add(time.Nanosecond)
		}
	}
	changed := false
	for k := range l.sent {
		if k.ChangedAt.Before(l.since) {
			delete(l.sent, k)
			changed = true
		}
	}
	return changed
}

// Unanswered is the earliest change an open request of members waits to restart for without
// having restarted for it yet (zero for none): a fan-out that may have no group yet, since
// no restart answered it, and whose summary is still to come.
func Unanswered(members []Member) time.Time {
	var first time.Time
	for _, m := range members {
		if !m.Outcome.Open() || m.Observed.IsZero() || settled(m) {
			continue
		}
		if first.IsZero() || m.Observed.Before(first) {
			first = m.Observed
		}
	}
	return first
}
