package format

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/router"
)

var payloadKeys = []string{
	"gitOpsProvider", "message", "namespace", "occurredAt", "phase", "reason", "requestName", "targetKind", "targetName",
}

func decodeObject(t *testing.T, body []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("body is not a JSON object: %v\n%s", err, body)
	}
	return m
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func TestJSONReferencePayload(t *testing.T) {
	f := mustNew(t, kickv1alpha1.WebhookSpec{}, "")
	m := mustFormat(t, f, phaseChange(kickv1alpha1.PhaseSucceeded))
	if ct := m.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q", ct)
	}
	if len(m.Header) != 1 {
		t.Errorf("headers = %v, want only Content-Type", m.Header)
	}
	got := decodeObject(t, m.Body)
	want := map[string]any{
		"namespace":      "team-a",
		"requestName":    "api-0f3c",
		"phase":          "Succeeded",
		"reason":         "RestartCompleted",
		"message":        "Deployment team-a/api was restarted and its rollout completed.",
		"targetKind":     "Deployment",
		"targetName":     "api",
		"gitOpsProvider": "argocd",
		"occurredAt":     "2026-03-01T12:00:00Z",
	}
	if !slices.Equal(sortedKeys(got), payloadKeys) {
		t.Errorf("keys = %v, want %v", sortedKeys(got), payloadKeys)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %#v, want %#v", k, got[k], v)
		}
	}
}

func TestJSONEveryPhase(t *testing.T) {
	waitingGate := func(reason kickv1alpha1.GateReason, msg string) func(*router.PhaseChanged) {
		return func(e *router.PhaseChanged) { e.GateReason, e.GateMessage = string(reason), msg }
	}
	cases := []struct {
		name         string
		ev           router.PhaseChanged
		reason       string
		message      string // substring
		notInMessage string
	}{
		{"pending", phaseChange(kickv1alpha1.PhasePending, func(e *router.PhaseChanged) { e.From = "" }),
			ReasonRequested, "A restart of Deployment team-a/api was requested.", ""},
		{"executing", phaseChange(kickv1alpha1.PhaseExecuting), ReasonRestartStarted, "is being restarted", ""},
		{"waiting for rollout", phaseChange(kickv1alpha1.PhaseWaitingForRollout), ReasonRolloutInProgress, "still rolling out", ""},
		{"outside schedule", phaseChange(kickv1alpha1.PhaseWaitingForGate,
			waitingGate(kickv1alpha1.GateOutsideSchedule, "outside window 02:00-04:00 Europe/Berlin; next opens 2026-03-02T01:00:00Z")),
			"OutsideSchedule", "The restart of Deployment team-a/api is waiting: outside window 02:00-04:00 Europe/Berlin; next opens 2026-03-02T01:00:00Z.", ""},
		{"min interval", phaseChange(kickv1alpha1.PhaseWaitingForGate, waitingGate(kickv1alpha1.GateMinIntervalNotElapsed, "next restart at 12:05.")),
			"MinIntervalNotElapsed", "is waiting: next restart at 12:05.", ""},
		{"suspended", phaseChange(kickv1alpha1.PhaseWaitingForGate, waitingGate(kickv1alpha1.GateSuspended, "KickPolicy default is suspended")),
			"Suspended", "KickPolicy default is suspended", ""},
		{"owner unknown", phaseChange(kickv1alpha1.PhaseWaitingForOwner, waitingGate(kickv1alpha1.GateOwnerUnknown, "")),
			"OwnerUnknown", "The restart of Deployment team-a/api is waiting.", ""},
		{"out of sync", phaseChange(kickv1alpha1.PhaseWaitingForApplicationSync, waitingGate(kickv1alpha1.GateOwnerOutOfSync, "Application api is OutOfSync")),
			"OwnerOutOfSync", "Application api is OutOfSync", ""},
		{"waiting without a known gate reason", phaseChange(kickv1alpha1.PhaseWaitingForGate, waitingGate("SomethingNew", "")),
			ReasonWaiting, "is waiting", ""},
		{"waiting with Allowed", phaseChange(kickv1alpha1.PhaseWaitingForGate), ReasonWaiting, "is waiting", ""},
		{"succeeded", phaseChange(kickv1alpha1.PhaseSucceeded), ReasonRestartCompleted, "rollout completed", ""},
		{"no longer required", phaseChange(kickv1alpha1.PhaseNoLongerRequired), ReasonUpToDate, "no restart was needed", ""},
		{"dry run", phaseChange(kickv1alpha1.PhaseDryRun), ReasonDryRun, "Dry run: KICK would have restarted Deployment team-a/api.", ""},
		// The event does not carry the failure cause yet; a stale gate reason must not be
		// taken for it.
		{"failed", phaseChange(kickv1alpha1.PhaseFailed, waitingGate(kickv1alpha1.GateOutsideSchedule, "old gate message")),
			ReasonRestartFailed, "The restart of Deployment team-a/api failed.", "old gate message"},
		{"requested reason", phaseChange(kickv1alpha1.PhaseSucceeded, func(e *router.PhaseChanged) { e.Reason = "rotate <db> & cache" }),
			ReasonRestartCompleted, "completed. Requested because: rotate <db> & cache", ""},
		{"unknown phase", phaseChange("Exploded"), ReasonUnknown, "entered phase Exploded", ""},
	}
	f := mustNew(t, kickv1alpha1.WebhookSpec{}, "")
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := decodeObject(t, mustFormat(t, f, tc.ev).Body)
			if !slices.Equal(sortedKeys(got), payloadKeys) {
				t.Errorf("keys = %v, want %v", sortedKeys(got), payloadKeys)
			}
			if got["phase"] != tc.ev.To {
				t.Errorf("phase = %v, want %s", got["phase"], tc.ev.To)
			}
			if got["reason"] != tc.reason {
				t.Errorf("reason = %v, want %s", got["reason"], tc.reason)
			}
			if !slices.Contains(Reasons(), tc.reason) {
				t.Errorf("reason %s is not in Reasons()", tc.reason)
			}
			msg, _ := got["message"].(string)
			if !strings.Contains(msg, tc.message) {
				t.Errorf("message = %q, want it to contain %q", msg, tc.message)
			}
			if tc.notInMessage != "" && strings.Contains(msg, tc.notInMessage) {
				t.Errorf("message = %q, must not contain %q", msg, tc.notInMessage)
			}
		})
	}
}

// describe already handles the terminal outcome, for when router.PhaseChanged carries it.
func TestDescribeOutcome(t *testing.T) {
	cases := []struct {
		phase          kickv1alpha1.KickRequestPhase
		outcome, text  string
		reason, prefix string
	}{
		{kickv1alpha1.PhaseFailed, "RolloutTimeout", "the rollout did not complete within 10m0s: ProgressDeadlineExceeded",
			ReasonRolloutTimeout, "The rollout of Deployment team-a/api did not complete in time: the rollout did not complete within 10m0s: ProgressDeadlineExceeded."},
		{kickv1alpha1.PhaseFailed, "TargetNotFound", "Deployment team-a/api does not exist; create it, or delete this KickRequest",
			ReasonTargetNotFound, "Deployment team-a/api was not found: "},
		{kickv1alpha1.PhaseFailed, "UnsupportedTarget", "unsupported kind", ReasonUnsupportedTarget, "Deployment team-a/api is not a kind KICK can restart: unsupported kind."},
		{kickv1alpha1.PhaseFailed, "NotSelected", "no KickPolicy in team-a selects it", ReasonNotSelected, "No KickPolicy selects Deployment team-a/api, so it was not restarted: "},
		{kickv1alpha1.PhaseFailed, "SomethingElse", "boom", ReasonRestartFailed, "The restart of Deployment team-a/api failed: boom."},
		{kickv1alpha1.PhaseNoLongerRequired, "Coalesced", "KickRequest api-1 already handles it", ReasonCoalesced, "Another open KickRequest already handles Deployment team-a/api, so this one was closed."},
		{kickv1alpha1.PhaseNoLongerRequired, "UpToDate", "dependency changed at ..., not after the rollout", ReasonUpToDate, "Deployment team-a/api already runs with every change; no restart was needed."},
	}
	for _, tc := range cases {
		t.Run(tc.outcome, func(t *testing.T) {
			d := describe(phaseChange(tc.phase), tc.outcome, tc.text)
			if d.Reason != tc.reason {
				t.Errorf("reason = %s, want %s", d.Reason, tc.reason)
			}
			if !strings.HasPrefix(d.Text(), tc.prefix) {
				t.Errorf("text = %q, want prefix %q", d.Text(), tc.prefix)
			}
		})
	}
}

func TestJSONProviderAndTime(t *testing.T) {
	cases := map[string]string{"": "none", "None": "none", "ArgoCD": "argocd", "Flux": "flux", "Kargo": "kargo"}
	f := mustNew(t, kickv1alpha1.WebhookSpec{}, "")
	for provider, want := range cases {
		got := decodeObject(t, mustFormat(t, f, phaseChange(kickv1alpha1.PhaseSucceeded, func(e *router.PhaseChanged) { e.Provider = provider })).Body)
		if got["gitOpsProvider"] != want {
			t.Errorf("provider %q: gitOpsProvider = %v, want %s", provider, got["gitOpsProvider"], want)
		}
		if got["occurredAt"] != "2026-03-01T12:00:00Z" {
			t.Errorf("occurredAt = %v", got["occurredAt"])
		}
	}
}

func TestJSONKeepsMarkupReadable(t *testing.T) {
	f := mustNew(t, kickv1alpha1.WebhookSpec{}, "")
	m := mustFormat(t, f, phaseChange(kickv1alpha1.PhaseSucceeded, func(e *router.PhaseChanged) { e.Reason = "a<b>&c" }))
	if !strings.Contains(string(m.Body), "a<b>&c") || strings.HasSuffix(string(m.Body), "\n") {
		t.Errorf("body = %s", m.Body)
	}
}

func TestReasonsDocumented(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range Reasons() {
		if seen[r] {
			t.Errorf("duplicate reason %s", r)
		}
		seen[r] = true
	}
	for r := range gateReasons {
		if !seen[r] {
			t.Errorf("gate reason %s missing from Reasons()", r)
		}
	}
	// Every blocking gate reason of the API is passed through in waiting phases, except
	// NotSelected, which fails the request instead.
	for _, g := range []kickv1alpha1.GateReason{kickv1alpha1.GateNotSelected, kickv1alpha1.GateAllowed} {
		if gateReasons[string(g)] {
			t.Errorf("%s must not be a waiting reason", g)
		}
	}
}

// TestJSONReasonComesFromTheEventOutcome: the reason of a finished request
// is the outcome the reconciler recorded, carried on the event.
func TestJSONReasonComesFromTheEventOutcome(t *testing.T) {
	f := mustNew(t, kickv1alpha1.WebhookSpec{}, "")
	ev := phaseChange(kickv1alpha1.PhaseFailed, func(e *router.PhaseChanged) {
		e.Outcome, e.OutcomeMessage = "RolloutTimeout", "the rollout did not complete within 15m0s"
	})
	got := decodeObject(t, mustFormat(t, f, ev).Body)
	if got["reason"] != ReasonRolloutTimeout {
		t.Fatalf("reason = %v, want %s", got["reason"], ReasonRolloutTimeout)
	}
	ev = phaseChange(kickv1alpha1.PhaseNoLongerRequired, func(e *router.PhaseChanged) { e.Outcome = "Coalesced" })
	if got := decodeObject(t, mustFormat(t, f, ev).Body); got["reason"] != "Coalesced" {
		t.Fatalf("reason = %v, want Coalesced", got["reason"])
	}
}
