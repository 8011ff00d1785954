package sinks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/router"
	"github.com/kick-operator/kick/sinks/format"
	"github.com/kick-operator/kick/sinks/signing"
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

// testDispatcher is a dispatcher whose workers only run after d.run: until then, events
// published on its router wait in the policies' subscriptions. The router's metrics and the
// dispatcher's share reg.
func testDispatcher(t testing.TB, capacity int) (*dispatcher, *prometheus.Registry) {
	reg := prometheus.NewRegistry()
	rt := router.New(router.Options{Registerer: reg})
	t.Cleanup(rt.Close)
	opts, err := Options{Router: rt, Registerer: reg, QueueCapacity: capacity}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	return newDispatcher(opts, nil, nil, logr.Discard()), reg
}

// applyPolicy hands p to the dispatcher as the reconciler would, with cfg or prob.
func applyPolicy(t testing.TB, d *dispatcher, p *kickv1alpha1.NotificationPolicy, cfg *deliveryConfig, prob *problem) *policyState {
	t.Helper()
	m, err := newMatcher(p.Spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.apply(p, m, cfg, prob); err != nil {
		t.Fatal(err)
	}
	return d.policies[keyOf(p)]
}

// publish publishes evs on the dispatcher's router.
func publish(t *testing.T, d *dispatcher, evs ...router.Event) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	for _, ev := range evs {
		if err := d.opts.Router.Publish(ctx, ev); err != nil {
			t.Fatalf("publish %s: %v", ev.Key(), err)
		}
	}
}

// routerMetric reads a kick_router_* series of the "notifications" subscriber label.
func routerMetric(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			if f.GetName() != name || len(m.GetLabel()) != 1 || m.GetLabel()[0].GetValue() != SubscriberName {
				continue
			}
			if m.GetGauge() != nil {
				return m.GetGauge().GetValue()
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

// next reads the next queued event of a policy whose worker does not run.
func next(t *testing.T, st *policyState) router.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	ev, err := st.sub.Next(ctx)
	if err != nil {
		t.Fatalf("Next: %v", err)
	}
	return ev
}

// TestPolicySubscription: each policy's router subscription takes only what the policy
// delivers, drops the oldest when full (counted once, in status, in the notification metric
// and in the router's series), follows spec changes without resubscribing, and is closed when
// the policy goes.
func TestPolicySubscription(t *testing.T) {
	d, reg := testDispatcher(t, 2)
	p := policy("https://hooks.example.com/x")
	p.Spec.Phases = []kickv1alpha1.KickRequestPhase{kickv1alpha1.PhaseSucceeded}
	st := applyPolicy(t, d, p, mustBuild(t, p, nil), nil)

	other := phaseChanged("Succeeded")
	other.Request.Namespace = "elsewhere"
	publish(t, d, phaseChanged("Executing"), other, gateChanged(false), router.SourceChanged{})
	if n := st.sub.Len(); n != 0 {
		t.Fatalf("%d events queued that the policy does not deliver", n)
	}
	for range 3 {
		publish(t, d, phaseChanged("Succeeded"))
	}
	if st.sub.Len() != 2 || st.dropped != 1 || counter(t, reg, "kick_notification_dropped_total") != 1 ||
		routerMetric(t, reg, "kick_router_dropped_total") != 1 || routerMetric(t, reg, "kick_router_queue_depth") != 2 {
		t.Fatalf("queue %d, dropped %d", st.sub.Len(), st.dropped)
	}
	if !st.dirty {
		t.Error("a drop does not mark the status for writing")
	}

	// Opting in to gate changes applies to the same subscription.
	sub := st.sub
	p.Generation, p.Spec.GateChanges = 2, true
	if applyPolicy(t, d, p, st.cfg, nil) != st || st.sub != sub {
		t.Fatal("a spec change replaced the policy's state or subscription")
	}
	publish(t, d, gateChanged(false))
	if _, ok := next(t, st).(router.PhaseChanged); !ok {
		t.Error("the oldest queued event is not the phase change")
	}
	if g, ok := next(t, st).(router.GateChanged); !ok || g.Allowed {
		t.Error("the opted-in gate change was not queued")
	}

	p.Generation, p.Spec.Suspend = 3, true
	applyPolicy(t, d, p, st.cfg, nil)
	publish(t, d, phaseChanged("Succeeded"), gateChanged(true))
	if st.sub.Len() != 0 || st.dropped != 2 {
		t.Fatalf("a suspended policy took events: queue %d, dropped %d", st.sub.Len(), st.dropped)
	}
	if c := meta.FindStatusCondition(st.conditions, kickv1alpha1.ConditionReady); c == nil || c.Reason != reasonSuspended || c.Status != metav1.ConditionTrue {
		t.Fatalf("Ready %+v", c)
	}

	d.remove(keyOf(p))
	if _, err := sub.Next(context.Background()); !errors.Is(err, router.ErrClosed) {
		t.Fatalf("the removed policy's subscription is open: %v", err)
	}
	publish(t, d, phaseChanged("Succeeded"))
	if routerMetric(t, reg, "kick_router_queue_depth") != 0 || len(d.policies) != 0 {
		t.Fatal("a removed policy still receives events")
	}

	// Recreated under the same name: a new state and subscription (the name is free again).
	p.UID, p.Spec.Suspend = "uid-2", false
	again := applyPolicy(t, d, p, mustBuild(t, p, nil), nil)
	publish(t, d, phaseChanged("Succeeded"))
	if again == st || again.sub == sub || again.sub.Len() != 1 || again.dropped != 0 {
		t.Fatalf("recreated policy: new state %v, queue %d", again != st, again.sub.Len())
	}
}

// TestBlockedPolicyCountsFailures: a policy that cannot send counts what it matched as failed.
func TestBlockedPolicyCountsFailures(t *testing.T) {
	d, reg := testDispatcher(t, 4)
	p := policy("https://hooks.example.com/x")
	st := applyPolicy(t, d, p, nil, &problem{reason: reasonSecretNotFound, message: `Secret "x" does not exist`})
	publish(t, d, phaseChanged("Succeeded"))
	// With a done context the worker handles what is queued, then returns.
	done, cancel := context.WithCancel(context.Background())
	cancel()
	d.work(done, st)
	if st.failed != 1 || !strings.Contains(st.lastError, `Secret "x"`) ||
		counter(t, reg, "kick_notification_deliveries_total", testNS, "hook", "failure") != 1 {
		t.Fatalf("failed %d, lastError %q", st.failed, st.lastError)
	}
}

// blockingReceiver is an endpoint that reports each request's KICK event id on got and, while
// hold is open, keeps the request hanging.
func blockingReceiver(t *testing.T, hold chan struct{}) (url string, got chan string) {
	got = make(chan string, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get(signing.HeaderID)
		if hold != nil {
			select {
			case <-hold:
			case <-r.Context().Done():
			}
		}
	}))
	t.Cleanup(srv.Close)
	if hold != nil {
		t.Cleanup(func() { close(hold) }) // runs before srv.Close, which waits for hanging requests
	}
	return srv.URL, got
}

// receive waits for the next id on got.
func receive(t *testing.T, got chan string, who string) string {
	t.Helper()
	select {
	case id := <-got:
		return id
	case <-time.After(wait):
		t.Fatalf("%s received nothing", who)
		return ""
	}
}

// TestSlowPolicyIsolated: while one policy's endpoint hangs, its own subscription fills and drops
// its oldest events, and nothing else waits: not the publisher, not the restart driver's block
// subscription, not another policy of the same namespace.
func TestSlowPolicyIsolated(t *testing.T) {
	d, reg := testDispatcher(t, 2)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	d.run(ctx)
	driver, err := d.opts.Router.Subscribe("restart-driver", router.Block, 16, nil)
	if err != nil {
		t.Fatal(err)
	}
	hold := make(chan struct{})
	slowURL, slowGot := blockingReceiver(t, hold)
	fastURL, fastGot := blockingReceiver(t, nil)
	slowP, fastP := policy(slowURL), policy(fastURL)
	slowP.Name, fastP.Name, fastP.UID = "a-slow", "b-fast", "uid-2"
	slow := applyPolicy(t, d, slowP, mustBuild(t, slowP, nil), nil)
	fast := applyPolicy(t, d, fastP, mustBuild(t, fastP, nil), nil)

	evs := make([]router.PhaseChanged, 5)
	for i := range evs {
		evs[i] = phaseChanged("Succeeded")
		evs[i].Request.UID = fmt.Sprintf("req-%d", i)
	}
	publish(t, d, evs[0])
	if id := receive(t, slowGot, "the slow endpoint"); id != evs[0].TransitionID() {
		t.Fatalf("slow endpoint got %s first", id)
	}
	for i, ev := range evs {
		if i > 0 {
			publish(t, d, ev) // returns at once although the slow policy's queue is full
		}
		if id := receive(t, fastGot, "the fast endpoint"); id != ev.TransitionID() {
			t.Fatalf("fast endpoint: event %d has id %s, want %s", i, id, ev.TransitionID())
		}
	}
	if driver.Len() != len(evs) {
		t.Errorf("the restart driver's subscription holds %d events, want %d", driver.Len(), len(evs))
	}
	slow.mu.Lock()
	slowDropped := slow.dropped
	slow.mu.Unlock()
	fast.mu.Lock()
	fastDropped := fast.dropped
	fast.mu.Unlock()
	if slowDropped != 2 || fastDropped != 0 || counter(t, reg, "kick_notification_dropped_total") != 2 ||
		routerMetric(t, reg, "kick_router_dropped_total") != 2 {
		t.Fatalf("dropped: slow %d (want 2), fast %d (want 0)", slowDropped, fastDropped)
	}

	hold <- struct{}{} // release the first request; the two newest events follow
	for _, ev := range evs[3:] {
		if id := receive(t, slowGot, "the slow endpoint"); id != ev.TransitionID() {
			t.Errorf("slow endpoint got %s, want the newest events", id)
		}
		hold <- struct{}{}
	}
}

// TestGateChangesOptIn: gate changes reach the policies that ask for them and whose selector
// matches the target workload, as JSON gate documents with the decision's id; the default
// policy of the namespace only hears of phase changes.
func TestGateChangesOptIn(t *testing.T) {
	d, _ := testDispatcher(t, 8)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	d.run(ctx)
	type endpoint struct {
		got  chan string
		body chan []byte
	}
	newEndpoint := func() (string, endpoint) {
		e := endpoint{got: make(chan string, 8), body: make(chan []byte, 8)}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			e.body <- b
			e.got <- r.Header.Get(signing.HeaderID)
		}))
		t.Cleanup(srv.Close)
		return srv.URL, e
	}
	policies := map[string]endpoint{}
	for _, name := range []string{"default", "gates", "gates-db"} {
		url, e := newEndpoint()
		p := policy(url)
		p.Name, p.UID = name, types.UID("uid-"+name)
		p.Spec.GateChanges = name != "default"
		if name == "gates-db" {
			p.Spec.WorkloadSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}
		}
		applyPolicy(t, d, p, mustBuild(t, p, nil), nil)
		policies[name] = e
	}
	blocked, open := gateChanged(false), gateChanged(true)
	done := phaseChanged("Succeeded")
	dbDone := phaseChanged("Succeeded")
	dbDone.Request.UID, dbDone.TargetLabels = "db-req", map[string]string{"app": "db"}
	publish(t, d, blocked, open, done, dbDone)

	// Each endpoint sees its events in publishing order, so the first one it gets shows that
	// nothing earlier reached it.
	want := map[string][]string{
		"default":  {done.TransitionID(), dbDone.TransitionID()},
		"gates":    {blocked.DecisionID(), open.DecisionID(), done.TransitionID(), dbDone.TransitionID()},
		"gates-db": {dbDone.TransitionID()},
	}
	for name, ids := range want {
		for i, id := range ids {
			if got := receive(t, policies[name].got, name); got != id {
				t.Errorf("%s: request %d has id %s, want %s", name, i, got, id)
			}
		}
	}
	var doc map[string]any
	for range 2 {
		<-policies["default"].body
	}
	if err := json.Unmarshal(<-policies["gates"].body, &doc); err != nil {
		t.Fatal(err)
	}
	if doc["event"] != format.GateEventName || doc["allowed"] != false || doc["reason"] != "OutsideSchedule" || doc["requestName"] != blocked.Request.Name {
		t.Errorf("gate document %v", doc)
	}
}

func TestPolicyStateGoneAndConditions(t *testing.T) {
	p := policy("https://hooks.example.com/x")
	p.Generation = 3
	p.Status = kickv1alpha1.NotificationPolicyStatus{
		ObservedGeneration: 3, Delivered: 7, Failed: 2, Dropped: 1, LastError: "earlier",
		Conditions: []metav1.Condition{{Type: kickv1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: ReasonGone, ObservedGeneration: 3}},
	}
	st := newPolicyState(p)
	if !st.gone || st.delivered != 7 || st.failed != 2 || st.dropped != 1 || st.lastError != "earlier" {
		t.Fatalf("seeded %+v", st)
	}

	d, _ := testDispatcher(t, 1)
	cfg := mustBuild(t, p, nil)
	st = applyPolicy(t, d, p, cfg, nil)
	if c := st.ready(); c.Reason != ReasonGone || c.Message != goneMessage {
		t.Fatalf("a 410 at the current generation was forgotten: %+v", c)
	}
	p.Generation = 4
	applyPolicy(t, d, p, cfg, nil)
	if c := st.ready(); c.Status != metav1.ConditionTrue || c.Reason != reasonValid || c.ObservedGeneration != 4 {
		t.Fatalf("a new generation must resume delivery: %+v", c)
	}

	// Precedence: a problem, then Gone, then a refused destination, then suspension.
	st.mu.Lock()
	st.refused = "refused"
	st.sel.Store(&selection{suspended: true})
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
	cfg := mustBuild(t, p, nil)
	st := applyPolicy(t, d, p, cfg, nil)

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
	patch, _ := json.Marshal(st.statusPatch(time.Now()))
	st.lastError = ""
	cleared, _ := json.Marshal(st.statusPatch(time.Now()))
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
