package sinks

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/router"
	"github.com/kick-operator/kick/sinks/format"
	"github.com/kick-operator/kick/sinks/rollup"
)

// fakeFanOuts stands in for the cache of KickRequests: the grouping it feeds is what is tested.
type fakeFanOuts struct {
	mu        sync.Mutex
	members   []rollup.Member
	consumers map[rollup.Source][]rollup.Consumer
	calls     int
}

func (f *fakeFanOuts) Consumers(_ context.Context, namespace string, src rollup.Source, _ time.Time) ([]rollup.Consumer, error) {
	if namespace != testNS {
		return nil, errors.New("wrong namespace " + namespace)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]rollup.Consumer(nil), f.consumers[src]...), nil
}

func (f *fakeFanOuts) setConsumers(src rollup.Source, cs ...rollup.Consumer) {
	f.mu.Lock()
	if f.consumers == nil {
		f.consumers = map[rollup.Source][]rollup.Consumer{}
	}
	f.consumers[src] = cs
	f.mu.Unlock()
}

func (f *fakeFanOuts) Members(_ context.Context, namespace string) ([]rollup.Member, error) {
	if namespace != testNS {
		return nil, errors.New("wrong namespace " + namespace)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	return append([]rollup.Member(nil), f.members...), nil
}

func (f *fakeFanOuts) looks() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

func (f *fakeFanOuts) set(ms ...rollup.Member) {
	f.mu.Lock()
	f.members = ms
	f.mu.Unlock()
}

var (
	webTLS = rollup.Source{Kind: "Secret", Name: "web-tls"}
	dbPass = rollup.Source{Kind: "Secret", Name: "db"}
)

// member is a request of the test namespace that restarted for src's change at changed.
func member(src rollup.Source, changed time.Time, o rollup.Outcome, completed time.Time, labels map[string]string) rollup.Member {
	return rollup.Member{Namespace: testNS, RestartedFor: src, RestartedAt: changed, Observed: changed.Truncate(time.Microsecond),
		Outcome: o, Completed: completed, TargetLabels: labels}
}

// rollUpPolicy is a policy with spec.rollUp (mode, maxWait 15m) delivering json to url.
func rollUpPolicy(url string, mode kickv1alpha1.RollUpMode) *kickv1alpha1.NotificationPolicy {
	p := policy(url)
	p.Spec.RollUp = &kickv1alpha1.RollUpSpec{Mode: mode, MaxWait: &metav1.Duration{Duration: 15 * time.Minute}}
	return p
}

// rollUpDispatcher is a dispatcher (not running: the test drives rollUpOnce) with src as its
// fan-out source, and the policy applied with a real delivery config.
func rollUpDispatcher(t *testing.T, src FanOutSource, p *kickv1alpha1.NotificationPolicy, mutate ...func(*Options)) (*dispatcher, *policyState, *rollState) {
	t.Helper()
	d, _ := testDispatcher(t, 8)
	d.opts.FanOuts = src
	for _, m := range mutate {
		m(&d.opts)
	}
	st := applyPolicy(t, d, p, mustBuild(t, p, nil), nil)
	return d, st, newRollState()
}

func summaries(t *testing.T, rc *receiver) []format.SummaryPayload {
	t.Helper()
	var out []format.SummaryPayload
	for _, h := range rc.seen() {
		var p format.SummaryPayload
		if err := json.Unmarshal(h.body, &p); err != nil {
			t.Fatal(err)
		}
		if p.Event != format.SummaryEventName {
			t.Fatalf("not a summary: %s", h.body)
		}
		out = append(out, p)
	}
	return out
}

// TestRollUpOnePerChange: each change gets exactly one summary, with its counts, when every
// request finished (after the settle time) or when maxWait passed; only the workloads the
// selector matches are counted; looking again sends nothing more.
func TestRollUpOnePerChange(t *testing.T) {
	rc := newReceiver(t, status(http.StatusOK))
	p := rollUpPolicy(rc.URL, kickv1alpha1.RollUpAlso)
	p.Spec.WorkloadSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "web"}}
	src := &fakeFanOuts{}
	d, st, rs := rollUpDispatcher(t, src, p)

	web := map[string]string{"tier": "web"}
	a := time.Now().Add(time.Second) // after the policy's first reconcile
	b := a.Add(time.Minute)
	doneA := a.Add(2 * time.Minute).Truncate(time.Second)
	src.set(
		member(webTLS, a, rollup.Succeeded, a.Add(time.Minute).Truncate(time.Second), web),
		member(webTLS, a, rollup.Succeeded, doneA, web),
		member(webTLS, a, rollup.Failed, a.Add(90*time.Second).Truncate(time.Second), web),
		member(webTLS, a, rollup.Failed, doneA.Add(time.Second), map[string]string{"tier": "db"}), // not selected
		member(dbPass, b, rollup.Succeeded, b.Add(time.Minute).Truncate(time.Second), web),
		member(dbPass, b, rollup.InProgress, time.Time{}, web),
		rollup.Member{Namespace: testNS, Observed: b.Truncate(time.Microsecond), Outcome: rollup.Held, TargetLabels: web},
	)
	ctx := context.Background()

	// A finished; it is due once it settled.
	if next := d.rollUpOnce(ctx, st, rs, doneA.Add(rollup.Settle-time.Millisecond)); !next.Equal(doneA.Add(rollup.Settle)) {
		t.Errorf("next look at %v, want when A settled (%v)", next, doneA.Add(rollup.Settle))
	}
	if n := len(rc.seen()); n != 0 {
		t.Fatalf("%d summaries before A settled", n)
	}
	d.rollUpOnce(ctx, st, rs, doneA.Add(rollup.Settle))
	got := summaries(t, rc)
	if len(got) != 1 {
		t.Fatalf("%d summaries, want the one of A", len(got))
	}
	want := format.NewSummaryPayload(format.Summary{Policy: string(p.UID), Namespace: testNS, SourceKind: "Secret", SourceName: "web-tls",
		ChangedAt: a, Workloads: 3, Succeeded: 2, Failed: 1, LastCompletion: doneA, Time: doneA})
	if !reflect.DeepEqual(got[0], want) {
		t.Errorf("summary of A:\n got %+v\nwant %+v", got[0], want)
	}
	if id := rc.seen()[0].header.Get("webhook-id"); id != (format.Summary{Policy: string(p.UID), Namespace: testNS, SourceKind: "Secret", SourceName: "web-tls", ChangedAt: a}).ID() {
		t.Errorf("webhook-id %q", id)
	}

	// B is open: nothing until maxWait passed, then its summary says what is still open.
	d.rollUpOnce(ctx, st, rs, b.Add(15*time.Minute-time.Millisecond))
	if n := len(rc.seen()); n != 1 {
		t.Fatalf("%d summaries before B's maxWait", n)
	}
	d.rollUpOnce(ctx, st, rs, b.Add(15*time.Minute))
	got = summaries(t, rc)
	if len(got) != 2 {
		t.Fatalf("%d summaries, want A and B", len(got))
	}
	if g := got[1]; g.Source.Name != "db" || g.Finished || g.Workloads != 3 || g.Succeeded != 1 || g.InProgress != 1 || g.Held != 1 || g.Open != 2 ||
		g.OccurredAt != b.Add(15*time.Minute).UTC().Format(time.RFC3339) {
		t.Errorf("summary of B: %+v", g)
	}

	// Everything finished meanwhile: no second summary of either change.
	src.set(member(webTLS, a, rollup.Succeeded, doneA, web), member(dbPass, b, rollup.Succeeded, b.Add(20*time.Minute), web))
	d.rollUpOnce(ctx, st, rs, b.Add(time.Hour))
	if n := len(rc.seen()); n != 2 {
		t.Fatalf("%d summaries after looking again, want 2", n)
	}
	if st.delivered != 2 {
		t.Errorf("delivered = %d, want 2", st.delivered)
	}
}

// storedStatus is the status a flush at now writes for st, as the API server would return it.
func storedStatus(t *testing.T, st *policyState, now time.Time) kickv1alpha1.NotificationPolicyStatus {
	t.Helper()
	data, err := json.Marshal(flushAt(st, now)["status"])
	if err != nil {
		t.Fatal(err)
	}
	var out kickv1alpha1.NotificationPolicyStatus
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRollUpAcrossRestart: the policy's status records each summary sent. A new leader that
// reads it sends the summaries not recorded and none that are; one sent by a leader that died
// before writing the record comes again, with the same id. Replay of per-request events plays
// no part.
func TestRollUpAcrossRestart(t *testing.T) {
	rc := newReceiver(t, status(http.StatusOK))
	p := rollUpPolicy(rc.URL, kickv1alpha1.RollUpOnly)
	now := time.Now()
	p.Status.HandledThrough = &metav1.Time{Time: now.Add(-time.Hour)} // a policy that has delivered for a while
	a, b := now.Add(-5*time.Minute), now.Add(-2*time.Minute)
	doneA, doneB := a.Add(time.Minute).Truncate(time.Second), now.Add(time.Minute).Truncate(time.Second)
	src := &fakeFanOuts{}
	src.set(member(webTLS, a, rollup.Succeeded, doneA, nil), member(dbPass, b, rollup.InProgress, time.Time{}, nil))
	ctx := context.Background()

	d, st, rs := rollUpDispatcher(t, src, p)
	d.rollUpOnce(ctx, st, rs, now)
	written := storedStatus(t, st, now) // A recorded
	if r := written.RollUp; r == nil || len(r.Sent) != 1 || r.Sent[0].Name != "web-tls" || !r.Sent[0].ChangedAt.Equal(a) {
		t.Fatalf("status.rollUp %+v, want A recorded", r)
	}

	// B finishes while no manager runs.
	src.set(member(webTLS, a, rollup.Succeeded, doneA, nil), member(dbPass, b, rollup.Succeeded, doneB, nil))
	later := doneB.Add(rollup.Settle)
	restart := func(s kickv1alpha1.NotificationPolicyStatus) *policyState {
		q := p.DeepCopy()
		q.Status = s
		d, st, rs := rollUpDispatcher(t, src, q)
		d.rollUpOnce(ctx, st, rs, later)
		d.rollUpOnce(ctx, st, rs, later.Add(time.Minute))
		return st
	}
	st2 := restart(written)
	var names []string
	for _, s := range summaries(t, rc) {
		names = append(names, s.Source.Name)
	}
	if !reflect.DeepEqual(names, []string{"web-tls", "db"}) {
		t.Fatalf("summaries %v after a restart, want web-tls once, then db", names)
	}
	if r := storedStatus(t, st2, later).RollUp; r == nil || len(r.Sent) != 2 {
		t.Fatalf("status.rollUp %+v, want A and B recorded", r)
	}

	// A leader that sent B and died before writing its record: the next one sends B again,
	// under the same id, and A not.
	restart(written)
	seen := rc.seen()
	if len(seen) != 3 || seen[2].header.Get("webhook-id") != seen[1].header.Get("webhook-id") {
		t.Fatalf("%d deliveries, want B's sent again under its id", len(seen))
	}
}

// TestRollUpOnly: with mode Only a policy delivers no per-request phase change (gate changes
// still, when asked for); with Also it delivers both.
func TestRollUpOnly(t *testing.T) {
	for _, tc := range []struct {
		mode  kickv1alpha1.RollUpMode
		phase bool
	}{{kickv1alpha1.RollUpOnly, false}, {kickv1alpha1.RollUpAlso, true}} {
		p := rollUpPolicy("https://hooks.example.com/x", tc.mode)
		p.Spec.GateChanges = true
		_, st, _ := rollUpDispatcher(t, &fakeFanOuts{}, p)
		if got := st.wants(phaseChanged("Succeeded")); got != tc.phase {
			t.Errorf("%s: wants a phase change = %v", tc.mode, got)
		}
		if !st.wants(gateChanged(false)) {
			t.Errorf("%s: gate change not wanted", tc.mode)
		}
	}
	// A phase change of the namespace wakes the roll-up loop, also with Only.
	_, st, _ := rollUpDispatcher(t, &fakeFanOuts{}, rollUpPolicy("https://hooks.example.com/x", kickv1alpha1.RollUpOnly))
	st.accept(phaseChanged("Succeeded"))
	select {
	case <-st.rollWake:
	default:
		t.Error("a phase change did not wake the roll-up loop")
	}
	var ev router.Event = phaseChanged("Succeeded")
	other := ev.(router.PhaseChanged)
	other.Request.Namespace = "team-b"
	st.accept(other)
	select {
	case <-st.rollWake:
		t.Error("another namespace's phase change woke the roll-up loop")
	default:
	}
}

// TestRollUpEvictsBeyondCap: a policy follows at most MaxOpenRollUps open fan-outs; the oldest
// beyond are given up, counted once in status, and get no summary.
func TestRollUpEvictsBeyondCap(t *testing.T) {
	rc := newReceiver(t, status(http.StatusOK))
	src := &fakeFanOuts{}
	d, st, rs := rollUpDispatcher(t, src, rollUpPolicy(rc.URL, kickv1alpha1.RollUpAlso), func(o *Options) { o.MaxOpenRollUps = 2 })
	a := time.Now().Add(time.Second)
	var ms []rollup.Member
	for i := range 4 {
		ms = append(ms, member(rollup.Source{Kind: "ConfigMap", Name: "cm-" + string(rune('a'+i))}, a.Add(time.Duration(i)*time.Second), rollup.InProgress, time.Time{}, nil))
	}
	src.set(ms...)
	d.rollUpOnce(context.Background(), st, rs, a.Add(time.Minute))
	d.rollUpOnce(context.Background(), st, rs, a.Add(2*time.Minute))
	if st.rollUpsEvicted != 2 {
		t.Fatalf("evicted = %d, want 2", st.rollUpsEvicted)
	}
	d.rollUpOnce(context.Background(), st, rs, a.Add(time.Hour))
	var names []string
	for _, s := range summaries(t, rc) {
		names = append(names, s.Source.Name)
	}
	if !reflect.DeepEqual(names, []string{"cm-c", "cm-d"}) {
		t.Fatalf("summaries %v, want the two newest, oldest first (cm-c, cm-d)", names)
	}
	if st.rollUpsEvicted != 2 {
		t.Fatalf("evicted = %d after they fell due, want still 2", st.rollUpsEvicted)
	}
}

// TestRollUpLoopWakesOnPhaseChange: the running roll-up loop looks again soon after a request of
// the namespace changes phase (its periodic look is an hour away here) and sends the summary of
// the fan-out that finished; with mode Only the phase change itself is not sent.
func TestRollUpLoopWakesOnPhaseChange(t *testing.T) {
	rc := newReceiver(t, status(http.StatusOK))
	src := &fakeFanOuts{}
	p := rollUpPolicy(rc.URL, kickv1alpha1.RollUpOnly)
	p.Status.HandledThrough = &metav1.Time{Time: time.Now().Add(-10 * time.Minute)}
	d, _, _ := rollUpDispatcher(t, src, p, func(o *Options) {
		o.RollUpInterval = time.Hour
		o.Replay, o.ReplayWindow = &fakeReplay{}, time.Hour
	})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	d.run(ctx)
	waitUntil(t, "the first look", func() bool { return src.looks() == 1 })

	// A fan-out finished (and settled) since the watermark: only a wake-up is missing.
	a := time.Now().Add(-time.Minute)
	src.set(member(webTLS, a, rollup.Succeeded, a.Add(time.Second), nil))
	publish(t, d, phaseChanged("Succeeded"))
	waitUntil(t, "a delivery", func() bool { return len(rc.seen()) > 0 })
	got := summaries(t, rc)
	if len(got) != 1 || got[0].Source.Name != "web-tls" || got[0].Workloads != 1 {
		t.Fatalf("summaries %+v, want one of web-tls", got)
	}
}

// waitUntil polls cond until it holds, failing the test after wait.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRollUpWaitsForConsumersStillToRestart: without a restart budget a consumer gets its
// request only as KICK restarts it, so the finished requests of a fan-out are not all of it.
// A selected consumer that does not run the change and has no request for it keeps the
// summary back; once it restarted, the summary counts it. One that never restarts is counted
// as waiting in the maxWait summary. Consumers the policy's selector does not match count
// nowhere.
func TestRollUpWaitsForConsumersStillToRestart(t *testing.T) {
	rc := newReceiver(t, status(http.StatusOK))
	p := rollUpPolicy(rc.URL, kickv1alpha1.RollUpOnly)
	p.Spec.WorkloadSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "web"}}
	src := &fakeFanOuts{}
	d, st, rs := rollUpDispatcher(t, src, p)
	web, db := map[string]string{"tier": "web"}, map[string]string{"tier": "db"}
	ctx := context.Background()

	a := time.Now().Add(time.Second)
	done := a.Add(time.Minute).Truncate(time.Second)
	req := func(target string, o rollup.Outcome, completed time.Time) rollup.Member {
		m := member(webTLS, a, o, completed, web)
		m.Target = target
		return m
	}
	src.set(req("Deployment/a", rollup.Succeeded, done), req("Deployment/b", rollup.Succeeded, done))
	src.setConsumers(webTLS,
		rollup.Consumer{Target: "Deployment/a", Carries: true, Labels: web},
		rollup.Consumer{Target: "Deployment/b", Carries: true, Labels: web},
		rollup.Consumer{Target: "Deployment/c", Labels: web}, // still to restart
		rollup.Consumer{Target: "Deployment/x", Labels: db},  // not the policy's
	)
	d.rollUpOnce(ctx, st, rs, done.Add(rollup.Settle))
	if n := len(rc.seen()); n != 0 {
		t.Fatalf("%d summaries while Deployment/c is still to restart", n)
	}

	// c restarts: its request appears and finishes; the summary counts all three.
	doneC := done.Add(30 * time.Second)
	src.set(req("Deployment/a", rollup.Succeeded, done), req("Deployment/b", rollup.Succeeded, done), req("Deployment/c", rollup.Succeeded, doneC))
	src.setConsumers(webTLS,
		rollup.Consumer{Target: "Deployment/a", Carries: true, Labels: web},
		rollup.Consumer{Target: "Deployment/b", Carries: true, Labels: web},
		rollup.Consumer{Target: "Deployment/c", Carries: true, Labels: web},
		rollup.Consumer{Target: "Deployment/x", Labels: db},
	)
	d.rollUpOnce(ctx, st, rs, doneC.Add(rollup.Settle))
	got := summaries(t, rc)
	if len(got) != 1 || got[0].Workloads != 3 || got[0].Succeeded != 3 || !got[0].Finished {
		t.Fatalf("summaries %+v, want one counting 3 succeeded", got)
	}

	// Another change whose last consumer never restarts: maxWait sends it, counting it waiting.
	b := a.Add(time.Hour)
	doneB := b.Add(time.Minute).Truncate(time.Second)
	m := member(dbPass, b, rollup.Succeeded, doneB, web)
	m.Target = "Deployment/a"
	src.set(m)
	src.setConsumers(dbPass, rollup.Consumer{Target: "Deployment/a", Carries: true, Labels: web}, rollup.Consumer{Target: "Deployment/c", Labels: web})
	d.rollUpOnce(ctx, st, rs, doneB.Add(rollup.Settle))
	if n := len(rc.seen()); n != 1 {
		t.Fatalf("%d summaries before the second change's maxWait, want 1", n)
	}
	d.rollUpOnce(ctx, st, rs, b.Add(15*time.Minute))
	got = summaries(t, rc)
	if len(got) != 2 {
		t.Fatalf("%d summaries, want 2", len(got))
	}
	if g := got[1]; g.Source.Name != "db" || g.Finished || g.Workloads != 2 || g.Succeeded != 1 || g.Waiting != 1 || g.Open != 1 {
		t.Errorf("maxWait summary: %+v", g)
	}
}
