package chaos

import (
	"testing"
	"time"

	"github.com/kick-operator/kick/restart/freshness"
)

// TestJudgeCountsEachRoundOnItsOwn: a Deployment that restarts twice in
// one round and not at all in the next has one duplicate and one loss. A
// count of its restarts over both rounds (two for two changes) would call
// it right.
func TestJudgeCountsEachRoundOnItsOwn(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 15, 0, 0, 0, time.UTC)
	stamp := func(d time.Duration) string { return freshness.FormatStamp(t0.Add(d)) }

	round1 := judge(1, deploymentState{generation: 3, stamp: stamp(2 * time.Second)}, t0)
	round2 := judge(3, deploymentState{generation: 3, stamp: stamp(2 * time.Second)}, t0.Add(time.Minute))
	if round1.restarts+round2.restarts != 2 {
		t.Fatalf("restarts %d + %d, want 2 in all", round1.restarts, round2.restarts)
	}
	if round1.lost != 0 || round1.duplicated != 1 {
		t.Errorf("round 1: lost %d, duplicated %d; want 0 and 1", round1.lost, round1.duplicated)
	}
	if round2.lost != 1 || round2.duplicated != 0 {
		t.Errorf("round 2: lost %d, duplicated %d; want 1 and 0", round2.lost, round2.duplicated)
	}
}

// TestJudgeNeedsAStampAfterTheWrite: a restart in the round whose stamp is
// older than the round's write answered an earlier change (a late
// duplicate); the round's own change is lost.
func TestJudgeNeedsAStampAfterTheWrite(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 15, 0, 0, 0, time.UTC)
	cases := []struct {
		name             string
		state            deploymentState
		lost, duplicated int
	}{
		{"answered", deploymentState{generation: 3, stamp: freshness.FormatStamp(t0.Add(time.Millisecond))}, 0, 0},
		{"stamp before the write", deploymentState{generation: 3, stamp: freshness.FormatStamp(t0.Add(-time.Millisecond))}, 1, 1},
		{"no stamp", deploymentState{generation: 3}, 1, 1},
		{"not restarted", deploymentState{generation: 2, stamp: freshness.FormatStamp(t0.Add(time.Second))}, 1, 0},
	}
	for _, c := range cases {
		v := judge(2, c.state, t0)
		if v.lost != c.lost || v.duplicated != c.duplicated {
			t.Errorf("%s: lost %d, duplicated %d; want %d and %d", c.name, v.lost, v.duplicated, c.lost, c.duplicated)
		}
	}
}
