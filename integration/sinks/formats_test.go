package sinks

import (
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
)

// TestPagerDutyTriggerThenResolve: a PagerDuty Events API v2 receiver gets
// a trigger for Failed and a resolve with the same dedup_key when the same
// workload later succeeds; phases PagerDuty does not care about send
// nothing.
func TestPagerDutyTriggerThenResolve(t *testing.T) {
	h := start(t, nil)
	rc := newReceiver(t, nil)
	h.secret("pd", corev1.SecretTypeOpaque, map[string]string{"routing-key": "R0UT1NGKEY0000000000000000000000"})
	spec := webhook(rc.URL + "/v2/enqueue")
	spec.Phases = []kickv1alpha1.KickRequestPhase{kickv1alpha1.PhaseFailed, kickv1alpha1.PhaseSucceeded, kickv1alpha1.PhaseDryRun}
	spec.Webhook.Format = kickv1alpha1.FormatPagerDuty
	spec.Webhook.PagerDuty = &kickv1alpha1.PagerDutySpec{RoutingKey: *ref("pd", "routing-key")}
	h.policy("pd", spec)
	h.ready("pd", metav1.ConditionTrue, kickv1alpha1.ReasonValid)

	failed := h.event(kickv1alpha1.PhaseFailed, map[string]string{"app": "web"})
	failed.Outcome, failed.OutcomeMessage = "RolloutTimeout", "the rollout did not complete within 15m0s"
	h.publish(failed, h.event(kickv1alpha1.PhaseDryRun, map[string]string{"app": "web"}), h.event(kickv1alpha1.PhaseSucceeded, map[string]string{"app": "web"}))
	hits := rc.waitFor(t, "/v2/enqueue", 2)

	var trigger, resolve map[string]any
	for i, doc := range []*map[string]any{&trigger, &resolve} {
		if err := json.Unmarshal(hits[i].body, doc); err != nil {
			t.Fatalf("body %s: %v", hits[i].body, err)
		}
	}
	if trigger["event_action"] != "trigger" || resolve["event_action"] != "resolve" {
		t.Fatalf("actions %v then %v, want trigger then resolve", trigger["event_action"], resolve["event_action"])
	}
	if trigger["dedup_key"] == "" || trigger["dedup_key"] != resolve["dedup_key"] {
		t.Fatalf("dedup_key %v then %v, want one stable key", trigger["dedup_key"], resolve["dedup_key"])
	}
	if trigger["routing_key"] != "R0UT1NGKEY0000000000000000000000" {
		t.Fatalf("routing_key %v", trigger["routing_key"])
	}
	payload, _ := trigger["payload"].(map[string]any)
	if payload["severity"] != "error" || !strings.Contains(payload["summary"].(string), "web") {
		t.Fatalf("trigger payload %v", payload)
	}
	if n := len(rc.seen()); n != 2 {
		t.Fatalf("%d requests, want 2 (DryRun sends nothing to PagerDuty)", n)
	}
}

// TestSlackMessageShape: a Slack incoming-webhook receiver gets a fallback
// text and blocks that name the outcome, workload and namespace.
func TestSlackMessageShape(t *testing.T) {
	h := start(t, nil)
	rc := newReceiver(t, nil)
	spec := webhook(rc.URL + "/services/T000/B000/XXXX")
	spec.Webhook.Format = kickv1alpha1.FormatSlack
	h.policy("slack", spec)
	h.ready("slack", metav1.ConditionTrue, kickv1alpha1.ReasonValid)
	h.publish(h.event(kickv1alpha1.PhaseSucceeded, map[string]string{"app": "web"}))
	hit := rc.waitFor(t, "/services/", 1)[0]
	var msg struct {
		Text   string           `json:"text"`
		Blocks []map[string]any `json:"blocks"`
	}
	if err := json.Unmarshal(hit.body, &msg); err != nil {
		t.Fatalf("body %s: %v", hit.body, err)
	}
	if !strings.Contains(msg.Text, "web") || len(msg.Blocks) == 0 {
		t.Fatalf("slack message lacks text or blocks: %s", hit.body)
	}
	if body := string(hit.body); !strings.Contains(body, h.ns) || strings.Contains(body, "http://") || strings.Contains(body, "https://") {
		t.Fatalf("slack message must name the namespace and carry no links: %s", body)
	}
}
