package sinks

import (
	"encoding/json"
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/sinks/format"
)

// TestGateChanges: gate decisions published on the router reach the policies that set
// gateChanges, as JSON gate documents and as CloudEvents a receiver built with the SDK accepts,
// with the decision's id; a default policy in the same namespace gets only the phase changes
// published after them, and a selector that does not match the workload keeps them out too.
func TestGateChanges(t *testing.T) {
	h := start(t, nil)
	rc := newReceiver(t, nil)
	ceURL, ceGot := ceReceiver(t)
	web := map[string]string{"app": "web"}

	h.policy("default", webhook(rc.URL+"/default"))
	gates := webhook(rc.URL + "/opted-in")
	gates.GateChanges = true
	h.policy("gates", gates)
	db := webhook(rc.URL + "/db-only")
	db.GateChanges = true
	db.WorkloadSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}
	h.policy("gates-db", db)
	ce := webhook(ceURL)
	ce.GateChanges = true
	ce.Webhook.Format = kickv1alpha1.FormatCloudEvents
	ce.Webhook.CloudEvents = &kickv1alpha1.CloudEventsSpec{Mode: kickv1alpha1.CloudEventsBinary}
	h.policy("gates-ce", ce)
	for _, name := range []string{"default", "gates", "gates-db", "gates-ce"} {
		h.ready(name, metav1.ConditionTrue, kickv1alpha1.ReasonValid)
	}

	blocked, open := h.gate(false, web), h.gate(true, web)
	done := h.event(kickv1alpha1.PhaseSucceeded, web)
	dbDone := h.event(kickv1alpha1.PhaseSucceeded, map[string]string{"app": "db"})
	h.publish(blocked, open, done, dbDone)

	// Each policy receives in publishing order, so what it got first shows that nothing it
	// should not have had came before.
	got := rc.waitFor(t, "/opted-in", 4)
	wantIDs := []string{blocked.DecisionID(), open.DecisionID(), done.TransitionID(), dbDone.TransitionID()}
	if len(got) != len(wantIDs) {
		t.Fatalf("the opted-in policy received %d requests, want %d", len(got), len(wantIDs))
	}
	for i, hit := range got {
		if id := hit.header.Get("webhook-id"); id != wantIDs[i] {
			t.Errorf("opted-in request %d: webhook-id %s, want %s", i, id, wantIDs[i])
		}
	}
	var first, second map[string]any
	if err := json.Unmarshal(got[0].body, &first); err != nil {
		t.Fatalf("body %s: %v", got[0].body, err)
	}
	if err := json.Unmarshal(got[1].body, &second); err != nil {
		t.Fatalf("body %s: %v", got[1].body, err)
	}
	for k, v := range map[string]any{
		"event": format.GateEventName, "requestName": blocked.Request.Name, "allowed": false, "stage": "GitOps",
		"reason": "OutsideSchedule", "gitOpsProvider": "argocd", "owner": "Application argocd/web",
		"cause": map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "AppProject", "namespace": "argocd", "name": "shop"},
	} {
		if !reflect.DeepEqual(first[k], v) {
			t.Errorf("gate document %s = %#v, want %#v", k, first[k], v)
		}
	}
	if second["allowed"] != true || second["reason"] != "Allowed" || second["opensAt"] != nil {
		t.Errorf("allowed gate document %s", got[1].body)
	}
	if got := names(rc.waitFor(t, "/default", 2)); got != done.Request.Name+","+dbDone.Request.Name {
		t.Errorf("the default policy received %s, want only the phase changes", got)
	}
	if got := names(rc.waitFor(t, "/db-only", 1)); got != dbDone.Request.Name {
		t.Errorf("the db policy received %s, want only the db workload's phase change", got)
	}

	e := nextCloudEvent(t, ceGot)
	if e.ID() != blocked.DecisionID() || e.Type() != format.CloudEventGateType ||
		e.Source() != format.CloudEventSource(h.ns, blocked.Request.Name) || e.Subject() != "Deployment/web" {
		t.Errorf("gate CloudEvent attributes %s", e)
	}
	var payload format.GatePayload
	if err := e.DataAs(&payload); err != nil || payload.Event != format.GateEventName || payload.Reason != "OutsideSchedule" || payload.OpensAt == nil {
		t.Errorf("gate CloudEvent data %+v (%v)", payload, err)
	}
	if e := nextCloudEvent(t, ceGot); e.ID() != open.DecisionID() {
		t.Errorf("second CloudEvent id %s, want the allowed decision's %s", e.ID(), open.DecisionID())
	}

	h.counts("gates", 4, 0, 0)
	h.counts("default", 2, 0, 0)
	h.counts("gates-db", 1, 0, 0)
}
