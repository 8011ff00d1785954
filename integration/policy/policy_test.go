// Package policy tests the KickPolicy status controller on the local control
// plane: counts of matched and contested workloads of every kind, the Ready
// condition for valid, ambiguous, suspended and misconfigured policies, and
// the Event emitted when Ready changes.
package policy

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/restart/policy"
)

func TestMain(m *testing.M) {
	cluster.Main(m, cluster.TestOptions{
		KickCRDs:    true,
		AddToScheme: []func(*runtime.Scheme) error{kickv1alpha1.AddToScheme},
	})
}

const wait = 30 * time.Second

// startController runs a manager with the KickPolicy controller, its cache
// limited to the test's namespace, until the test ends.
func startController(t *testing.T, env *cluster.Env, namespace string) {
	t.Helper()
	mgr := env.InProcessManager(t, namespace, nil)
	if err := (&policy.Reconciler{}).SetupWithManager(mgr, policy.Options{MaxConcurrentReconciles: 2}); err != nil {
		t.Fatal(err)
	}
	cluster.RunManager(t, mgr)
}

func setup(t *testing.T) (*cluster.Env, string) {
	t.Parallel()
	env := cluster.Get(t)
	ns := env.Namespace(t)
	startController(t, env, ns)
	return env, ns
}

func podTemplate(name string) (*metav1.LabelSelector, corev1.PodTemplateSpec) {
	pod := map[string]string{"pod": name}
	return &metav1.LabelSelector{MatchLabels: pod}, corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: pod},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "example.com/app:1"}}},
	}
}

func deployment(ns, name string, labels map[string]string) *appsv1.Deployment {
	sel, tmpl := podTemplate(name)
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{Selector: sel, Template: tmpl}}
}

func statefulSet(ns, name string, labels map[string]string) *appsv1.StatefulSet {
	sel, tmpl := podTemplate(name)
	return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: appsv1.StatefulSetSpec{Selector: sel, Template: tmpl, ServiceName: name}}
}

func daemonSet(ns, name string, labels map[string]string) *appsv1.DaemonSet {
	sel, tmpl := podTemplate(name)
	return &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: appsv1.DaemonSetSpec{Selector: sel, Template: tmpl}}
}

func kickPolicy(ns, name string, spec kickv1alpha1.KickPolicySpec) *kickv1alpha1.KickPolicy {
	return &kickv1alpha1.KickPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec}
}

func selectApp(app string) kickv1alpha1.KickPolicySpec {
	return kickv1alpha1.KickPolicySpec{Discovery: &kickv1alpha1.DiscoverySpec{
		WorkloadSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}}}
}

func create(t *testing.T, env *cluster.Env, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := env.Client.Create(context.Background(), o); err != nil {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}
}

// want is the expected status of a policy. Message parts must all appear.
type want struct {
	matched, blocked int32
	ready            metav1.ConditionStatus
	reason           string
	message          []string
}

// expect waits until the policy's status, read from the API server,
// describes its current generation as w says.
func expect(t *testing.T, env *cluster.Env, ns, name string, w want) *kickv1alpha1.KickPolicy {
	t.Helper()
	var p kickv1alpha1.KickPolicy
	cluster.Eventually(t, wait, fmt.Sprintf("KickPolicy %s: matched %d, ambiguous %d, Ready=%s/%s", name, w.matched, w.blocked, w.ready, w.reason), func() (bool, error) {
		if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &p); err != nil {
			return false, err
		}
		st := p.Status
		c := findReady(&p)
		switch {
		case st.ObservedGeneration != p.Generation:
			return false, fmt.Errorf("observedGeneration %d, generation %d", st.ObservedGeneration, p.Generation)
		case c == nil:
			return false, fmt.Errorf("no Ready condition: %+v", st)
		case st.MatchedWorkloads != w.matched || st.AmbiguousWorkloads != w.blocked || c.Status != w.ready || c.Reason != w.reason:
			return false, fmt.Errorf("matched %d, ambiguous %d, Ready=%s/%s %q", st.MatchedWorkloads, st.AmbiguousWorkloads, c.Status, c.Reason, c.Message)
		case c.ObservedGeneration != p.Generation:
			return false, fmt.Errorf("Ready describes generation %d, not %d", c.ObservedGeneration, p.Generation)
		}
		for _, m := range w.message {
			if !strings.Contains(c.Message, m) {
				return false, fmt.Errorf("Ready message %q lacks %q", c.Message, m)
			}
		}
		return true, nil
	})
	return &p
}

func findReady(p *kickv1alpha1.KickPolicy) *metav1.Condition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == kickv1alpha1.ConditionReady {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// expectEvent waits for an Event about the policy with the given type and
// reason.
func expectEvent(t *testing.T, env *cluster.Env, ns, name, eventType, reason string) {
	t.Helper()
	cluster.Eventually(t, wait, fmt.Sprintf("a %s %s Event for KickPolicy %s", eventType, reason, name), func() (bool, error) {
		var list eventsv1.EventList
		if err := env.Client.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
			return false, err
		}
		var seen []string
		for _, e := range list.Items {
			if e.Regarding.Kind == "KickPolicy" && e.Regarding.Name == name {
				if e.Type == eventType && e.Reason == reason && e.ReportingController == policy.ControllerName {
					return true, nil
				}
				seen = append(seen, e.Type+"/"+e.Reason)
			}
		}
		return false, fmt.Errorf("events seen: %v", seen)
	})
}

var (
	web = map[string]string{"app": "web"}
	api = map[string]string{"app": "api"}
)

func TestSoleAndContestedSelection(t *testing.T) {
	env, ns := setup(t)
	ctx := context.Background()
	create(t, env, deployment(ns, "web", web), deployment(ns, "api", api), kickPolicy(ns, "web", selectApp("web")))
	expect(t, env, ns, "web", want{matched: 1, ready: metav1.ConditionTrue, reason: policy.ReasonReady})
	expectEvent(t, env, ns, "web", corev1.EventTypeNormal, policy.ReasonReady)

	// A second policy selecting everything contests app=web; app=api is
	// selected by it alone.
	all := kickPolicy(ns, "all", kickv1alpha1.KickPolicySpec{})
	create(t, env, all)
	expect(t, env, ns, "web", want{blocked: 1, ready: metav1.ConditionFalse, reason: policy.ReasonAmbiguous,
		message: []string{"1 workload is also selected by policy all", "blocked until one policy selects it"}})
	expect(t, env, ns, "all", want{matched: 1, blocked: 1, ready: metav1.ConditionFalse, reason: policy.ReasonAmbiguous,
		message: []string{"1 workload is also selected by policy web"}})
	expectEvent(t, env, ns, "web", corev1.EventTypeWarning, policy.ReasonAmbiguous)

	// Deleting it settles web again.
	if err := env.Client.Delete(ctx, all); err != nil {
		t.Fatal(err)
	}
	expect(t, env, ns, "web", want{matched: 1, ready: metav1.ConditionTrue, reason: policy.ReasonReady})

	// Relabelling a workload changes the count (a label update, no spec change).
	var d appsv1.Deployment
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "api"}, &d); err != nil {
		t.Fatal(err)
	}
	base := d.DeepCopy()
	d.Labels = web
	// A merge patch: the Deployment controller may be writing its status.
	if err := env.Client.Patch(ctx, &d, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	expect(t, env, ns, "web", want{matched: 2, ready: metav1.ConditionTrue, reason: policy.ReasonReady})

	// Deleting a workload lowers it.
	if err := env.Client.Delete(ctx, &d); err != nil {
		t.Fatal(err)
	}
	expect(t, env, ns, "web", want{matched: 1, ready: metav1.ConditionTrue, reason: policy.ReasonReady})
}

func TestEveryWorkloadKindCounts(t *testing.T) {
	env, ns := setup(t)
	create(t, env, kickPolicy(ns, "web", selectApp("web")), statefulSet(ns, "other-db", api), daemonSet(ns, "other-agent", api))
	expect(t, env, ns, "web", want{ready: metav1.ConditionTrue, reason: policy.ReasonReady})
	// One kind at a time, so each kind's watch must trigger the recount.
	for i, w := range []client.Object{deployment(ns, "front", web), statefulSet(ns, "db", web), daemonSet(ns, "agent", web)} {
		create(t, env, w)
		expect(t, env, ns, "web", want{matched: int32(i + 1), ready: metav1.ConditionTrue, reason: policy.ReasonReady})
	}
}

func TestInvalidSchedule(t *testing.T) {
	env, ns := setup(t)
	window := func(cron, zone string) kickv1alpha1.KickPolicySpec {
		return kickv1alpha1.KickPolicySpec{Schedule: &kickv1alpha1.ScheduleSpec{Windows: []kickv1alpha1.ScheduleWindow{
			{Type: kickv1alpha1.WindowAllow, Cron: cron, Duration: "1h", TimeZone: zone}}}}
	}
	badCron := kickPolicy(ns, "bad-cron", window("30-10 * * * *", "UTC"))
	badZone := kickPolicy(ns, "bad-zone", window("0 2 * * *", "Mars/Olympus"))
	badCron.Spec.Discovery = selectApp("a").Discovery
	badZone.Spec.Discovery = selectApp("b").Discovery
	create(t, env, badCron, badZone)
	expect(t, env, ns, "bad-cron", want{ready: metav1.ConditionFalse, reason: policy.ReasonInvalidSchedule,
		message: []string{"window 0", "30-10 * * * *"}})
	expect(t, env, ns, "bad-zone", want{ready: metav1.ConditionFalse, reason: policy.ReasonInvalidSchedule,
		message: []string{"window 0", "Mars/Olympus"}})
	expectEvent(t, env, ns, "bad-zone", corev1.EventTypeWarning, policy.ReasonInvalidSchedule)

	// Fixing the spec is picked up with the new generation.
	p := expect(t, env, ns, "bad-zone", want{ready: metav1.ConditionFalse, reason: policy.ReasonInvalidSchedule})
	base := p.DeepCopy()
	p.Spec.Schedule.Windows[0].TimeZone = "Europe/Berlin"
	if err := env.Client.Patch(context.Background(), p, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	fixed := expect(t, env, ns, "bad-zone", want{ready: metav1.ConditionTrue, reason: policy.ReasonReady})
	if fixed.Status.ObservedGeneration < 2 {
		t.Fatalf("observedGeneration %d after a spec update", fixed.Status.ObservedGeneration)
	}
}

// TestInvalidSelector: admission refuses unknown operators; what it cannot
// check (here a label value no label may have) makes the policy not Ready.
func TestInvalidSelector(t *testing.T) {
	env, ns := setup(t)
	spec := kickv1alpha1.KickPolicySpec{Discovery: &kickv1alpha1.DiscoverySpec{
		DependencySelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "kick", Operator: "In", Values: []string{"not a label value"}}}}}}
	create(t, env, deployment(ns, "web", web), kickPolicy(ns, "odd", spec))
	expect(t, env, ns, "odd", want{matched: 1, ready: metav1.ConditionFalse, reason: policy.ReasonInvalidSelector,
		message: []string{"spec.discovery.dependencySelector is invalid"}})
}

func TestSuspendedPolicyIsReady(t *testing.T) {
	env, ns := setup(t)
	spec := selectApp("web")
	spec.Suspend = true
	create(t, env, deployment(ns, "web", web), kickPolicy(ns, "paused", spec))
	expect(t, env, ns, "paused", want{matched: 1, ready: metav1.ConditionTrue, reason: policy.ReasonReady,
		message: []string{"suspended: no restarts"}})
}
