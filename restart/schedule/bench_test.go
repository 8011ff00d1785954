package schedule

import (
	"testing"
	"time"
)

// BenchmarkDecide evaluates a realistic policy (weeknight maintenance in
// Berlin, a New York business-hours window, a weekend freeze and a daily
// backup freeze) at instants spread over a week.
func BenchmarkDecide(b *testing.B) {
	s := mustCompile(b,
		in("Europe/Berlin", allow("0 1 * * mon-fri", "3h")),
		in("America/New_York", allow("0 9 * * mon-fri", "8h")),
		in("Europe/Berlin", deny("0 18 * * fri", "62h")),
		deny("30 2 * * *", "20m"),
	)
	benchDecide(b, s)
}

// BenchmarkDecideOverlapping is the expensive shape: dense starts whose
// occurrences overlap, so the end of the stretch must be searched for.
func BenchmarkDecideOverlapping(b *testing.B) {
	benchDecide(b, mustCompile(b, allow("*/5 8-18 * * *", "30m")))
}

// BenchmarkDecideContinuous is a window that never closes; Decide follows it
// for about a week and stops.
func BenchmarkDecideContinuous(b *testing.B) {
	benchDecide(b, mustCompile(b, in("Europe/Berlin", allow("0 0 * * *", "24h"))))
}

func benchDecide(b *testing.B, s *Schedule) {
	base := at(b, "2026-11-30T00:00:00Z")
	times := make([]time.Time, 64)
	for i := range times {
		times[i] = base.Add(time.Duration(i) * 157 * time.Minute) // about a week, odd offsets
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		_ = s.Decide(times[i%len(times)])
		i++
	}
}

func BenchmarkCompile(b *testing.B) {
	windows := ws(
		in("Europe/Berlin", allow("0 1 * * mon-fri", "3h")),
		in("America/New_York", allow("0 9 * * mon-fri", "8h")),
		in("Europe/Berlin", deny("0 18 * * fri", "62h")),
		deny("30 2 * * *", "20m"),
	)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compile(windows); err != nil {
			b.Fatal(err)
		}
	}
}
