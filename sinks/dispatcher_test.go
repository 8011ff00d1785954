package sinks

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/router"
)

// counter reads a counter; labels are namespace, policy and outcome when given.
func counter(t *testing.T, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		want := map[string]string{}
		for i, k := range []string{"namespace", "policy", "outcome"} {
			if i < len(labels) {
				want[k] = labels[i]
			}
		}
	metrics:
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if v, ok := want[l.GetName()]; ok && v != l.GetValue() {
					continue metrics
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

// testDispatcher is a dispatcher that is not started: offers fill queues, nothing is sent.
func testDispatcher(t *testing.T, capacity int) (*dispatcher, *prometheus.Registry) {
	reg := prometheus.NewRegistry()
	opts, err := Options{Router: router.New(router.Options{}), Registerer: reg, QueueCapacity: capacity}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	return newDispatcher(opts, nil, nil, logr.Discard()), reg
}

func TestDispatcherOffer(t *testing.T) {
	d, reg := testDispatcher(t, 2)
	p := policy("https://hooks.example.com/x")
	p.Spec.Phases = []kickv1alpha1.KickRequestPhase{kickv1alpha1.PhaseSucceeded}
	m, _ := newMatcher(p.Spec)
	d.apply(p, m, mustBuild(t, p, nil), nil)
	st := d.policies[keyOf(p)]

	if !d.wants(phaseChanged("Succeeded")) {
		t.Fatal("the router filter drops events of a namespace with a policy")
	}
	other := phaseChanged("Succeeded")
	other.Request.Namespace = "elsewhere"
	if d.wants(other) || d.wants(router.GateChanged{}) {
		t.Fatal("the router filter passes events no policy can match")
	}

	d.route(phaseChanged("Executing")) // not in phases
	for range 3 {
		d.route(phaseChanged("Succeeded"))
	}
	if st.q.len() != 2 || st.dropped != 1 || counter(t, reg, "kick_notification_dropped_total") != 1 {
		t.Fatalf("queue %d, dropped %d", st.q.len(), st.dropped)
	}

	p.Spec.Suspend = true
	d.apply(p, m, st.cfg, nil)
	d.route(phaseChanged("Succeeded"))
	if st.dropped != 1 || st.failed != 0 {
		t.Fatal("a suspended policy took an event")
	}
	if c := meta.FindStatusCondition(st.conditions, kickv1alpha1.ConditionReady); c == nil || c.Reason != reasonSuspended || c.Status != metav1.ConditionTrue {
		t.Fatalf("Ready %+v", c)
	}

	p.Spec.Suspend = false
	d.apply(p, m, nil, &problem{reason: reasonSecretNotFound, message: `Secret "x" does not exist`})
	d.route(phaseChanged("Succeeded"))
	if st.failed != 1 || !strings.Contains(st.lastError, `Secret "x"`) ||
		counter(t, reg, "kick_notification_deliveries_total", testNS, "hook", "failure") != 1 {
		t.Fatalf("failed %d, lastError %q", st.failed, st.lastError)
	}

	d.remove(keyOf(p))
	if d.wants(phaseChanged("Succeeded")) || len(d.byNS[testNS]) != 0 {
		t.Fatal("a removed policy still receives events")
	}
}

func TestPolicyStateGoneAndConditions(t *testing.T) {
	p := policy("https://hooks.example.com/x")
	p.Generation = 3
	p.Status = kickv1alpha1.NotificationPolicyStatus{
		ObservedGeneration: 3, Delivered: 7, Failed: 2, Dropped: 1, LastError: "earlier",
		Conditions: []metav1.Condition{{Type: kickv1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: ReasonGone, ObservedGeneration: 3}},
	}
	st := newPolicyState(p, 1)
	if !st.gone || st.delivered != 7 || st.failed != 2 || st.dropped != 1 || st.lastError != "earlier" {
		t.Fatalf("seeded %+v", st)
	}

	d, _ := testDispatcher(t, 1)
	m, _ := newMatcher(p.Spec)
	cfg := mustBuild(t, p, nil)
	d.apply(p, m, cfg, nil)
	st = d.policies[keyOf(p)]
	if c := st.ready(); c.Reason != ReasonGone || c.Message != goneMessage {
		t.Fatalf("a 410 at the current generation was forgotten: %+v", c)
	}
	p.Generation = 4
	d.apply(p, m, cfg, nil)
	if c := st.ready(); c.Status != metav1.ConditionTrue || c.Reason != reasonValid || c.ObservedGeneration != 4 {
		t.Fatalf("a new generation must resume delivery: %+v", c)
	}

	// Precedence: a problem, then Gone, then a refused destination, then suspension.
	st.mu.Lock()
	st.refused, st.suspended = "refused", true
	if c := st.ready(); c.Reason != ReasonDestinationRefused {
		t.Errorf("refused+suspended gives %s", c.Reason)
	}
	st.gone = true
	if c := st.ready(); c.Reason != ReasonGone {
		t.Errorf("gone+refused gives %s", c.Reason)
	}
	st.problem = &problem{reason: ReasonInvalidURL, message: "bad"}
	if c := st.ready(); c.Reason != ReasonInvalidURL {
		t.Errorf("problem+gone gives %s", c.Reason)
	}
	st.mu.Unlock()
}

func TestRecordOutcomes(t *testing.T) {
	d, reg := testDispatcher(t, 1)
	p := policy("https://hooks.example.com/x")
	m, _ := newMatcher(p.Spec)
	cfg := mustBuild(t, p, nil)
	d.apply(p, m, cfg, nil)
	st := d.policies[keyOf(p)]

	d.record(st, cfg, p.Generation, outcome{kind: outcomeRefused, message: "refused here"})
	if c := st.ready(); c.Reason != ReasonDestinationRefused || st.failed != 1 || st.lastError != "refused here" {
		t.Fatalf("after a refusal: %+v failed=%d", c, st.failed)
	}
	d.record(st, cfg, p.Generation, outcome{kind: outcomeSuccess})
	if c := st.ready(); c.Reason != reasonValid || st.delivered != 1 || st.lastError != "" || st.lastDelivery == nil {
		t.Fatalf("after a success: %+v", c)
	}
	// A 410 about an older generation does not stop the current one.
	d.record(st, cfg, p.Generation-1, outcome{kind: outcomeGone, message: goneMessage})
	if st.gone {
		t.Fatal("a stale 410 stopped delivery")
	}
	d.record(st, cfg, p.Generation, outcome{kind: outcomeGone, message: goneMessage})
	if !st.gone || st.ready().Reason != ReasonGone {
		t.Fatal("a 410 did not stop delivery")
	}
	d.record(st, cfg, p.Generation, outcome{kind: outcomeSkipped})
	d.record(st, cfg, p.Generation, outcome{kind: outcomeCanceled})
	if st.delivered != 1 || st.failed != 3 {
		t.Fatalf("delivered %d failed %d", st.delivered, st.failed)
	}
	if got := counter(t, reg, "kick_notification_deliveries_total", testNS, "hook", "success"); got != 1 {
		t.Fatalf("success metric %v", got)
	}

	st.mu.Lock()
	patch, _ := json.Marshal(st.statusPatch())
	st.lastError = ""
	cleared, _ := json.Marshal(st.statusPatch())
	st.mu.Unlock()
	for _, want := range []string{`"uid":"uid-1"`, `"delivered":1`, `"failed":3`, `"observedGeneration":1`, `"reason":"Gone"`} {
		if !strings.Contains(string(patch), want) {
			t.Errorf("patch %s lacks %s", patch, want)
		}
	}
	if !strings.Contains(string(cleared), `"lastError":null`) {
		t.Errorf("an empty lastError must be cleared: %s", cleared)
	}
}
