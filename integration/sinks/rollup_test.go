package sinks

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/restart/discovery"
	"github.com/kick-operator/kick/restart/observe"
	"github.com/kick-operator/kick/restart/request"
	"github.com/kick-operator/kick/restart/workload"
	"github.com/kick-operator/kick/router"
	"github.com/kick-operator/kick/sinks"
	"github.com/kick-operator/kick/sinks/format"
)

// TestRollUpCloudEvents: a NotificationPolicy with rollUp mode Only sends, to a receiver built
// with the CloudEvents SDK, exactly one summary per change of a Secret, computed from the
// KickRequests in the API server: the counts cover only the workloads its selector matches
// and the waves their KickPolicy orders them in,
// the summary comes when the last request finished, or when maxWait passed with what is
// still open; per-request phase changes are not sent. A manager that stops while a fan-out is
// open sends its summary after its restart, and not the one it sent before.
func TestRollUpCloudEvents(t *testing.T) {
	t.Parallel()
	env := cluster.Get(t)
	ns := env.Namespace(t)
	ctx := context.Background()
	c := env.Client
	url, got := ceReceiver(t)

	policyObj := &kickv1alpha1.NotificationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "rollup"}, Spec: kickv1alpha1.NotificationPolicySpec{
		WorkloadSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "web"}},
		RollUp:           &kickv1alpha1.RollUpSpec{Mode: kickv1alpha1.RollUpOnly, MaxWait: &metav1.Duration{Duration: time.Minute}},
		Webhook:          kickv1alpha1.WebhookSpec{URL: url, Format: kickv1alpha1.FormatCloudEvents},
	}}
	if err := c.Create(ctx, policyObj); err != nil {
		t.Fatal(err)
	}
	stop := runRollUpManager(t, env, ns)
	cluster.Eventually(t, wait, "policy Ready", func() (bool, error) {
		var p kickv1alpha1.NotificationPolicy
		if err := c.Get(ctx, client.ObjectKeyFromObject(policyObj), &p); err != nil {
			return false, err
		}
		return p.Status.HandledThrough != nil && p.Status.ObservedGeneration == p.Generation, nil
	})

	// Five Deployments read Secret web-tls; web-4 is another tenant's team (tier db) that this
	// policy must not count. The KickPolicy restarts web-0 in a canary wave, the rest after.
	for i, tier := range []string{"web", "web", "web", "web", "db"} {
		dep := deployment(ns, fmt.Sprintf("web-%d", i), tier)
		if i == 0 {
			dep.Labels["ring"] = "canary"
		}
		if err := c.Create(ctx, dep); err != nil {
			t.Fatal(err)
		}
	}
	kp := &kickv1alpha1.KickPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: kickv1alpha1.KickPolicySpec{
		Restart: &kickv1alpha1.RestartSpec{Waves: []kickv1alpha1.RestartWave{
			{Name: "canary", Selector: metav1.LabelSelector{MatchLabels: map[string]string{"ring": "canary"}}},
			{Name: "rest"},
		}},
	}}
	if err := c.Create(ctx, kp); err != nil {
		t.Fatal(err)
	}
	a := time.Now().Add(time.Second)
	aTime := kickv1alpha1.NewNanoTime(a)
	tls := func(at kickv1alpha1.NanoTime) *kickv1alpha1.SourceChange {
		return &kickv1alpha1.SourceChange{Kind: kickv1alpha1.SourceKind("Secret"), Name: "web-tls", ChangedAt: at}
	}
	done := metav1.NewTime(a.Add(2 * time.Second).Truncate(time.Second))
	setRequest(t, c, ns, "web-0", kickv1alpha1.PhaseSucceeded, tls(aTime), &done)
	setRequest(t, c, ns, "web-1", kickv1alpha1.PhaseFailed, tls(aTime), &done)
	setRequest(t, c, ns, "web-2", kickv1alpha1.PhaseExecuting, tls(aTime), nil)
	setRequest(t, c, ns, "web-4", kickv1alpha1.PhaseFailed, tls(aTime), &done) // not selected

	// Nothing while web-2 rolls out; its end completes the fan-out.
	select {
	case e := <-got:
		t.Fatalf("a summary while a restart is open: %s", e)
	case <-time.After(3 * time.Second):
	}
	last := metav1.NewTime(time.Now().Truncate(time.Second))
	setRequest(t, c, ns, "web-2", kickv1alpha1.PhaseSucceeded, tls(aTime), &last)
	e := nextSummary(t, got)
	want := format.Summary{Policy: string(policyUID(t, c, ns)), Namespace: ns, SourceKind: "Secret", SourceName: "web-tls", ChangedAt: a,
		Workloads: 3, Succeeded: 2, Failed: 1, Waves: 2, LastCompletion: last.Time, Time: last.Time}
	checkSummary(t, e, want)

	// Change B: the maxWait of one minute passes with one restart still open and one held.
	// The change is dated back so the wait ends soon; the manager is down when it does, and
	// the next one sends the summary.
	// (Not before the policy was created: the policy summarizes no change older than itself.)
	b := time.Now().Add(-45 * time.Second)
	if created := policyObj.CreationTimestamp.Add(time.Second); b.Before(created) {
		b = created
	}
	bTime := kickv1alpha1.NewNanoTime(b)
	bDone := metav1.NewTime(time.Now().Truncate(time.Second))
	setRequest(t, c, ns, "web-0", kickv1alpha1.PhaseSucceeded, tls(bTime), &bDone)
	setRequest(t, c, ns, "web-1", kickv1alpha1.PhaseExecuting, tls(bTime), nil)
	setHeld(t, c, ns, "web-3", b)
	stop()
	time.Sleep(time.Until(b.Add(time.Minute + time.Second))) // the clock is the condition
	stop = runRollUpManager(t, env, ns)
	// The new manager reads from the policy's status that A was sent: it sends B only.
	e = nextSummary(t, got)
	wantB := format.Summary{Policy: want.Policy, Namespace: ns, SourceKind: "Secret", SourceName: "web-tls", ChangedAt: b,
		Workloads: 3, Succeeded: 1, InProgress: 1, Held: 1, Waves: 2, LastCompletion: bDone.Time, Time: b.Add(time.Minute)}
	checkSummary(t, e, wantB)
	select {
	case e := <-got:
		t.Fatalf("a summary more: %s", e)
	case <-time.After(3 * time.Second):
	}
	stop()
}

// checkSummary compares a received CloudEvent with the summary it should carry, exactly.
func checkSummary(t *testing.T, e cloudevents.Event, want format.Summary) {
	t.Helper()
	if err := e.Validate(); err != nil {
		t.Errorf("invalid event: %v", err)
	}
	if e.ID() != want.ID() || e.Type() != format.CloudEventSummaryType || e.Subject() != "Secret/web-tls" ||
		e.Source() != format.CloudEventSummarySource(want.Namespace, "Secret", "web-tls") {
		t.Errorf("attributes: %s", e)
	}
	var p format.SummaryPayload
	if err := e.DataAs(&p); err != nil {
		t.Fatal(err)
	}
	wantP := format.NewSummaryPayload(want)
	gotAt, gotSecs, wantAt, wantSecs := deref(p.CompletedAt), deref64(p.DurationSeconds), deref(wantP.CompletedAt), deref64(wantP.DurationSeconds)
	p.CompletedAt, p.DurationSeconds, wantP.CompletedAt, wantP.DurationSeconds = nil, nil, nil, nil
	if p != wantP || gotAt != wantAt || gotSecs != wantSecs {
		t.Errorf("summary:\n got %+v (%s, %d)\nwant %+v (%s, %d)", p, gotAt, gotSecs, wantP, wantAt, wantSecs)
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

func deref64(n *int64) int64 {
	if n == nil {
		return -1
	}
	return *n
}

// nextSummary waits for the next CloudEvent, generously: a summary waits for its fan-out to
// settle (10s) and for maxWait.
func nextSummary(t *testing.T, got <-chan cloudevents.Event) cloudevents.Event {
	t.Helper()
	select {
	case e := <-got:
		return e
	case <-time.After(2 * time.Minute):
		t.Fatal("no summary received")
		return cloudevents.Event{}
	}
}

func policyUID(t *testing.T, c client.Client, ns string) string {
	var p kickv1alpha1.NotificationPolicy
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "rollup"}, &p); err != nil {
		t.Fatal(err)
	}
	return string(p.UID)
}

func deployment(ns, name, tier string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"tier": tier}},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}},
			},
		},
	}
}

// setRequest creates or updates the KickRequest of Deployment name with this status, as the
// request controller would record a restart for a change.
func setRequest(t *testing.T, c client.Client, ns, name string, phase kickv1alpha1.KickRequestPhase, src *kickv1alpha1.SourceChange, completed *metav1.Time) {
	t.Helper()
	observed := metav1.NewMicroTime(src.ChangedAt.Time)
	writeRequest(t, c, ns, name, func(st *kickv1alpha1.KickRequestStatus) {
		st.Phase, st.RestartedFor, st.CompletionTime, st.LatestObservedDependencyChange = phase, src, completed, &observed
		st.PolicyRef = "web"
		st.Gate = &kickv1alpha1.GateStatus{Reason: kickv1alpha1.GateAllowed}
	})
}

// setHeld records that Deployment name's restart for the change at changed is held by a halt.
func setHeld(t *testing.T, c client.Client, ns, name string, changed time.Time) {
	t.Helper()
	observed := metav1.NewMicroTime(changed)
	writeRequest(t, c, ns, name, func(st *kickv1alpha1.KickRequestStatus) {
		st.Phase, st.LatestObservedDependencyChange, st.PolicyRef = kickv1alpha1.PhaseWaitingForGate, &observed, "web"
		st.Gate = &kickv1alpha1.GateStatus{Reason: kickv1alpha1.GateRolloutHalted, Stage: "Halt", Message: "halted after Deployment web-1 failed its rollout"}
	})
}

func writeRequest(t *testing.T, c client.Client, ns, name string, set func(*kickv1alpha1.KickRequestStatus)) {
	t.Helper()
	ctx := context.Background()
	cluster.Eventually(t, wait, "status of KickRequest "+name, func() (bool, error) {
		var kr kickv1alpha1.KickRequest
		err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &kr)
		if err != nil {
			kr = kickv1alpha1.KickRequest{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
				Spec: kickv1alpha1.KickRequestSpec{TargetRef: kickv1alpha1.TargetRef{Kind: kickv1alpha1.TargetDeployment, Name: name}}}
			if err := c.Create(ctx, &kr); err != nil {
				return false, err
			}
		}
		set(&kr.Status)
		return true, c.Status().Update(ctx, &kr)
	})
}

// runRollUpManager runs an in-process manager with the NotificationPolicy controller reading
// fan-outs from its cache (as kick-manager wires it) and returns a function that stops it
// and waits until it stopped.
func runRollUpManager(t *testing.T, env *cluster.Env, ns string) func() {
	t.Helper()
	logs := &syncBuffer{}
	mgr := env.InProcessManager(t, ns, func(o *ctrl.Options) {
		o.Logger = funcr.New(func(prefix, args string) { logs.WriteString(prefix + " " + args + "\n") }, funcr.Options{})
		o.Cache.ByObject = observe.NewCacheOptions()
	})
	// The indexes kick-manager registers: the consumers of a source, and a Deployment's
	// ReplicaSets (how FanOuts finds the consumers still to restart).
	if err := discovery.RegisterIndexes(context.Background(), mgr.GetFieldIndexer()); err != nil {
		t.Fatal(err)
	}
	if err := workload.RegisterIndexes(context.Background(), mgr.GetFieldIndexer()); err != nil {
		t.Fatal(err)
	}
	// And a workload's KickRequests (how FanOuts tells a restart still to be recorded).
	if err := request.RegisterIndexes(context.Background(), mgr.GetFieldIndexer()); err != nil {
		t.Fatal(err)
	}
	rt := router.New(router.Options{Registerer: prometheus.NewRegistry()})
	opts := sinks.Options{
		Router: rt, Registerer: prometheus.NewRegistry(), StatusInterval: 300 * time.Millisecond,
		AllowCIDRs:   []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		Replay:       &request.Replayer{Client: mgr.GetClient()},
		ReplayWindow: time.Hour,
		FanOuts:      &request.FanOuts{Client: mgr.GetClient()},
		// The loop looks at least this often; in the product phase changes wake it sooner.
		RollUpInterval: time.Second,
	}
	if err := (&sinks.Reconciler{}).SetupWithManager(mgr, opts); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- mgr.Start(ctx) }()
	var once bool
	stop := func() {
		if once {
			return
		}
		once = true
		cancel()
		select {
		case err := <-stopped:
			if err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("manager: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("the manager did not stop within 30s")
		}
		rt.Close()
		if t.Failed() {
			t.Logf("manager log:\n%s", logs.String())
		}
	}
	t.Cleanup(stop)
	return stop
}
