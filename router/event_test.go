package router

import (
	"regexp"
	"testing"
	"time"
)

func TestTransitionID(t *testing.T) {
	at := time.Date(2026, 11, 29, 12, 0, 0, 123456789, time.UTC)
	id := TransitionID("uid-1", "Succeeded", at)
	if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(id) {
		t.Fatalf("id %q is not 32 hex characters", id)
	}
	if again := TransitionID("uid-1", "Succeeded", at); again != id {
		t.Fatalf("not deterministic: %q then %q", id, again)
	}
	berlin, _ := time.LoadLocation("Europe/Berlin")
	if berlin == nil {
		berlin = time.FixedZone("CET", 3600)
	}
	if other := TransitionID("uid-1", "Succeeded", at.In(berlin)); other != id {
		t.Errorf("same instant in another location gives %q, want %q", other, id)
	}
	now := time.Now() // carries a monotonic reading
	if TransitionID("u", "Pending", now) != TransitionID("u", "Pending", now.Round(0)) {
		t.Error("monotonic clock reading changes the id")
	}
	for name, other := range map[string]string{
		"other phase":      TransitionID("uid-1", "Failed", at),
		"1ns later":        TransitionID("uid-1", "Succeeded", at.Add(time.Nanosecond)),
		"1s later":         TransitionID("uid-1", "Succeeded", at.Add(time.Second)),
		"other request":    TransitionID("uid-2", "Succeeded", at),
		"ambiguous concat": TransitionID("uid-1S", "ucceeded", at),
		"empty phase/zero": TransitionID("uid-1", "", time.Time{}),
	} {
		if other == id {
			t.Errorf("%s: same id %q", name, id)
		}
	}
	ev := PhaseChanged{Request: RequestRef{Namespace: "ns", Name: "r", UID: "uid-1"}, From: "Executing", To: "Succeeded", Time: at}
	if ev.TransitionID() != id {
		t.Errorf("PhaseChanged.TransitionID() = %q, want %q", ev.TransitionID(), id)
	}
}

func TestEventKindsAndKeys(t *testing.T) {
	dep := ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web"}
	for _, tc := range []struct {
		ev   Event
		kind EventKind
		key  string
	}{
		{SourceChanged{Source: ObjectRef{APIVersion: "v1", Kind: "Secret", Namespace: "shop", Name: "db"}, Consumers: []ObjectRef{dep}}, KindSourceChanged, "Secret shop/db"},
		{PhaseChanged{Request: RequestRef{Namespace: "shop", Name: "web-x", UID: "u"}, Target: dep}, KindPhaseChanged, "shop/web-x"},
		{GateChanged{Request: RequestRef{Namespace: "shop", Name: "web-x", UID: "u"}, Target: dep, Provider: "argocd",
			Cause: ObjectRef{APIVersion: "argoproj.io/v1alpha1", Kind: "AppProject", Namespace: "argocd", Name: "default"}}, KindGateChanged, "shop/web-x"},
	} {
		if tc.ev.Kind() != tc.kind || tc.ev.Key() != tc.key {
			t.Errorf("%T: Kind, Key = %s, %q; want %s, %q", tc.ev, tc.ev.Kind(), tc.ev.Key(), tc.kind, tc.key)
		}
	}
	if got := dep.String(); got != "Deployment.apps shop/web" {
		t.Errorf("ObjectRef.String() = %q", got)
	}
}

func TestDecisionID(t *testing.T) {
	at := time.Date(2026, 11, 29, 1, 59, 0, 250, time.UTC)
	ev := GateChanged{
		Request: RequestRef{Namespace: "shop", Name: "web-x", UID: "uid-1"},
		Stage:   "Schedule", Reason: "OutsideSchedule", Message: "outside the window", Time: at,
		OpensAt: at.Add(time.Minute),
	}
	id := ev.DecisionID()
	if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(id) {
		t.Fatalf("id %q is not 32 hex characters", id)
	}
	// Recomputed from the persisted status (another location, no monotonic reading, other
	// free text): the same id.
	again := ev
	again.Time = time.Unix(0, at.UnixNano()).In(time.FixedZone("CET", 3600))
	again.Message, again.Owner, again.OpensAt = "reworded", "Application argocd/shop", time.Time{}
	if again.DecisionID() != id {
		t.Errorf("the same decision got %q, want %q", again.DecisionID(), id)
	}
	// Read back from status.gate.lastEvaluated, which keeps whole seconds:
	// the same id as the live announcement at full precision.
	again.Time = at.Truncate(time.Second)
	if again.DecisionID() != id {
		t.Errorf("the same decision got %q, want %q", again.DecisionID(), id)
	}
	for name, other := range map[string]GateChanged{
		"other reason":  {Request: ev.Request, Reason: "Allowed", Allowed: true, Time: at},
		"other time":    {Request: ev.Request, Reason: ev.Reason, Time: at.Add(time.Second)},
		"other request": {Request: RequestRef{Namespace: "shop", Name: "web-x", UID: "uid-2"}, Reason: ev.Reason, Time: at},
	} {
		if other.DecisionID() == id {
			t.Errorf("%s: same id %q", name, id)
		}
	}
	// A gate decision never shares an id with a phase transition of the same request.
	if id == TransitionID("uid-1", "OutsideSchedule", at) {
		t.Error("DecisionID collides with a phase transition named like the reason")
	}
	if !(ObjectRef{}).IsZero() || ev.Request.String() != ev.Key() || (ObjectRef{Kind: "Application"}).IsZero() {
		t.Error("IsZero or Key is wrong")
	}
}

func TestChangeTimeKeepsNanoseconds(t *testing.T) {
	r, _ := newRouter(t)
	s := subscribe(t, r, "s", Block, 1, nil)
	at := time.Date(2026, 1, 2, 3, 4, 5, 999999999, time.UTC)
	publish(t, r, SourceChanged{ChangeTime: at})
	if got := next(t, s).(SourceChanged).ChangeTime; !got.Equal(at) || got.Nanosecond() != 999999999 {
		t.Fatalf("ChangeTime = %v, want %v", got, at)
	}
}
