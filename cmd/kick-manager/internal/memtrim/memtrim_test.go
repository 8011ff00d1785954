package memtrim

import (
	"context"
	"runtime"
	"testing"
	"time"
)

const mib = 1 << 20

func TestDecide(t *testing.T) {
	p := Policy{Quiet: 1 * mib, MinExcess: 4 * mib}
	floor := uint64(20 * mib)
	for _, tc := range []struct {
		name      string
		prev, cur Sample
		want      bool
	}{
		{"quiet and holding 6 MiB more", Sample{100 * mib, 26 * mib}, Sample{100*mib + 512<<10, 26 * mib}, true},
		{"quiet, exactly the excess", Sample{100 * mib, 24 * mib}, Sample{100 * mib, 24 * mib}, true},
		{"quiet but little to win", Sample{100 * mib, 23 * mib}, Sample{100 * mib, 23 * mib}, false},
		{"busy: 8 MiB allocated since the last sample", Sample{100 * mib, 30 * mib}, Sample{108 * mib, 30 * mib}, false},
		{"just over the quiet limit", Sample{100 * mib, 30 * mib}, Sample{101*mib + 1, 30 * mib}, false},
		{"counter went backwards (cannot happen; never release on it)", Sample{100 * mib, 30 * mib}, Sample{99 * mib, 30 * mib}, false},
	} {
		if got := p.Decide(tc.prev, tc.cur, floor); got != tc.want {
			t.Errorf("%s: Decide = %v, want %v", tc.name, got, tc.want)
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
	// The release's own read sees the runtime after it.
	last := s.samples[s.next-1]
	s.samples = append(s.samples[:s.next], append([]Sample{{last.Allocated + 64<<10, s.afterRelease}}, s.samples[s.next:]...)...)
}

// run drives RunWith through n ticks of the script with the default-sized
// policy and returns the releases it reported.
func (s *script) run(n int) []Released {
	ticks := make(chan time.Time)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var got []Released
	go func() {
		defer close(done)
		RunWith(ctx, ticks, Policy{Quiet: 1 * mib, MinExcess: 4 * mib}, s.read, s.release, func(r Released) { got = append(got, r) })
	}()
	for range n {
		ticks <- time.Time{}
	}
	cancel()
	<-done
	return got
}

func TestRunReleasesOncePerQuietPeriod(t *testing.T) {
	s := &script{afterRelease: 21 * mib, samples: []Sample{
		{0, 20 * mib},                        // start: the floor
		{40 * mib, 35 * mib},                 // busy (a burst)
		{80 * mib, 38 * mib},                 // busy
		{80*mib + 100, 38 * mib},             // quiet, 18 MiB over the floor: release (runtime then holds 21 MiB)
		{80*mib + 200<<10, 21*mib + 100<<10}, // quiet, nothing to win
		{80*mib + 400<<10, 22 * mib},         // quiet, still under the excess
		{90 * mib, 30 * mib},                 // busy again
		{90*mib + 10, 30 * mib},              // quiet, 9 MiB over: release
	}}
	got := s.run(9)
	if s.releases != 2 {
		t.Fatalf("released %d times, want 2 (once per quiet period after work)", s.releases)
	}
	if got[0].Before != 38*mib || got[0].After != 21*mib {
		t.Errorf("first release reported %+v, want 38 MiB → 21 MiB", got[0])
	}
}

func TestRunFollowsTheRuntimesOwnReturns(t *testing.T) {
	// The runtime returns memory by itself down to 12 MiB: an excess is
	// measured from there, not from the higher starting point.
	s := &script{afterRelease: 12 * mib, samples: []Sample{
		{0, 20 * mib},
		{100, 12 * mib}, // quiet, the runtime scavenged: new floor
		{200, 15 * mib}, // quiet, 3 MiB over: not yet
		{300, 17 * mib}, // quiet, 5 MiB over the new floor: release
	}}
	s.run(3)
	if s.releases != 1 {
		t.Errorf("released %d times, want 1 (17 MiB is 5 MiB over the runtime's own 12)", s.releases)
	}
}

// TestReleaseReturnsGarbageToTheOS runs the real sampling and release: the
// runtime holds the garbage of a burst until Release, and not after.
func TestReleaseReturnsGarbageToTheOS(t *testing.T) {
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
	if held.Allocated < base.Allocated+64*mib {
		t.Fatalf("allocations counted %d MiB, want at least 64", (held.Allocated-base.Allocated)/mib)
	}
	Release()
	after := Read()
	if after.Retained > held.Retained-48*mib {
		t.Errorf("Release left %d MiB held (was %d MiB with 64 MiB of garbage)", after.Retained/mib, held.Retained/mib)
	}
}
