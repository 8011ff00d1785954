package format

import (
	"bytes"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/binding"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/router"
)

var gatePayloadKeys = []string{
	"allowed", "cause", "event", "gitOpsProvider", "kickPolicy", "message", "namespace", "occurredAt",
	"opensAt", "owner", "reason", "requestName", "stage", "targetKind", "targetName",
}

// gateChange is a request held back by an Argo CD sync window until 02:00 UTC; mods adjust it.
func gateChange(mods ...func(*router.GateChanged)) router.GateChanged {
	ev := router.GateChanged{
		Request:      router.RequestRef{Namespace: "shop", Name: "web-7d2c", UID: "9b1e-uid"},
		Target:       router.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web"},
		TargetLabels: map[string]string{"app": "web"},
		Policy:       "nightly",
		Provider:     "argocd",
		Owner:        "Application argocd/shop-api",
		Stage:        "GitOps",
		Reason:       string(kickv1alpha1.GateOutsideSchedule),
		Message:      "outside the sync windows of AppProject shop",
		Cause:        router.ObjectRef{APIVersion: "argoproj.io/v1alpha1", Kind: "AppProject", Namespace: "argocd", Name: "shop"},
		OpensAt:      time.Date(2026, 3, 2, 2, 0, 0, 0, time.UTC),
		Time:         at, // 2026-03-01 12:00:00.123456789 UTC
	}
	for _, m := range mods {
		m(&ev)
	}
	return ev
}

func allowed(e *router.GateChanged) {
	e.Allowed, e.Stage, e.Reason, e.Message, e.Cause, e.OpensAt = true, "", string(kickv1alpha1.GateAllowed), "", router.ObjectRef{}, time.Time{}
}

func TestGateJSON(t *testing.T) {
	f := mustNew(t, kickv1alpha1.WebhookSpec{}, "")
	m := mustFormat(t, f, gateChange())
	if ct := m.Header.Get("Content-Type"); ct != "application/json" || len(m.Header) != 1 {
		t.Errorf("headers = %v", m.Header)
	}
	got := decodeObject(t, m.Body)
	if !slices.Equal(sortedKeys(got), gatePayloadKeys) {
		t.Errorf("keys = %v, want %v", sortedKeys(got), gatePayloadKeys)
	}
	want := map[string]any{
		"event":          "GateChanged",
		"namespace":      "shop",
		"requestName":    "web-7d2c",
		"allowed":        false,
		"stage":          "GitOps",
		"reason":         "OutsideSchedule",
		"message":        "The restart of Deployment shop/web waits for the Argo CD sync window until 02:00 UTC: outside the sync windows of AppProject shop.",
		"targetKind":     "Deployment",
		"targetName":     "web",
		"kickPolicy":     "nightly",
		"gitOpsProvider": "argocd",
		"owner":          "Application argocd/shop-api",
		"cause":          map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "AppProject", "namespace": "argocd", "name": "shop"},
		"opensAt":        "2026-03-02T02:00:00Z",
		"occurredAt":     "2026-03-01T12:00:00Z",
	}
	for k, v := range want {
		if !reflect.DeepEqual(got[k], v) {
			t.Errorf("%s = %#v, want %#v", k, got[k], v)
		}
	}

	open := decodeObject(t, mustFormat(t, f, gateChange(allowed, func(e *router.GateChanged) { e.Stage = "GitOps" })).Body)
	for k, v := range map[string]any{
		"allowed": true, "reason": "Allowed", "stage": "", "cause": nil, "opensAt": nil,
		"message": "The restart of Deployment shop/web may run now.",
	} {
		if !reflect.DeepEqual(open[k], v) {
			t.Errorf("allowed: %s = %#v, want %#v", k, open[k], v)
		}
	}
	if !slices.Equal(sortedKeys(open), gatePayloadKeys) {
		t.Errorf("allowed: keys = %v", sortedKeys(open))
	}
	native := decodeObject(t, mustFormat(t, f, gateChange(func(e *router.GateChanged) { e.Provider, e.Owner = "", "" })).Body)
	if native["gitOpsProvider"] != "none" || native["owner"] != "" {
		t.Errorf("native gate: gitOpsProvider %v, owner %v", native["gitOpsProvider"], native["owner"])
	}
}

func TestGateDescriptions(t *testing.T) {
	reason := func(r kickv1alpha1.GateReason, stage string, mods ...func(*router.GateChanged)) router.GateChanged {
		return gateChange(append([]func(*router.GateChanged){func(e *router.GateChanged) {
			e.Reason, e.Stage, e.OpensAt, e.Message = string(r), stage, time.Time{}, ""
		}}, mods...)...)
	}
	cases := []struct {
		name, reason, text string
		ev                 router.GateChanged
	}{
		{"argo window", "OutsideSchedule", "The restart of Deployment shop/web waits for the Argo CD sync window until 02:00 UTC: outside the sync windows of AppProject shop.", gateChange()},
		{"native window a day later", "OutsideSchedule", "waits for the restart window of KickPolicy nightly until 2026-03-03 06:30 UTC.",
			reason(kickv1alpha1.GateOutsideSchedule, "Schedule", func(e *router.GateChanged) {
				e.Provider, e.OpensAt = "", time.Date(2026, 3, 3, 7, 30, 0, 0, time.FixedZone("CET", 3600))
			})},
		{"min interval", "MinIntervalNotElapsed", "waits for the minimum interval since its last restart until 12:05 UTC.",
			reason(kickv1alpha1.GateMinIntervalNotElapsed, "MinInterval", func(e *router.GateChanged) { e.OpensAt = at.Add(5 * time.Minute) })},
		{"suspended", "Suspended", "waits for KickPolicy nightly to be resumed.", reason(kickv1alpha1.GateSuspended, "Suspend")},
		{"out of sync", "OwnerOutOfSync", "waits for Application argocd/shop-api to be in sync.", reason(kickv1alpha1.GateOwnerOutOfSync, "GitOps")},
		{"reconciling, no owner", "OwnerReconciling", "waits for its GitOps owner to finish reconciling.",
			reason(kickv1alpha1.GateOwnerReconciling, "GitOps", func(e *router.GateChanged) { e.Owner = "" })},
		{"promotion", "PromotionRunning", "waits for the running Kargo promotion to finish.", reason(kickv1alpha1.GatePromotionRunning, "GitOps")},
		{"provider", "ProviderUnavailable", "waits for the Flux integration to be available.",
			reason(kickv1alpha1.GateProviderUnavailable, "GitOps", func(e *router.GateChanged) { e.Provider = "flux" })},
		{"settling", "Settling", "waits for its sources to settle (restart.settle of KickPolicy nightly).", reason(kickv1alpha1.GateSettling, "Settle")},
		{"held", "Held", "waits for KickHold shop/freeze to be released.",
			reason(kickv1alpha1.GateHeld, "Hold", func(e *router.GateChanged) { e.Cause = holdCause })},
		{"halted", "RolloutHalted", "waits for the halt after Deployment shop/api failed its rollout to end.",
			reason(kickv1alpha1.GateRolloutHalted, "Halt", func(e *router.GateChanged) { e.Cause = failedCause })},
		{"earlier wave", "EarlierWave", "waits for an earlier wave of KickPolicy nightly to roll out.", reason(kickv1alpha1.GateEarlierWave, "Wave")},
		{"budget", "RestartBudget", "waits for a free slot of the restart budget.", reason(kickv1alpha1.GateRestartBudget, "Budget")},
		{"not selected", "NotSelected", "waits for a KickPolicy that selects it.", reason(kickv1alpha1.GateNotSelected, "")},
		{"unknown reason", "Waiting", "waits for its gates to allow it.", reason("SomethingNew", "GitOps")},
		{"allowed", "Allowed", "The restart of Deployment shop/web may run now.", gateChange(allowed)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := describeGate(tc.ev)
			if d.Reason != tc.reason || !slices.Contains(Reasons(), d.Reason) {
				t.Errorf("reason = %s, want %s (one of Reasons())", d.Reason, tc.reason)
			}
			if !strings.HasSuffix(d.Text(), tc.text) {
				t.Errorf("text = %q, want it to end with %q", d.Text(), tc.text)
			}
		})
	}
}

func TestGateCloudEvents(t *testing.T) {
	jsonF := mustNew(t, kickv1alpha1.WebhookSpec{}, "")
	ev := gateChange()
	for mode, enc := range map[kickv1alpha1.CloudEventsMode]binding.Encoding{
		kickv1alpha1.CloudEventsStructured: binding.EncodingStructured,
		kickv1alpha1.CloudEventsBinary:     binding.EncodingBinary,
	} {
		t.Run(string(mode), func(t *testing.T) {
			m := mustFormat(t, mustNew(t, ceSpec(mode), ""), ev)
			e, gotEnc := parseCloudEvent(t, m)
			if gotEnc != enc {
				t.Errorf("encoding = %v, want %v", gotEnc, enc)
			}
			for _, c := range []struct{ attr, got, want string }{
				{"id", e.ID(), ev.DecisionID()},
				{"type", e.Type(), "io.corewire.kick.gate.changed.v1"},
				{"source", e.Source(), "/apis/kick.corewire.io/v1alpha1/namespaces/shop/kickrequests/web-7d2c"},
				{"subject", e.Subject(), "Deployment/web"},
				{"datacontenttype", e.DataContentType(), "application/json"},
			} {
				if c.got != c.want {
					t.Errorf("%s = %q, want %q", c.attr, c.got, c.want)
				}
			}
			if !e.Time().Equal(ev.Time) {
				t.Errorf("time = %v, want %v", e.Time(), ev.Time)
			}
			want := mustFormat(t, jsonF, ev).Body
			if !reflect.DeepEqual(decodeObject(t, e.Data()), decodeObject(t, want)) {
				t.Errorf("data = %s\nwant %s", e.Data(), want)
			}
			if mode == kickv1alpha1.CloudEventsBinary && !bytes.Equal(m.Body, want) {
				t.Errorf("binary body = %s, want the gate document", m.Body)
			}
		})
	}
}

func TestGateSlack(t *testing.T) {
	f := mustNew(t, kickv1alpha1.WebhookSpec{Format: kickv1alpha1.FormatSlack}, "")
	waiting := decodeSlack(t, mustFormat(t, f, gateChange(func(e *router.GateChanged) {
		e.Message = "window <deny> & more"
	})))
	if got, want := waiting.Text, "The restart of Deployment shop/web waits for the Argo CD sync window until 02:00 UTC: window &lt;deny&gt; &amp; more."; got != want {
		t.Errorf("text = %q, want %q", got, want)
	}
	if len(waiting.Blocks) != 3 {
		t.Fatalf("blocks = %+v", waiting.Blocks)
	}
	if h := waiting.Blocks[0].Text.Text; h != "Waiting: Deployment shop/web" {
		t.Errorf("header = %q", h)
	}
	var fields []string
	for _, fl := range waiting.Blocks[1].Fields {
		fields = append(fields, fl.Text)
	}
	wantFields := []string{
		"*Gate*\nGitOps", "*Workload*\nDeployment/web", "*Namespace*\nshop", "*Reason*\nOutsideSchedule",
		"*Owner*\nApplication argocd/shop-api", "*Caused by*\nAppProject.argoproj.io argocd/shop", "*May open at*\n2026-03-02 02:00:00 UTC",
	}
	if !slices.Equal(fields, wantFields) {
		t.Errorf("fields = %q\nwant %q", fields, wantFields)
	}
	if got := waiting.Blocks[2].Text.Text; got != "*Details*\nwindow &lt;deny&gt; &amp; more" {
		t.Errorf("details = %q", got)
	}

	open := decodeSlack(t, mustFormat(t, f, gateChange(allowed)))
	if open.Text != "The restart of Deployment shop/web may run now." || len(open.Blocks) != 2 {
		t.Errorf("allowed: text %q, %d blocks", open.Text, len(open.Blocks))
	}
	if h := open.Blocks[0].Text.Text; h != "May run now: Deployment shop/web" {
		t.Errorf("allowed: header = %q", h)
	}
	if g := open.Blocks[1].Fields[0].Text; g != "*Gate*\nnone" {
		t.Errorf("allowed: gate field = %q", g)
	}
}

func TestGatePagerDutySkips(t *testing.T) {
	f := mustNew(t, pdSpec(&kickv1alpha1.PagerDutySpec{}), "rk")
	for _, ev := range []router.GateChanged{gateChange(), gateChange(allowed)} {
		if m, err := f.Format(ev); !errors.Is(err, ErrSkip) {
			t.Errorf("Format(gate change, allowed=%v) = %s, %v; want ErrSkip", ev.Allowed, m.Body, err)
		}
	}
}

// A gate change has its own deterministic id; no format renders other event kinds.
func TestGateIDAndUnsupportedKinds(t *testing.T) {
	ev := gateChange()
	if EventID(ev) != ev.DecisionID() || EventID(ev) == EventID(phaseChange(kickv1alpha1.PhaseWaitingForGate)) {
		t.Errorf("EventID(gate) = %q, DecisionID %q", EventID(ev), ev.DecisionID())
	}
	again := gateChange(func(e *router.GateChanged) { e.Message, e.Time = "reworded", e.Time.UTC() })
	if EventID(again) != EventID(ev) {
		t.Error("the same decision got another id")
	}
	src := router.SourceChanged{Source: router.ObjectRef{Kind: "Secret", Namespace: "shop", Name: "db"}}
	if EventID(src) != "" {
		t.Errorf("EventID(SourceChanged) = %q", EventID(src))
	}
	for _, spec := range []kickv1alpha1.WebhookSpec{{}, ceSpec(kickv1alpha1.CloudEventsBinary), {Format: kickv1alpha1.FormatSlack}, pdSpec(nil)} {
		if _, err := mustNew(t, spec, "rk").Format(src); err == nil || errors.Is(err, ErrSkip) {
			t.Errorf("%s rendered a SourceChanged: %v", spec.Format, err)
		}
	}
}

var (
	holdCause   = router.ObjectRef{APIVersion: "kick.corewire.io/v1alpha1", Kind: "KickHold", Namespace: "shop", Name: "freeze"}
	failedCause = router.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "api"}
)

// TestGateHoldAndHaltCause: a gate change held by a KickHold, or by a halt,
// names the KickHold or the failed workload as its cause in the JSON
// document (which CloudEvents carries as its data) and in Slack's "Caused
// by" field, and says what it waits for in words.
func TestGateHoldAndHaltCause(t *testing.T) {
	jsonF := mustNew(t, kickv1alpha1.WebhookSpec{}, "")
	ceF := mustNew(t, ceSpec(kickv1alpha1.CloudEventsStructured), "")
	slackF := mustNew(t, kickv1alpha1.WebhookSpec{Format: kickv1alpha1.FormatSlack}, "")
	for _, c := range []struct {
		stage, reason string
		cause         router.ObjectRef
		slack, words  string
	}{
		{"Hold", "Held", holdCause, "*Caused by*\\nKickHold.kick.corewire.io shop/freeze", "waits for KickHold shop/freeze to be released"},
		{"Halt", "RolloutHalted", failedCause, "*Caused by*\\nDeployment.apps shop/api", "waits for the halt after Deployment shop/api failed its rollout to end"},
	} {
		ev := gateChange(func(e *router.GateChanged) {
			e.Stage, e.Reason, e.Cause, e.Provider, e.Owner, e.OpensAt = c.stage, c.reason, c.cause, "", "", time.Time{}
		})
		want := map[string]any{"apiVersion": c.cause.APIVersion, "kind": c.cause.Kind, "namespace": c.cause.Namespace, "name": c.cause.Name}
		doc := decodeObject(t, mustFormat(t, jsonF, ev).Body)
		if !reflect.DeepEqual(doc["cause"], want) || doc["reason"] != c.reason || !strings.Contains(doc["message"].(string), c.words) {
			t.Errorf("%s: JSON cause %v reason %v message %q; want %v, %s, %q", c.stage, doc["cause"], doc["reason"], doc["message"], want, c.reason, c.words)
		}
		e, _ := parseCloudEvent(t, mustFormat(t, ceF, ev))
		if data := decodeObject(t, e.Data()); !reflect.DeepEqual(data["cause"], want) {
			t.Errorf("%s: CloudEvents data cause %v, want %v", c.stage, data["cause"], want)
		}
		slack := string(mustFormat(t, slackF, ev).Body)
		if !strings.Contains(slack, c.slack) || !strings.Contains(slack, c.words) {
			t.Errorf("%s: Slack message lacks %q or %q:\n%s", c.stage, c.slack, c.words, slack)
		}
	}
}
