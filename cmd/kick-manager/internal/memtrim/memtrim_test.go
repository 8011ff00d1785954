package memtrim

import (
	"context"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

const mib = 1 << 20

func TestDecide(t *testing.T) {
	p := Policy{Quiet: 1 * mib, QuietSamples: 3, MinGain: 4 * mib}
	for _, tc := range []struct {
		name     string
		quietRun int
		cur      Sample
		want     bool
	}{
		{"three quiet intervals and 6 MiB to win", 3, Sample{Reclaimable: 6 * mib}, true},
		{"more quiet intervals, exactly the gain", 7, Sample{Reclaimable: 4 * mib}, true},
		{"quiet long enough but little to win", 3, Sample{Reclaimable: 3 * mib}, false},
		{"quiet for two intervals only", 2, Sample{Reclaimable: 20 * mib}, false},
		{"busy", 0, Sample{Reclaimable: 20 * mib}, false},
	} {
		if got := p.Decide(tc.quietRun, tc.cur); got != tc.want {
			t.Errorf("%s: Decide = %v, want %v", tc.name, got, tc.want)
		}
	}
	if !(Policy{MinGain: mib}).Decide(1, Sample{Reclaimable: mib}) {
		t.Error("a policy without QuietSamples must release after one quiet interval")
	}
}

func TestIdle(t *testing.T) {
	p := Policy{Quiet: 1 * mib}
	for _, tc := range []struct {
		name      string
		prev, cur Sample
		want      bool
	}{
		{"512 KiB allocated", Sample{Allocated: 100 * mib}, Sample{Allocated: 100*mib + 512<<10}, true},
		{"nothing allocated", Sample{Allocated: 100 * mib}, Sample{Allocated: 100 * mib}, true},
		{"exactly the limit", Sample{Allocated: 100 * mib}, Sample{Allocated: 101 * mib}, true},
		{"just over the limit", Sample{Allocated: 100 * mib}, Sample{Allocated: 101*mib + 1}, false},
		{"8 MiB allocated", Sample{Allocated: 100 * mib}, Sample{Allocated: 108 * mib}, false},
		{"counter went backwards (cannot happen; never idle on it)", Sample{Allocated: 100 * mib}, Sample{Allocated: 99 * mib}, false},
	} {
		if got := p.Idle(tc.prev, tc.cur); got != tc.want {
			t.Errorf("%s: Idle = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// script feeds RunWith one sample per tick and records releases.
type script struct {
	samples  []Sample
	next     int
	releases int
	// afterRelease is what the runtime holds right after a release.
	afterRelease uint64
}

func (s *script) read() Sample {
	if s.next >= len(s.samples) {
		return s.samples[len(s.samples)-1]
	}
	v := s.samples[s.next]
	s.next++
	return v
}

func (s *script) release() {
	s.releases++
	// The release's own read sees the runtime after it: nothing left to win.
	last := s.samples[s.next-1]
	s.samples = append(s.samples[:s.next], append([]Sample{{last.Allocated + 64<<10, s.afterRelease, 0}}, s.samples[s.next:]...)...)
}

// run drives RunWith through n ticks of the script with the default-sized
// policy and returns the releases it reported.
func (s *script) run(n int) []Released {
	var got []Released
	drive(Policy{Quiet: 1 * mib, MinGain: 4 * mib}, s.read, s.release, func(r Released) { got = append(got, r) }, n)
	return got
}

// drive runs RunWith with p for n ticks and returns once it has stopped.
func drive(p Policy, read func() Sample, release func(), released func(Released), n int) {
	ticks := make(chan time.Time)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		RunWith(ctx, ticks, p, read, release, released)
	}()
	for range n {
		ticks <- time.Time{}
	}
	cancel()
	<-done
}

func TestRunReleasesOncePerQuietPeriod(t *testing.T) {
	s := &script{afterRelease: 21 * mib, samples: []Sample{
		{0, 20 * mib, 0},                                // start
		{40 * mib, 35 * mib, 15 * mib},                  // busy (a burst)
		{80 * mib, 38 * mib, 17 * mib},                  // busy
		{80*mib + 100, 38 * mib, 17 * mib},              // quiet, 17 MiB to win: release (runtime then holds 21 MiB)
		{80*mib + 200<<10, 21*mib + 100<<10, 200 << 10}, // quiet, nothing to win
		{80*mib + 400<<10, 22 * mib, 1 * mib},           // quiet, under the gain
		{90 * mib, 30 * mib, 9 * mib},                   // busy again
		{90*mib + 10, 30 * mib, 9 * mib},                // quiet, 9 MiB to win: release
	}}
	got := s.run(9)
	if s.releases != 2 {
		t.Fatalf("released %d times, want 2 (once per quiet period after work)", s.releases)
	}
	if got[0].Before != 38*mib || got[0].After != 21*mib {
		t.Errorf("first release reported %+v, want 38 MiB → 21 MiB", got[0])
	}
}

func TestRunReleasesWhatTheWorkLeftWhereverItStarted(t *testing.T) {
	// Sampling started while the manager was still working after its caches
	// synced (here at 24 MiB held): the work that followed left 6 MiB of
	// garbage but grew the runtime by only 3 MiB over that start. What
	// counts is what a release wins back, not how far the runtime grew.
	s := &script{afterRelease: 21 * mib, samples: []Sample{
		{0, 24 * mib, 2 * mib},
		{30 * mib, 27 * mib, 6 * mib}, // busy
		{30*mib + 100, 27 * mib, 6 * mib},
	}}
	s.run(2)
	if s.releases != 1 {
		t.Errorf("released %d times, want 1 (6 MiB to win after the work)", s.releases)
	}
}

// TestReleaseReturnsGarbageToTheOS runs the real sampling and release: the
// runtime holds the garbage of a burst until Release, and not after.
func TestReleaseReturnsGarbageToTheOS(t *testing.T) {
	// No collection between the allocations and the release: the estimate
	// sees all 64 MiB as allocated since the last one.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	Release()
	base := Read()
	garbage := make([][]byte, 0, 64)
	for range 64 {
		b := make([]byte, mib)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1 // touch every page
		}
		garbage = append(garbage, b)
	}
	held := Read()
	runtime.KeepAlive(garbage) // held up to here, garbage from here on
	if held.Retained < base.Retained+48*mib {
		t.Fatalf("after 64 MiB of allocations the runtime holds %d MiB, started at %d MiB", held.Retained/mib, base.Retained/mib)
	}
	if held.Reclaimable < 60*mib {
		t.Fatalf("with 64 MiB allocated since the last collection, a release is expected to win %d MiB, want at least 60", held.Reclaimable/mib)
	}
	if held.Allocated < base.Allocated+64*mib {
		t.Fatalf("allocations counted %d MiB, want at least 64", (held.Allocated-base.Allocated)/mib)
	}
	Release()
	after := Read()
	if after.Retained > held.Retained-48*mib {
		t.Errorf("Release left %d MiB held (was %d MiB with 64 MiB of garbage)", after.Retained/mib, held.Retained/mib)
	}
	if after.Reclaimable >= DefaultPolicy.MinGain {
		t.Errorf("right after a release another is expected to win %d MiB; the policy would release again", after.Reclaimable/mib)
	}
}

// TestDefaultsReleaseSoonAfterWork plays a manager at the default settings:
// 10 s of reconciles allocating 5 MiB/s, then idle with a lease renewal's
// trickle (32 KiB/s) and a 400 KiB metrics scrape right after the work
// stopped and every 15 s. The heap the work grew must go back within a few
// seconds of its end (DefaultPolicy.QuietSamples intervals and one more), scrape or not, so an idle manager is measured and billed at its
// live data, not at its last busy second; and the trickle after it must not
// make it collect more often than once per DefaultPolicy.MinGain allocated.
func TestDefaultsReleaseSoonAfterWork(t *testing.T) {
	const (
		busy    = 10 * time.Second
		idle    = 60 * time.Second
		trickle = 32 << 10
		scrape  = 400 << 10
	)
	var (
		now                 time.Duration
		allocated, retained uint64 = 0, 20 * mib
		garbage             uint64
		releasedAt          []time.Duration
		started             bool // RunWith took its starting sample, at time 0
		sampleAfterRelease  bool
	)
	// read is the runtime one DefaultInterval after the previous sample:
	// that interval's allocations applied. The sample RunWith takes right
	// after a release is of the same moment. read and release run only on
	// RunWith's goroutine.
	read := func() Sample {
		if !started || sampleAfterRelease {
			started, sampleAfterRelease = true, false
			return Sample{Allocated: allocated, Retained: retained, Reclaimable: garbage}
		}
		start := now
		now += DefaultInterval
		if start < busy {
			allocated += 5 * mib * uint64(DefaultInterval/time.Second)
			retained = min(retained+2*mib, 40*mib)
			garbage = retained - 20*mib
		} else {
			n := trickle * uint64(DefaultInterval/time.Second)
			if (start-busy)%(15*time.Second) == 0 {
				n += scrape
			}
			allocated, garbage = allocated+n, garbage+n
		}
		return Sample{Allocated: allocated, Retained: retained, Reclaimable: garbage}
	}
	release := func() {
		retained, garbage = 21*mib, 0
		releasedAt = append(releasedAt, now)
		sampleAfterRelease = true
	}
	drive(DefaultPolicy, read, release, nil, int((busy+idle)/DefaultInterval))
	if len(releasedAt) == 0 {
		t.Fatal("never released after the work")
	}
	within := time.Duration(DefaultPolicy.QuietSamples+1) * DefaultInterval
	if after := releasedAt[0] - busy; after < 0 || after > within {
		t.Errorf("first released %s after the work stopped, want within %s (sampling every %s)", after, within, DefaultInterval)
	}
	// While idle, a collection costs CPU for little: at most one per
	// MinGain the trickle and the scrapes allocate.
	idleAllocated := uint64(trickle*(idle/time.Second)) + scrape*uint64(idle/(15*time.Second))
	if most := int(idleAllocated / DefaultPolicy.MinGain); len(releasedAt)-1 > most {
		t.Errorf("released at %v: %d times while idle, want at most %d (one per %d KiB allocated)",
			releasedAt, len(releasedAt)-1, most, DefaultPolicy.MinGain>>10)
	}
}

// TestDefaultsWaitOutChangesSecondsApart plays a manager at the default
// settings handling one change every 2 s for a minute (each reconcile
// allocating 1.5 MiB, so after each a release would win back more than
// MinGain), then idle. No release may come between two changes: it would
// cost a collection, and the next change would fault the returned pages
// back in. Once the changes stop, the heap goes back within
// QuietSamples+1 intervals.
func TestDefaultsWaitOutChangesSecondsApart(t *testing.T) {
	const (
		every  = 2 * time.Second
		busy   = 60 * time.Second
		idle   = 20 * time.Second
		change = 3 * mib / 2
	)
	var (
		now                time.Duration
		allocated, garbage uint64
		releasedAt         []time.Duration
		started, after     bool
	)
	read := func() Sample {
		if !started || after {
			started, after = true, false
			return Sample{Allocated: allocated, Retained: 20*mib + garbage, Reclaimable: garbage}
		}
		start := now
		now += DefaultInterval
		if start < busy && start%every == 0 {
			allocated += change
			garbage += change
		}
		return Sample{Allocated: allocated, Retained: 20*mib + garbage, Reclaimable: garbage}
	}
	release := func() {
		garbage = 0
		releasedAt = append(releasedAt, now)
		after = true
	}
	drive(DefaultPolicy, read, release, nil, int((busy+idle)/DefaultInterval))
	for _, at := range releasedAt {
		if at <= busy {
			t.Errorf("released at %s, between two changes %s apart (released at %v)", at, every, releasedAt)
		}
	}
	within := time.Duration(DefaultPolicy.QuietSamples+1) * DefaultInterval
	if len(releasedAt) == 0 || releasedAt[0]-(busy-every) > within+every {
		t.Errorf("released at %v; want once within %s of the last change at %s", releasedAt, within, busy-every)
	}
}
