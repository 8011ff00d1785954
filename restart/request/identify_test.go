package request

import (
	"testing"
	"time"

	"github.com/kick-operator/kick/restart/assess"
	"github.com/kick-operator/kick/restart/freshness"
)

func TestIdentifyWaitEndsAfterTheGrace(t *testing.T) {
	var w identifyWaits
	web := WorkloadKey{Kind: "Deployment", Namespace: "ns", Name: "web"}
	api := WorkloadKey{Kind: "Deployment", Namespace: "ns", Name: "api"}
	t0 := time.Unix(1000, 0)

	steps := []struct {
		at    time.Duration
		after time.Duration
		wait  bool
	}{
		{0, identifyPollMin, true},
		{50 * time.Millisecond, identifyPollMin, true},                       // never sooner than the minimum
		{time.Second, time.Second, true},                                     // as long as it has waited
		{5 * time.Second, identifyPollMax, true},                             // at most the maximum
		{identifyGrace - 500*time.Millisecond, 500 * time.Millisecond, true}, // never past the grace
		{identifyGrace, 0, false},                                            // then a request is opened
	}
	for _, s := range steps {
		after, wait := w.wait(web, t0.Add(s.at))
		if wait != s.wait || after != s.after {
			t.Fatalf("at %v: wait %v after %v, want %v after %v", s.at, wait, after, s.wait, s.after)
		}
	}
	if n := w.waiting(); n != 0 {
		t.Fatalf("%d workloads still waited for after the grace ended web's wait", n)
	}
	// A workload whose wait ended starts a new one on its next unidentified
	// rollout; another workload's wait is its own.
	if after, wait := w.wait(web, t0.Add(time.Minute)); !wait || after != identifyPollMin {
		t.Fatalf("a new wait: %v %v", wait, after)
	}
	if after, wait := w.wait(api, t0.Add(time.Minute+time.Second)); !wait || after != identifyPollMin {
		t.Fatalf("another workload's wait: %v %v", wait, after)
	}
	w.done(web)
	w.done(api)
	if n := w.waiting(); n != 0 {
		t.Fatalf("%d workloads waited for after done", n)
	}
}

func TestRolloutUnidentified(t *testing.T) {
	created := time.Unix(2000, 0)
	cases := []struct {
		name string
		a    assess.Assessment
		want bool
	}{
		{"no ReplicaSet of the template yet", assess.Assessment{Verdict: assess.InProgress,
			Rollout: freshness.Rollout{Reason: freshness.NoMatchingReplicaSet}}, true},
		{"in progress, dated by its ReplicaSet", assess.Assessment{Verdict: assess.InProgress,
			Rollout: freshness.Rollout{Reason: freshness.RolloutInProgress, Start: created, Since: created}}, false},
		{"stale", assess.Assessment{Verdict: assess.Stale,
			Rollout: freshness.Rollout{Complete: true, Start: created, Since: created}}, false},
		{"cannot assess", assess.Assessment{Verdict: assess.CannotAssess}, false},
	}
	for _, c := range cases {
		if got := rolloutUnidentified(&c.a); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
