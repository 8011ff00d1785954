package sinks

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/sinks/format"
)

// TestRollUpRestartMidFanOut: the requests of a change wait behind the restart budget past
// the policy's maxWait, so no restart answers the change while the policy's delivery
// watermark is already past it; the manager restarts, and then the first restart comes. The fan-out is seen for the
// first time after a restart and after its maxWait: exactly one summary arrives at a
// receiver on 127.0.0.1, and a further manager restart does not send it again (the next
// summary to arrive is that of a later change).
func TestRollUpRestartMidFanOut(t *testing.T) {
	t.Parallel()
	env := cluster.Get(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	c := env.Client
	url, got := ceReceiver(t)

	maxWait := time.Minute
	policyObj := &kickv1alpha1.NotificationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "rollup"}, Spec: kickv1alpha1.NotificationPolicySpec{
		WorkloadSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "web"}},
		RollUp:           &kickv1alpha1.RollUpSpec{Mode: kickv1alpha1.RollUpOnly, MaxWait: &metav1.Duration{Duration: maxWait}},
		Webhook:          kickv1alpha1.WebhookSpec{URL: url, Format: kickv1alpha1.FormatCloudEvents},
	}}
	if err := c.Create(ctx, policyObj); err != nil {
		t.Fatal(err)
	}
	// The policy has summarized fan-outs for ten minutes and delivered 30 seconds ago: the
	// status a manager that ran it would have written.
	cluster.Eventually(t, wait, "policy status", func() (bool, error) {
		var p kickv1alpha1.NotificationPolicy
		if err := c.Get(ctx, client.ObjectKeyFromObject(policyObj), &p); err != nil {
			return false, err
		}
		p.Status.HandledThrough = &metav1.Time{Time: time.Now().Add(-30 * time.Second)}
		p.Status.RollUp = &kickv1alpha1.RollUpStatus{Since: kickv1alpha1.NewNanoTime(time.Now().Add(-10 * time.Minute))}
		return true, c.Status().Update(ctx, &p)
	})
	for i := range 2 {
		if err := c.Create(ctx, deployment(ns, fmt.Sprintf("web-%d", i), "web")); err != nil {
			t.Fatal(err)
		}
	}
	kp := &kickv1alpha1.KickPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}
	if err := c.Create(ctx, kp); err != nil {
		t.Fatal(err)
	}

	// Change C, three minutes ago: both restarts wait for a slot of the budget.
	changed := time.Now().Add(-3 * time.Minute)
	setBudgetWaiting(t, c, ns, "web-0", changed)
	setBudgetWaiting(t, c, ns, "web-1", changed)
	stop := runRollUpManager(t, env, ns)
	cluster.Eventually(t, wait, "the policy taken up", func() (bool, error) {
		var p kickv1alpha1.NotificationPolicy
		if err := c.Get(ctx, client.ObjectKeyFromObject(policyObj), &p); err != nil {
			return false, err
		}
		return p.Status.ObservedGeneration == p.Generation && p.Status.RollUp != nil && !p.Status.RollUp.Since.After(changed), nil
	})
	stop()

	// While no manager runs, web-0 gets its slot and restarts for C; web-1 still waits.
	cTime := kickv1alpha1.NewNanoTime(changed)
	tls := &kickv1alpha1.SourceChange{Kind: kickv1alpha1.SourceKind("Secret"), Name: "web-tls", ChangedAt: cTime}
	done := metav1.NewTime(time.Now().Truncate(time.Second))
	setRequest(t, c, ns, "web-0", kickv1alpha1.PhaseSucceeded, tls, &done)

	stop = runRollUpManager(t, env, ns)
	e := nextSummary(t, got)
	want := format.Summary{Policy: policyUID(t, c, ns), Namespace: ns, SourceKind: "Secret", SourceName: "web-tls", ChangedAt: changed,
		Workloads: 2, Succeeded: 1, Waiting: 1, LastCompletion: done.Time, Time: changed.Add(maxWait)}
	checkSummary(t, e, want)
	cluster.Eventually(t, wait, "the summary recorded in status.rollUp", func() (bool, error) {
		var p kickv1alpha1.NotificationPolicy
		if err := c.Get(ctx, client.ObjectKeyFromObject(policyObj), &p); err != nil {
			return false, err
		}
		r := p.Status.RollUp
		return r != nil && len(r.Sent) == 1 && r.Sent[0].Name == "web-tls" && r.Sent[0].ChangedAt.Equal(changed), nil
	})
	stop()

	// Another restart, then a later change D of Secret db that finishes at once: the next
	// summary to arrive is D's, not C's again.
	stop = runRollUpManager(t, env, ns)
	d := time.Now()
	db := &kickv1alpha1.SourceChange{Kind: kickv1alpha1.SourceKind("Secret"), Name: "db", ChangedAt: kickv1alpha1.NewNanoTime(d)}
	dDone := metav1.NewTime(time.Now().Truncate(time.Second))
	setRequest(t, c, ns, "web-1", kickv1alpha1.PhaseSucceeded, db, &dDone)
	if e := nextSummary(t, got); e.Subject() != "Secret/db" {
		t.Fatalf("after another restart got %s %s, want the summary of Secret/db (C must not come again)", e.Subject(), e.ID())
	}
	stop()
	select {
	case e := <-got:
		t.Fatalf("a summary more: %s", e)
	default:
	}
}

// setBudgetWaiting records that Deployment name's restart for the change at changed waits for
// a slot of the restart budget (no restart answered the change yet).
func setBudgetWaiting(t *testing.T, c client.Client, ns, name string, changed time.Time) {
	t.Helper()
	observed := metav1.NewMicroTime(changed)
	writeRequest(t, c, ns, name, func(st *kickv1alpha1.KickRequestStatus) {
		st.Phase, st.LatestObservedDependencyChange, st.PolicyRef = kickv1alpha1.PhaseWaitingForGate, &observed, "web"
		st.Gate = &kickv1alpha1.GateStatus{Reason: kickv1alpha1.GateRestartBudget, Stage: "Budget", Message: "10 of 10 restarts in progress; 2 waiting"}
	})
}
