package request

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/router"
)

// stored is kr as the API server returns it: through JSON, so times are cut as stored.
func stored(t *testing.T, kr *kickv1alpha1.KickRequest) *kickv1alpha1.KickRequest {
	t.Helper()
	data, err := json.Marshal(kr)
	if err != nil {
		t.Fatal(err)
	}
	out := &kickv1alpha1.KickRequest{}
	if err := json.Unmarshal(data, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// announced returns what the reconciler publishes when orig becomes kr.
func announced(orig, kr *kickv1alpha1.KickRequest, now time.Time) []router.Event {
	pub := &publisher{}
	(&Reconciler{Router: pub}).announce(context.Background(), orig, kr, &step{now: now})
	return pub.events
}

// TestReplayRepeatsAnnouncedIDs: what a restarted manager replays from the stored request has
// the ids the previous manager announced: a finished or executing request's phase, a held-back
// request's gate decision; a waiting phase, whose time moves with the gate decision, is not
// replayed as a phase.
func TestReplayRepeatsAnnouncedIDs(t *testing.T) {
	now := time.Date(2026, 5, 1, 10, 0, 7, 123456789, time.UTC)
	base := &kickv1alpha1.KickRequest{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "deployment-web", UID: "u1"},
		Spec: kickv1alpha1.KickRequestSpec{TargetRef: kickv1alpha1.TargetRef{Kind: "Deployment", Name: "web"}}}
	with := func(st kickv1alpha1.KickRequestStatus) *kickv1alpha1.KickRequest {
		kr := base.DeepCopy()
		kr.Status = st
		return kr
	}
	done := metav1.NewTime(now)
	started := metav1.NewMicroTime(now)
	window := gateAt(kickv1alpha1.GateOutsideSchedule, "Schedule", now)
	executing := kickv1alpha1.KickRequestStatus{Phase: kickv1alpha1.PhaseExecuting,
		CurrentRollout: &kickv1alpha1.RolloutMarker{StartedAt: &started}}
	for _, tc := range []struct {
		name      string
		from, to  kickv1alpha1.KickRequestStatus
		wantPhase bool
		wantGate  bool
	}{
		{"succeeded", executing, kickv1alpha1.KickRequestStatus{Phase: kickv1alpha1.PhaseSucceeded, CompletionTime: &done}, true, false},
		{"executing", kickv1alpha1.KickRequestStatus{Phase: kickv1alpha1.PhasePending}, executing, true, false},
		{"waiting", kickv1alpha1.KickRequestStatus{Phase: kickv1alpha1.PhasePending},
			kickv1alpha1.KickRequestStatus{Phase: kickv1alpha1.PhaseWaitingForGate, Gate: window}, false, true},
	} {
		live := announced(with(tc.from), with(tc.to), now.Add(time.Second))
		ids := map[string]bool{}
		for _, ev := range live {
			ids[eventID(ev)] = true
		}
		replayed := replayEvents(stored(t, with(tc.to)), nil, now.Add(-time.Minute))
		var phase, gate int
		for _, ev := range replayed {
			if !ids[eventID(ev)] {
				t.Errorf("%s: replayed %T with id %s, which was never announced", tc.name, ev, eventID(ev))
			}
			switch ev.(type) {
			case router.PhaseChanged:
				phase++
			case router.GateChanged:
				gate++
			}
		}
		if (phase == 1) != tc.wantPhase || (gate == 1) != tc.wantGate || len(replayed) > 2 {
			t.Errorf("%s: replayed %d phase and %d gate events", tc.name, phase, gate)
		}
		if got := replayEvents(stored(t, with(tc.to)), nil, now.Add(time.Second)); len(got) != 0 {
			t.Errorf("%s: replayed %d events older than since", tc.name, len(got))
		}
	}
	// A request whose status keeps no time for its phase replays nothing.
	if got := replayEvents(with(kickv1alpha1.KickRequestStatus{Phase: kickv1alpha1.PhasePending}), nil, time.Time{}); len(got) != 0 {
		t.Errorf("a pending request replayed %v", got)
	}
}

func eventID(ev router.Event) string {
	switch e := ev.(type) {
	case router.PhaseChanged:
		return e.TransitionID()
	case router.GateChanged:
		return e.DecisionID()
	}
	return ""
}

// TestReplayerReadsTargetLabels: the replayer reads requests of one namespace and their target
// workloads' labels from the cache, for the policies' selectors.
func TestReplayerReadsTargetLabels(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := kickv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	done := metav1.NewTime(time.Now())
	kr := func(ns, name string) *kickv1alpha1.KickRequest {
		return &kickv1alpha1.KickRequest{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("u-" + ns)},
			Spec:   kickv1alpha1.KickRequestSpec{TargetRef: kickv1alpha1.TargetRef{Kind: "Deployment", Name: "web"}},
			Status: kickv1alpha1.KickRequestStatus{Phase: kickv1alpha1.PhaseSucceeded, CompletionTime: &done}}
	}
	web := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", Labels: map[string]string{"tier": "web"}}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(kr("shop", "deployment-web"), kr("other", "deployment-web"), web).Build()
	evs, err := (&Replayer{Client: c}).Events(context.Background(), "shop", time.Now().Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 {
		t.Fatalf("replayed %d events, want the one of namespace shop", len(evs))
	}
	if e := evs[0].(router.PhaseChanged); e.Request.Namespace != "shop" || e.TargetLabels["tier"] != "web" || e.To != "Succeeded" {
		t.Fatalf("replayed %+v", e)
	}
}
