package sinks

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/restart/evidence"
	"github.com/kick-operator/kick/restart/freshness"
	"github.com/kick-operator/kick/sinks/format"
	"github.com/kick-operator/kick/sinks/rollup"
)

// TestRollUpWaitsForConsumersWithoutRequest: without a restart budget KICK writes a
// workload's KickRequest only as it restarts it, so the first restarts of a fan-out can finish
// (and the settle time pass) before the last consumers have a request. A consumer of the
// Secret that a KickPolicy selects, that the NotificationPolicy's selector matches and whose
// pod template predates the change keeps the summary back until it restarted; the summary
// then counts it. A consumer the selector does not match, and one whose pods already carry the
// change without any request, count nowhere.
func TestRollUpWaitsForConsumersWithoutRequest(t *testing.T) {
	t.Parallel()
	env := cluster.Get(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	c := env.Client
	url, got := ceReceiver(t)

	policyObj := &kickv1alpha1.NotificationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "rollup"}, Spec: kickv1alpha1.NotificationPolicySpec{
		WorkloadSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "web"}},
		RollUp:           &kickv1alpha1.RollUpSpec{Mode: kickv1alpha1.RollUpOnly, MaxWait: &metav1.Duration{Duration: 10 * time.Minute}},
		Webhook:          kickv1alpha1.WebhookSpec{URL: url, Format: kickv1alpha1.FormatCloudEvents},
	}}
	if err := c.Create(ctx, policyObj); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, &kickv1alpha1.KickPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}); err != nil {
		t.Fatal(err)
	}
	runRollUpManager(t, env, ns)
	cluster.Eventually(t, wait, "policy Ready", func() (bool, error) {
		var p kickv1alpha1.NotificationPolicy
		if err := c.Get(ctx, client.ObjectKeyFromObject(policyObj), &p); err != nil {
			return false, err
		}
		return p.Status.HandledThrough != nil && p.Status.ObservedGeneration == p.Generation, nil
	})

	// Five Deployments mount Secret web-tls. web-0 to web-2 run a template from before the
	// change; web-3 too, but it is another team's (tier db); web-4 was restarted after the
	// change by someone else.
	a := time.Now()
	before, after := a.Add(-time.Minute), a.Add(time.Second)
	for i, tier := range []string{"web", "web", "web", "db", "web"} {
		stamp := before
		if i == 4 {
			stamp = after
		}
		if err := c.Create(ctx, tlsConsumer(ns, fmt.Sprintf("web-%d", i), tier, stamp)); err != nil {
			t.Fatal(err)
		}
	}
	aTime := kickv1alpha1.NewNanoTime(a)
	tls := &kickv1alpha1.SourceChange{Kind: kickv1alpha1.SourceKind("Secret"), Name: "web-tls", ChangedAt: aTime}

	// KICK restarted web-0 and web-1; both finished. web-2 has no request yet.
	for _, name := range []string{"web-0", "web-1"} {
		restampConsumer(t, c, ns, name, after)
	}
	// Completed a moment from now: a summary time before the policy's watermark would not be sent.
	done := metav1.NewTime(time.Now().Add(2 * time.Second).Truncate(time.Second))
	setRequest(t, c, ns, "web-0", kickv1alpha1.PhaseSucceeded, tls, &done)
	setRequest(t, c, ns, "web-1", kickv1alpha1.PhaseSucceeded, tls, &done)

	// The settle time passes: still no summary, web-2 is still to restart.
	select {
	case e := <-got:
		t.Fatalf("a summary while web-2 is still to restart: %s", e)
	case <-time.After(time.Until(done.Add(rollup.Settle + 5*time.Second))):
	}

	// KICK restarts web-2, naming the change in its note, and writes its request a moment
	// later, as the driver does. Meanwhile web-2's new rollout started after the change and
	// no request names it: the summary must still wait for it.
	restartWithNote(t, c, ns, "web-2", time.Now(), a)
	select {
	case e := <-got:
		t.Fatalf("a summary between web-2's restart and its request: %s", e)
	case <-time.After(3 * time.Second):
	}
	setRequest(t, c, ns, "web-2", kickv1alpha1.PhaseExecuting, tls, nil)
	last := metav1.NewTime(time.Now().Truncate(time.Second))
	setRequest(t, c, ns, "web-2", kickv1alpha1.PhaseSucceeded, tls, &last)
	e := nextSummary(t, got)
	checkSummary(t, e, format.Summary{Policy: policyUID(t, c, ns), Namespace: ns, SourceKind: "Secret", SourceName: "web-tls", ChangedAt: a,
		Workloads: 3, Succeeded: 3, LastCompletion: last.Time, Time: last.Time})
}

// tlsConsumer is a Deployment of this tier that mounts Secret web-tls, its pod template
// stamped as restarted at stamp.
func tlsConsumer(ns, name, tier string, stamp time.Time) *appsv1.Deployment {
	d := deployment(ns, name, tier)
	d.Spec.Template.Annotations = map[string]string{freshness.RestartedAtAnnotation: freshness.FormatStamp(stamp)}
	d.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "web-tls"}}}}
	return d
}

// restartWithNote restarts Deployment name at stamp with KICK's restarted-for note naming
// the change at change, as the driver's restart at once does.
func restartWithNote(t *testing.T, c client.Client, ns, name string, stamp, change time.Time) {
	t.Helper()
	ctx := context.Background()
	value := freshness.FormatStamp(stamp)
	cluster.Eventually(t, wait, "restart of "+name, func() (bool, error) {
		var d appsv1.Deployment
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &d); err != nil {
			return false, err
		}
		d.Spec.Template.Annotations[freshness.RestartedAtAnnotation] = value
		if d.Annotations == nil {
			d.Annotations = map[string]string{}
		}
		d.Annotations[kickv1alpha1.RestartedForAnnotation] = evidence.Note{Stamp: value, Change: change}.String()
		return true, c.Update(ctx, &d)
	})
}

// restampConsumer restarts Deployment name at stamp, as KICK's patch does.
func restampConsumer(t *testing.T, c client.Client, ns, name string, stamp time.Time) {
	t.Helper()
	ctx := context.Background()
	cluster.Eventually(t, wait, "restart of "+name, func() (bool, error) {
		var d appsv1.Deployment
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &d); err != nil {
			return false, err
		}
		d.Spec.Template.Annotations[freshness.RestartedAtAnnotation] = freshness.FormatStamp(stamp)
		return true, c.Update(ctx, &d)
	})
}
