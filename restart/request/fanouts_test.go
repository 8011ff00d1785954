package request

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/sinks/rollup"
)

// TestMembersJoinTheirFanOut: requests as the API server stores them (through JSON: the change
// in nanoseconds, the observed change in microseconds, completions in seconds) form one fan-out
// per change: the restarted ones by status.restartedFor, the held and waiting ones by the
// change they observed; each counted by where it stands.
func TestMembersJoinTheirFanOut(t *testing.T) {
	change := time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)
	src := &kickv1alpha1.SourceChange{Kind: "Secret", Name: "web-tls", ChangedAt: kickv1alpha1.NewNanoTime(change)}
	observed := metav1.NewMicroTime(change)
	done := metav1.NewTime(change.Add(time.Minute).Truncate(time.Second))
	req := func(name string, st kickv1alpha1.KickRequestStatus) *kickv1alpha1.KickRequest {
		st.LatestObservedDependencyChange = &observed
		return stored(t, &kickv1alpha1.KickRequest{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: name}, Status: st})
	}
	requests := []*kickv1alpha1.KickRequest{
		req("ok", kickv1alpha1.KickRequestStatus{Phase: kickv1alpha1.PhaseSucceeded, RestartedFor: src, CompletionTime: &done}),
		req("up-to-date", kickv1alpha1.KickRequestStatus{Phase: kickv1alpha1.PhaseNoLongerRequired, RestartedFor: src, CompletionTime: &done}),
		req("failed", kickv1alpha1.KickRequestStatus{Phase: kickv1alpha1.PhaseFailed, RestartedFor: src, CompletionTime: &done}),
		req("rolling", kickv1alpha1.KickRequestStatus{Phase: kickv1alpha1.PhaseExecuting, RestartedFor: src}),
		req("budget", kickv1alpha1.KickRequestStatus{Phase: kickv1alpha1.PhaseWaitingForGate, RestartedFor: src,
			Gate: &kickv1alpha1.GateStatus{Reason: kickv1alpha1.GateRestartBudget, Stage: "Budget"}}),
		req("held", kickv1alpha1.KickRequestStatus{Phase: kickv1alpha1.PhaseWaitingForGate,
			Gate: &kickv1alpha1.GateStatus{Reason: kickv1alpha1.GateRolloutHalted, Stage: "Halt"}}),
		req("window", kickv1alpha1.KickRequestStatus{Phase: kickv1alpha1.PhaseWaitingForGate,
			Gate: &kickv1alpha1.GateStatus{Reason: kickv1alpha1.GateOutsideSchedule, Stage: "Schedule"}}),
	}
	var members []rollup.Member
	for _, kr := range requests {
		members = append(members, memberOf(kr))
	}
	got := rollup.Build(members)
	want := rollup.Group{Key: rollup.Key{Namespace: "web", Source: rollup.Source{Kind: "Secret", Name: "web-tls"}, ChangedAt: change},
		Workloads: 7, Succeeded: 2, Failed: 1, Held: 1, Waiting: 2, InProgress: 1, LastCompletion: done.Time}
	if len(got) != 1 || !got[0].ChangedAt.Equal(want.ChangedAt) {
		t.Fatalf("groups %+v, want one at %v", got, change)
	}
	got[0].ChangedAt = want.ChangedAt
	if !got[0].LastCompletion.Equal(want.LastCompletion) {
		t.Fatalf("last completion %v, want %v", got[0].LastCompletion, want.LastCompletion)
	}
	got[0].LastCompletion = want.LastCompletion
	if got[0] != want {
		t.Fatalf("group:\n got %+v\nwant %+v", got[0], want)
	}
}

// TestWaveOf: a request's wave is its workload's wave under its KickPolicy, counted from 1, the
// workloads no wave selects in a last wave of their own; 0 without waves.
func TestWaveOf(t *testing.T) {
	p := &kickv1alpha1.KickPolicySpec{Restart: &kickv1alpha1.RestartSpec{Waves: []kickv1alpha1.RestartWave{
		{Name: "canary", Selector: metav1.LabelSelector{MatchLabels: map[string]string{"ring": "canary"}}},
		{Name: "eu", Selector: metav1.LabelSelector{MatchLabels: map[string]string{"region": "eu"}}},
	}}}
	cases := []struct {
		policy *kickv1alpha1.KickPolicySpec
		labels map[string]string
		want   int
	}{
		{p, map[string]string{"ring": "canary", "region": "eu"}, 1},
		{p, map[string]string{"region": "eu"}, 2},
		{p, map[string]string{"region": "us"}, 3},
		{&kickv1alpha1.KickPolicySpec{}, map[string]string{"ring": "canary"}, 0},
		{nil, nil, 0}, // the request names no policy the cache has
	}
	for _, tc := range cases {
		if got := waveOf(tc.policy, tc.labels); got != tc.want {
			t.Errorf("waveOf(%v) = %d, want %d", tc.labels, got, tc.want)
		}
	}
}
