// Package memtrim hands the memory a burst of work leaves behind back to the
// operating system once the process has gone quiet, so an idle manager's
// resident memory follows its live data, not the heap its last burst grew.
//
// The Go runtime keeps the heap it grew until the next collection and returns
// freed pages only slowly; a controller that is idle most of the time would
// otherwise sit at the size of its last busy minute. The decision is pure
// (Policy.Decide); Run samples the runtime and applies it.
package memtrim

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// Sample is what the runtime reports at one moment.
type Sample struct {
	// Allocated counts every heap byte allocated since the process started.
	Allocated uint64
	// Retained is the memory the runtime holds and has not returned to the
	// operating system: roughly its share of the resident set.
	Retained uint64
}

// Policy says when a release is worth its cost (one garbage collection,
// a few milliseconds of CPU on a heap of tens of MB).
type Policy struct {
	// Quiet is the most a process may allocate between two samples and
	// still count as idle.
	Quiet uint64
	// MinExcess is how much more than right after the last release the
	// runtime must hold before another release is worth it.
	MinExcess uint64
}

// DefaultPolicy: idle means under 1 MiB allocated between samples (a
// metrics scrape or a lease renewal stays under it, a reconcile burst does
// not); a release must win back at least 4 MiB.
var DefaultPolicy = Policy{Quiet: 1 << 20, MinExcess: 4 << 20}

// Decide reports whether to release now: the process allocated at most
// Quiet since prev, and holds at least MinExcess more than floor, the
// memory it held right after the last release.
func (p Policy) Decide(prev, cur Sample, floor uint64) bool {
	if cur.Allocated < prev.Allocated || cur.Allocated-prev.Allocated > p.Quiet {
		return false
	}
	return cur.Retained >= floor+p.MinExcess
}

// Released describes one release, for logging.
type Released struct {
	Before, After uint64
	Took          time.Duration
}

// Run samples the runtime every interval and releases memory when the
// policy says so, until ctx ends. released, if not nil, is told about each
// release.
func Run(ctx context.Context, interval time.Duration, p Policy, released func(Released)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	RunWith(ctx, t.C, p, Read, Release, released)
}

// RunWith is Run with the sampling and the release supplied (tests).
func RunWith(ctx context.Context, ticks <-chan time.Time, p Policy, read func() Sample, release func(), released func(Released)) {
	prev := read()
	floor := prev.Retained
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticks:
		}
		cur := read()
		if cur.Retained < floor {
			// The runtime returned memory on its own: that is the new floor.
			floor = cur.Retained
		}
		if p.Decide(prev, cur, floor) {
			start := time.Now()
			release()
			after := read()
			floor = after.Retained
			if released != nil {
				released(Released{Before: cur.Retained, After: after.Retained, Took: time.Since(start)})
			}
			// The release allocates a little itself; it must not count as
			// activity at the next tick.
			cur = after
		}
		prev = cur
	}
}

const (
	allocsMetric   = "/gc/heap/allocs:bytes"
	totalMetric    = "/memory/classes/total:bytes"
	releasedMetric = "/memory/classes/heap/released:bytes"
)

// Read samples the Go runtime.
func Read() Sample {
	s := []metrics.Sample{{Name: allocsMetric}, {Name: totalMetric}, {Name: releasedMetric}}
	metrics.Read(s)
	total, released := s[1].Value.Uint64(), s[2].Value.Uint64()
	return Sample{Allocated: s[0].Value.Uint64(), Retained: total - released}
}

// Release collects garbage and returns every free page to the operating
// system at once.
func Release() { debug.FreeOSMemory() }
