package format

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/router"
)

func pdSpec(pd *kickv1alpha1.PagerDutySpec) kickv1alpha1.WebhookSpec {
	return kickv1alpha1.WebhookSpec{Format: kickv1alpha1.FormatPagerDuty, PagerDuty: pd}
}

func TestPagerDutyTrigger(t *testing.T) {
	cases := []struct {
		name     string
		spec     *kickv1alpha1.PagerDutySpec
		severity string
		source   string
	}{
		{"defaults", &kickv1alpha1.PagerDutySpec{}, "error", "team-a/Deployment/api"},
		{"severity and source", &kickv1alpha1.PagerDutySpec{Severity: kickv1alpha1.SeverityCritical, Source: "prod-eu-1"}, "critical", "prod-eu-1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := mustNew(t, pdSpec(tc.spec), "R0UT1NGKEY")
			ev := phaseChange(kickv1alpha1.PhaseFailed, func(e *router.PhaseChanged) { e.Reason = "CI run 42" })
			m := mustFormat(t, f, ev)
			if ct := m.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q", ct)
			}
			top := decodeObject(t, m.Body)
			if keys := sortedKeys(top); !slices.Equal(keys, []string{"client", "dedup_key", "event_action", "payload", "routing_key"}) {
				t.Errorf("keys = %v", keys)
			}
			want := map[string]any{"routing_key": "R0UT1NGKEY", "event_action": "trigger", "dedup_key": "kick:team-a/Deployment/api", "client": "KICK"}
			for k, v := range want {
				if top[k] != v {
					t.Errorf("%s = %v, want %v", k, top[k], v)
				}
			}
			p, _ := top["payload"].(map[string]any)
			wantPayload := map[string]any{
				"summary":   "The restart of Deployment team-a/api failed.",
				"source":    tc.source,
				"severity":  tc.severity,
				"timestamp": "2026-03-01T12:00:00.123456789Z",
				"component": "Deployment/api",
				"group":     "team-a",
				"class":     "Failed",
			}
			for k, v := range wantPayload {
				if p[k] != v {
					t.Errorf("payload.%s = %v, want %v", k, p[k], v)
				}
			}
			details, _ := p["custom_details"].(map[string]any)
			if !slices.Equal(sortedKeys(details), payloadKeys) {
				t.Errorf("custom_details keys = %v, want %v", sortedKeys(details), payloadKeys)
			}
			var doc map[string]any
			_ = json.Unmarshal(mustFormat(t, mustNew(t, kickv1alpha1.WebhookSpec{}, ""), ev).Body, &doc)
			for k, v := range doc {
				if details[k] != v {
					t.Errorf("custom_details.%s = %v, want %v", k, details[k], v)
				}
			}
		})
	}
}

func TestPagerDutyResolveAndSkip(t *testing.T) {
	f := mustNew(t, pdSpec(&kickv1alpha1.PagerDutySpec{}), "rk")
	failed := phaseChange(kickv1alpha1.PhaseFailed)
	trigger := decodeObject(t, mustFormat(t, f, failed).Body)

	for _, phase := range []kickv1alpha1.KickRequestPhase{kickv1alpha1.PhaseSucceeded, kickv1alpha1.PhaseNoLongerRequired} {
		// The resolution may come from another KickRequest for the same workload.
		later := phaseChange(phase, func(e *router.PhaseChanged) {
			e.Request.Name, e.Request.UID = "api-77aa", "another-uid"
			e.Time = e.Time.Add(time.Hour)
		})
		got := decodeObject(t, mustFormat(t, f, later).Body)
		want := map[string]any{"routing_key": "rk", "event_action": "resolve", "dedup_key": trigger["dedup_key"]}
		if !slices.Equal(sortedKeys(got), sortedKeys(want)) {
			t.Errorf("%s: keys = %v, want %v", phase, sortedKeys(got), sortedKeys(want))
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: %s = %v, want %v", phase, k, got[k], v)
			}
		}
	}

	for _, phase := range []kickv1alpha1.KickRequestPhase{
		kickv1alpha1.PhasePending, kickv1alpha1.PhaseWaitingForGate, kickv1alpha1.PhaseWaitingForOwner,
		kickv1alpha1.PhaseWaitingForApplicationSync, kickv1alpha1.PhaseWaitingForRollout,
		kickv1alpha1.PhaseExecuting, kickv1alpha1.PhaseDryRun,
	} {
		m, err := f.Format(phaseChange(phase))
		if !errors.Is(err, ErrSkip) || m.Body != nil {
			t.Errorf("%s: Format = %q, %v; want ErrSkip", phase, m.Body, err)
		}
	}
}

func TestPagerDutyDedupKey(t *testing.T) {
	base := phaseChange(kickv1alpha1.PhaseFailed)
	key := DedupKey(base)
	if key != "kick:team-a/Deployment/api" {
		t.Errorf("DedupKey = %q", key)
	}
	same := []func(*router.PhaseChanged){
		func(e *router.PhaseChanged) { e.Request.Name, e.Request.UID = "other", "other-uid" },
		func(e *router.PhaseChanged) { e.To = string(kickv1alpha1.PhaseSucceeded) },
		func(e *router.PhaseChanged) { e.Time = e.Time.Add(time.Hour) },
		func(e *router.PhaseChanged) { e.Provider, e.Policy, e.Reason = "Flux", "other", "x" },
	}
	for i, mod := range same {
		if got := DedupKey(phaseChange(kickv1alpha1.PhaseFailed, mod)); got != key {
			t.Errorf("variant %d: DedupKey = %q, want %q", i, got, key)
		}
	}
	different := []func(*router.PhaseChanged){
		func(e *router.PhaseChanged) { e.Request.Namespace = "team-b" },
		func(e *router.PhaseChanged) { e.Target.Kind = "StatefulSet" },
		func(e *router.PhaseChanged) { e.Target.Name = "api2" },
	}
	for i, mod := range different {
		if got := DedupKey(phaseChange(kickv1alpha1.PhaseFailed, mod)); got == key {
			t.Errorf("variant %d: DedupKey equal for another workload", i)
		}
	}

	long := func(name string) func(*router.PhaseChanged) {
		return func(e *router.PhaseChanged) { e.Target.Name = name }
	}
	a := DedupKey(phaseChange(kickv1alpha1.PhaseFailed, long(strings.Repeat("a", 253))))
	b := DedupKey(phaseChange(kickv1alpha1.PhaseFailed, long(strings.Repeat("a", 252)+"b")))
	if len(a) > 255 || !strings.HasPrefix(a, "kick:sha256:") || a == b {
		t.Errorf("long keys: %q, %q", a, b)
	}
	if a != DedupKey(phaseChange(kickv1alpha1.PhaseSucceeded, long(strings.Repeat("a", 253)))) {
		t.Errorf("long key not stable")
	}
}

func TestPagerDutySummaryLimit(t *testing.T) {
	// A long target name and namespace cannot make the summary exceed the API limit.
	f := mustNew(t, pdSpec(nil), "rk")
	ev := phaseChange(kickv1alpha1.PhaseFailed, func(e *router.PhaseChanged) { e.Target.Name = strings.Repeat("ü", 1500) })
	var out pagerDutyEvent
	if err := json.Unmarshal(mustFormat(t, f, ev).Body, &out); err != nil {
		t.Fatal(err)
	}
	if n := utf8.RuneCountInString(out.Payload.Summary); n != pagerDutySummaryMax || !strings.HasSuffix(out.Payload.Summary, "…") {
		t.Errorf("summary has %d characters: …%s", n, out.Payload.Summary[len(out.Payload.Summary)-10:])
	}
	if got := truncate("short", 10); got != "short" {
		t.Errorf("truncate = %q", got)
	}
	if got := truncate("exactly10!", 10); got != "exactly10!" {
		t.Errorf("truncate = %q", got)
	}
	if got := truncate("elevenchars", 10); got != "elevencha…" {
		t.Errorf("truncate = %q", got)
	}
}
