package format

import (
	"testing"
	"time"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/router"
)

// at is a transition time in a non-UTC zone with sub-second precision, to check conversions.
var at = time.Date(2026, 3, 1, 13, 0, 0, 123456789, time.FixedZone("CET", 3600))

// phaseChange is a typical event; mods adjust it.
func phaseChange(to kickv1alpha1.KickRequestPhase, mods ...func(*router.PhaseChanged)) router.PhaseChanged {
	ev := router.PhaseChanged{
		Request:      router.RequestRef{Namespace: "team-a", Name: "api-0f3c", UID: "6c1f0a8e-uid"},
		From:         string(kickv1alpha1.PhaseExecuting),
		To:           string(to),
		GateReason:   string(kickv1alpha1.GateAllowed),
		Provider:     string(kickv1alpha1.ProviderArgoCD),
		Owner:        "Application argocd/api",
		Target:       router.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "team-a", Name: "api"},
		TargetLabels: map[string]string{"app": "api"},
		Policy:       "default",
		Time:         at,
	}
	for _, m := range mods {
		m(&ev)
	}
	return ev
}

func mustNew(t *testing.T, spec kickv1alpha1.WebhookSpec, routingKey string) Formatter {
	t.Helper()
	f, err := New(spec, routingKey)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return f
}

func mustFormat(t *testing.T, f Formatter, ev router.Event) Message {
	t.Helper()
	m, err := f.Format(ev)
	if err != nil {
		t.Fatalf("Format(%T %s): %v", ev, ev.Key(), err)
	}
	return m
}
