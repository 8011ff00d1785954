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
	// Reclaimable estimates what a release would give back: the heap's
	// free pages not yet returned, plus everything allocated since the last
	// collection beyond the live heap it found. The second part counts new
	// live data as garbage too; a release corrects it, because the
	// collection it runs measures the live heap again.
	Reclaimable uint64
}

// Policy says when a release is worth its cost (one garbage collection,
// a few milliseconds of CPU on a heap of tens of MB, and the page faults of
// whatever work comes next, which finds its pages returned).
type Policy struct {
	// Quiet is the most a process may allocate between two samples and
	// still count as idle.
	Quiet uint64
	// QuietSamples is how many intervals in a row must be quiet before a
	// release (at least one).
	QuietSamples int
	// MinGain is the least a release must be expected to win back.
	MinGain uint64
}

// DefaultInterval is how often Run samples the runtime with DefaultPolicy:
// a release comes 5–6 s after the work that grew the heap has stopped.
const DefaultInterval = time.Second

// DefaultPolicy, sampled every DefaultInterval: idle means under 256 KiB
// allocated in each of five seconds in a row (a lease renewal stays under
// it, a reconcile does not; a metrics scrape may make one second busy, not
// the next).
//
// Five seconds, not one: changes often come a second or two apart (a
// rotation job, a GitOps sync applying Secrets one after another). A manager
// that released after every quiet second ran a collection between two such
// changes, and the next change faulted its pages back in: in the benchmark's
// single changes, about 1.5 s apart, that cost 2–4 ms of CPU per change,
// and each change took 1.25× as long as with this rule (medians of three
// rounds side by side). A release must be expected to win back at least
// 2 MiB, so an idle manager collects at most once per 2 MiB it allocates.
// The estimate runs low right after work (a release expected to win 4 MiB
// returned 6 MB in the benchmark): a threshold of 4 MiB left some idle
// managers holding 4 MB of garbage.
var DefaultPolicy = Policy{Quiet: 256 << 10, QuietSamples: 5, MinGain: 2 << 20}

// Idle reports whether the process allocated at most Quiet between prev and
// cur.
func (p Policy) Idle(prev, cur Sample) bool {
	return cur.Allocated >= prev.Allocated && cur.Allocated-prev.Allocated <= p.Quiet
}

// Decide reports whether to release at cur, the last of quietRun idle
// intervals in a row: the run is long enough, and a release would win back
// at least MinGain.
func (p Policy) Decide(quietRun int, cur Sample) bool {
	return quietRun >= max(p.QuietSamples, 1) && cur.Reclaimable >= p.MinGain
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
	quietRun := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticks:
		}
		cur := read()
		if p.Idle(prev, cur) {
			quietRun++
		} else {
			quietRun = 0
		}
		if p.Decide(quietRun, cur) {
			start := time.Now()
			release()
			after := read()
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
	freeMetric     = "/memory/classes/heap/free:bytes"
	objectsMetric  = "/memory/classes/heap/objects:bytes"
	liveMetric     = "/gc/heap/live:bytes"
)

// Read samples the Go runtime.
func Read() Sample {
	s := []metrics.Sample{{Name: allocsMetric}, {Name: totalMetric}, {Name: releasedMetric},
		{Name: freeMetric}, {Name: objectsMetric}, {Name: liveMetric}}
	metrics.Read(s)
	total, released := s[1].Value.Uint64(), s[2].Value.Uint64()
	free, objects, live := s[3].Value.Uint64(), s[4].Value.Uint64(), s[5].Value.Uint64()
	reclaimable := free
	if objects > live {
		reclaimable += objects - live
	}
	return Sample{Allocated: s[0].Value.Uint64(), Retained: total - released, Reclaimable: reclaimable}
}

// Release collects garbage and returns every free page to the operating
// system at once.
func Release() { debug.FreeOSMemory() }
