package request

import (
	"testing"
	"time"

	"github.com/kick-operator/kick/restart/freshness"
)

// A rollout that says when it completes without an event (a Rollout's
// restart settling) is looked at again then, not after the whole poll.
func TestRecheck(t *testing.T) {
	if got := recheck(freshness.Rollout{}, rolloutPoll); got != rolloutPoll {
		t.Fatalf("no recheck: %s, want the poll %s", got, rolloutPoll)
	}
	if got := recheck(freshness.Rollout{Recheck: 3 * time.Second}, rolloutPoll); got != 3*time.Second {
		t.Fatalf("recheck 3s: %s", got)
	}
	if got := recheck(freshness.Rollout{Recheck: time.Hour}, rolloutPoll); got != rolloutPoll {
		t.Fatalf("recheck beyond the poll: %s, want the poll", got)
	}
}
