package sinks

import (
	"context"
	"net/http"
	"testing"
	"time"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/sinks/rollup"
)

// flushAt does what the status flusher does at now: it computes the status to write, which
// moves the policy's watermark.
func flushAt(st *policyState, now time.Time) map[string]any {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.statusPatch(now)
}

// TestRollUpFanOutFirstSeenLate: the requests of a change wait behind a gate (a schedule, the
// restart budget) for longer than maxWait, so the fan-out has no group (no request restarted
// for it) while the policy's watermark moves on. When the first restart comes, the fan-out is
// seen for the first time, already past its maxWait: its summary is sent, once.
func TestRollUpFanOutFirstSeenLate(t *testing.T) {
	rc := newReceiver(t, status(http.StatusOK))
	src := &fakeFanOuts{}
	d, st, rs := rollUpDispatcher(t, src, rollUpPolicy(rc.URL, kickv1alpha1.RollUpOnly))
	ctx := context.Background()

	a := time.Now().Add(time.Second)
	waiting := func(target string) rollup.Member {
		return rollup.Member{Namespace: testNS, Target: target, Observed: a.Truncate(time.Microsecond), Outcome: rollup.Waiting}
	}
	src.set(waiting("Deployment/a"), waiting("Deployment/b"))
	for now := a; now.Before(a.Add(30 * time.Minute)); now = now.Add(time.Minute) {
		d.rollUpOnce(ctx, st, rs, now)
		flushAt(st, now)
	}
	if n := len(rc.seen()); n != 0 {
		t.Fatalf("%d summaries before any restart", n)
	}

	// The gate opens: a restarts and finishes, b still waits.
	first := a.Add(30 * time.Minute).Truncate(time.Second)
	restarted := member(webTLS, a, rollup.Succeeded, first, nil)
	restarted.Target = "Deployment/a"
	src.set(restarted, waiting("Deployment/b"))
	for now := first.Add(time.Second); now.Before(first.Add(5 * time.Minute)); now = now.Add(30 * time.Second) {
		d.rollUpOnce(ctx, st, rs, now)
		flushAt(st, now)
	}
	got := summaries(t, rc)
	if len(got) != 1 {
		t.Fatalf("%d summaries of the fan-out first seen after its maxWait, want exactly 1", len(got))
	}
	if g := got[0]; g.Source.Name != "web-tls" || g.Workloads != 2 || g.Succeeded != 1 || g.Waiting != 1 ||
		g.OccurredAt != a.Add(15*time.Minute).UTC().Format(time.RFC3339) {
		t.Errorf("summary %+v", g)
	}
}

// TestRollUpFanOutLandsLate: the first request of change A reaches the cache only after the
// summary of a later change B was sent and the watermark moved past A's end. A's summary is
// still sent, once; B's is not sent again.
func TestRollUpFanOutLandsLate(t *testing.T) {
	rc := newReceiver(t, status(http.StatusOK))
	src := &fakeFanOuts{}
	d, st, rs := rollUpDispatcher(t, src, rollUpPolicy(rc.URL, kickv1alpha1.RollUpOnly))
	ctx := context.Background()

	a := time.Now().Add(time.Second)
	b := a.Add(10 * time.Second)
	doneA := a.Add(20 * time.Second).Truncate(time.Second)
	doneB := b.Add(20 * time.Second).Truncate(time.Second)
	reqB := member(dbPass, b, rollup.Succeeded, doneB, nil)
	src.set(reqB)
	now := doneB.Add(rollup.Settle)
	d.rollUpOnce(ctx, st, rs, now)
	if n := len(rc.seen()); n != 1 {
		t.Fatalf("%d summaries of B, want 1", n)
	}
	for ; now.Before(doneB.Add(3 * time.Minute)); now = now.Add(30 * time.Second) {
		d.rollUpOnce(ctx, st, rs, now)
		flushAt(st, now)
	}

	src.set(reqB, member(webTLS, a, rollup.Succeeded, doneA, nil)) // A shows up late
	for end := now.Add(time.Minute); now.Before(end); now = now.Add(10 * time.Second) {
		d.rollUpOnce(ctx, st, rs, now)
		flushAt(st, now)
	}
	var names []string
	for _, s := range summaries(t, rc) {
		names = append(names, s.Source.Name)
	}
	if len(names) != 2 || names[0] != "db" || names[1] != "web-tls" {
		t.Fatalf("summaries %v, want db then web-tls, once each", names)
	}
}
