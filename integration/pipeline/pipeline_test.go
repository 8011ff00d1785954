// Package pipeline proves the restart pipeline end to end on the local
// control plane, with the real kick-manager binary: a relevant change to a
// consumed Secret restarts its workload exactly once, inert changes and
// adoption restart nothing, and every gate holds a restart back until it
// allows it.
package pipeline

import (
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/restart/freshness"
)

const selectAll = `discovery: {workloadSelector: {}}`

func TestDataChangeRestartsExactlyOnce(t *testing.T) {
	f := setup(t)
	f.policy("all", selectAll)
	f.secret("db", map[string]string{"password": "alpha"}, nil)
	f.deployment("web", 2, podSpec("db"))
	f.waitAvailable("web")
	rec := f.waitObservation("db")
	if rec.Spec.Class != kickv1alpha1.ObservationBaseline {
		t.Fatalf("first observation class = %s, want Baseline", rec.Spec.Class)
	}
	if len(f.requests()) != 0 {
		t.Fatalf("adopting a fresh workload created a KickRequest: %+v", f.requests())
	}

	before := time.Now()
	f.setSecret("db", map[string]string{"password": "bravo"})
	kr := f.waitPhase("deployment-web", kickv1alpha1.PhaseSucceeded, 90*time.Second)
	f.waitReplicaSets("web", 2)
	stamp, ok := freshness.ParseStamp(f.restartStamp("web"))
	if !ok || stamp.Before(before) {
		t.Fatalf("restartedAt %q is not a sub-second stamp after the change", f.restartStamp("web"))
	}
	if kr.Status.RestartCount != 1 {
		t.Fatalf("restartCount = %d, want 1", kr.Status.RestartCount)
	}
	if kr.Status.LatestObservedDependencyChange == nil || kr.Status.LatestObservedDependencyChange.Time.Before(before) {
		t.Fatalf("latestObservedDependencyChange %v is older than the change", kr.Status.LatestObservedDependencyChange)
	}
	// A settled request and an unchanged Secret: nothing more happens.
	f.barrier()
	if got := f.replicaSets("web"); len(got) != 2 {
		t.Fatalf("want exactly one new ReplicaSet, got %v", got)
	}
}

func TestInertChangesRestartNothing(t *testing.T) {
	f := setup(t)
	f.policy("all", selectAll)
	f.secret("db", map[string]string{"password": "alpha"}, nil)
	f.deployment("web", 1, podSpec("db"))
	f.waitAvailable("web")
	rec := f.waitObservation("db")

	f.labelSecret("db", "team", "payments")                   // metadata only
	f.setSecret("db", map[string]string{"password": "alpha"}) // identical rewrite
	f.barrier()

	if got := f.replicaSets("web"); len(got) != 1 {
		t.Fatalf("an inert change restarted the workload: ReplicaSets %v", got)
	}
	if _, err := f.request("deployment-web"); err == nil {
		t.Fatal("an inert change created a KickRequest")
	}
	after := f.waitObservation("db")
	if after.ResourceVersion != rec.ResourceVersion {
		t.Fatalf("an inert change rewrote the observation record (%s → %s)", rec.ResourceVersion, after.ResourceVersion)
	}
}

func TestAdoptionRestartsNothing(t *testing.T) {
	env := cluster.Get(t)
	f := &fx{t: t, env: env, ns: env.Namespace(t), ctx: t.Context()}
	f.policy("all", selectAll)
	for _, name := range []string{"a", "b", "c"} {
		f.secret(name, map[string]string{"k": "v"}, nil)
		f.deployment(name, 1, podSpec(name))
	}
	for _, name := range []string{"a", "b", "c"} {
		f.waitAvailable(name)
	}
	f.mgr = env.StartManager(t, managerNamespace)
	for _, name := range []string{"a", "b", "c"} {
		f.waitObservation(name)
	}
	f.barrier()
	if reqs := f.requests(); len(reqs) != 1 { // the barrier's own request
		t.Fatalf("adoption created KickRequests: %d", len(reqs))
	}
	for _, name := range []string{"a", "b", "c"} {
		if got := f.replicaSets(name); len(got) != 1 {
			t.Fatalf("adoption restarted %s: %v", name, got)
		}
	}
}

func TestChangeWhileManagerDownRestartsOnce(t *testing.T) {
	f := setup(t)
	f.policy("all", selectAll)
	f.secret("db", map[string]string{"password": "alpha"}, nil)
	f.secret("cfg", map[string]string{"mode": "a"}, nil)
	f.deployment("web", 1, podSpec("db"))
	f.deployment("api", 1, podSpec("cfg"))
	f.waitAvailable("web")
	f.waitAvailable("api")
	f.waitObservation("db")
	f.waitObservation("cfg")

	f.mgr.Stop()
	f.setSecret("db", map[string]string{"password": "bravo"}) // content change while down
	f.labelSecret("cfg", "touched", "yes")                    // metadata change while down
	f.mgr = f.env.StartManager(t, managerNamespace)

	f.waitPhase("deployment-web", kickv1alpha1.PhaseSucceeded, 90*time.Second)
	f.waitReplicaSets("web", 2)
	f.barrier()
	if got := f.replicaSets("web"); len(got) != 2 {
		t.Fatalf("want exactly one restart of web, ReplicaSets %v", got)
	}
	if got := f.replicaSets("api"); len(got) != 1 {
		t.Fatalf("a metadata change made while the manager was down restarted api: %v", got)
	}
}

func TestBackToBackChangesAreNotLost(t *testing.T) {
	f := setup(t)
	f.policy("all", selectAll+"\nrestart: {minInterval: 0s}")
	f.webWithSecret()

	f.setSecret("db", map[string]string{"password": "bravo"})
	f.waitPhase("deployment-web", kickv1alpha1.PhaseSucceeded, 90*time.Second)
	first := f.restartStamp("web")
	// Change again at once: usually within the same second as the rollout
	// that just finished, which a whole-second comparison would miss.
	f.setSecret("db", map[string]string{"password": "charlie"})
	cluster.Eventually(t, 90*time.Second, "a second restart", func() (bool, error) {
		kr, err := f.request("deployment-web")
		if err != nil {
			return false, err
		}
		return kr.Status.RestartCount == 2 && kr.Status.Phase == kickv1alpha1.PhaseSucceeded, nil
	})
	if f.restartStamp("web") == first {
		t.Fatal("the second change did not produce a new restart stamp")
	}
	f.waitReplicaSets("web", 3)
}

// TestSuspendHoldsAndChangesCoalesce changes three Secrets of one
// workload while its policy is suspended: the request waits with reason
// Suspended, and resuming the policy restarts the workload exactly once.
func TestSuspendHoldsAndChangesCoalesce(t *testing.T) {
	f := setup(t)
	f.policy("all", selectAll+"\nsuspend: true")
	f.secret("a", map[string]string{"k": "1"}, nil)
	f.secret("b", map[string]string{"k": "1"}, nil)
	f.secret("c", map[string]string{"k": "1"}, nil)
	f.deployment("web", 1, podSpec("a", "b", "c"))
	f.waitAvailable("web")
	for _, s := range []string{"a", "b", "c"} {
		f.waitObservation(s)
	}
	for _, s := range []string{"a", "b", "c"} {
		f.setSecret(s, map[string]string{"k": "2"})
	}
	kr := f.waitPhase("deployment-web", kickv1alpha1.PhaseWaitingForGate, 60*time.Second)
	if kr.Status.Gate == nil || kr.Status.Gate.Reason != kickv1alpha1.GateSuspended {
		t.Fatalf("gate = %+v, want reason Suspended", kr.Status.Gate)
	}
	cluster.Eventually(t, 30*time.Second, "every change to be folded into the request", func() (bool, error) {
		rec := f.waitObservation("c")
		kr, err := f.request("deployment-web")
		if err != nil || kr.Status.LatestObservedDependencyChange == nil {
			return false, err
		}
		return !kr.Status.LatestObservedDependencyChange.Time.Before(rec.Spec.LastRelevantChangeTime.Time.Truncate(time.Microsecond)), nil
	})
	if got := f.replicaSets("web"); len(got) != 1 {
		t.Fatalf("a suspended policy restarted the workload: %v", got)
	}
	f.patchPolicy("all", `{"spec":{"suspend":false}}`)
	kr = f.waitPhase("deployment-web", kickv1alpha1.PhaseSucceeded, 60*time.Second)
	f.barrier()
	if got := f.replicaSets("web"); len(got) != 2 || kr.Status.RestartCount != 1 {
		t.Fatalf("three changes must restart once: ReplicaSets %v, restartCount %d", got, kr.Status.RestartCount)
	}
	if n := len(f.requests()); n != 2 { // web and the barrier
		t.Fatalf("want one request per target, got %d requests", n)
	}
}

func TestMinIntervalHoldsTheSecondRestart(t *testing.T) {
	f := setup(t)
	f.policy("all", selectAll+"\nrestart: {minInterval: 8s}")
	f.webWithSecret()

	f.setSecret("db", map[string]string{"password": "bravo"})
	f.waitPhase("deployment-web", kickv1alpha1.PhaseSucceeded, 60*time.Second)
	first, _ := freshness.ParseStamp(f.restartStamp("web"))
	f.setSecret("db", map[string]string{"password": "charlie"})
	kr := f.waitPhase("deployment-web", kickv1alpha1.PhaseWaitingForGate, 30*time.Second)
	if kr.Status.Gate.Reason != kickv1alpha1.GateMinIntervalNotElapsed || kr.Status.Gate.RequeueAt == nil {
		t.Fatalf("gate = %+v, want MinIntervalNotElapsed with requeueAt", kr.Status.Gate)
	}
	cluster.Eventually(t, 60*time.Second, "the held restart", func() (bool, error) {
		kr, err := f.request("deployment-web")
		return err == nil && kr.Status.RestartCount == 2 && kr.Status.Phase == kickv1alpha1.PhaseSucceeded, err
	})
	second, _ := freshness.ParseStamp(f.restartStamp("web"))
	if second.Sub(first) < 8*time.Second {
		t.Fatalf("second restart %s came %s after the first, before minInterval 8s", second, second.Sub(first))
	}
}

// TestDenyWindowWaitsUntilItsEnd puts the cluster inside a Deny window that
// ends a few seconds from now: the restart waits with OutsideSchedule and
// runs at the boundary, without any further change.
func TestDenyWindowWaitsUntilItsEnd(t *testing.T) {
	f := setup(t)
	now := time.Now().UTC()
	start := now.Truncate(time.Minute)
	end := now.Add(6 * time.Second)
	f.policy("all", selectAll+fmt.Sprintf("\nschedule: {windows: [{type: Deny, cron: \"%d %d * * *\", duration: %s}]}",
		start.Minute(), start.Hour(), end.Sub(start).Round(time.Second)))
	f.webWithSecret()
	f.setSecret("db", map[string]string{"password": "bravo"})
	kr := f.waitPhase("deployment-web", kickv1alpha1.PhaseWaitingForGate, 30*time.Second)
	if kr.Status.Gate.Reason != kickv1alpha1.GateOutsideSchedule || kr.Status.Gate.RequeueAt == nil {
		t.Fatalf("gate = %+v, want OutsideSchedule with requeueAt at the window end", kr.Status.Gate)
	}
	f.waitPhase("deployment-web", kickv1alpha1.PhaseSucceeded, 60*time.Second)
	stamp, _ := freshness.ParseStamp(f.restartStamp("web"))
	if stamp.Before(end.Truncate(time.Second)) {
		t.Fatalf("restarted at %s, inside the Deny window that ended at %s", stamp, end)
	}
}

func TestDryRunRestartsNothing(t *testing.T) {
	f := setup(t)
	f.policy("all", selectAll+"\ndryRun: true")
	f.webWithSecret()
	f.setSecret("db", map[string]string{"password": "bravo"})
	kr := f.waitPhase("deployment-web", kickv1alpha1.PhaseDryRun, 60*time.Second)
	if c := meta.FindStatusCondition(kr.Status.Conditions, kickv1alpha1.ConditionStale); c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("a dry run must record the decision it took: conditions %+v", kr.Status.Conditions)
	}
	if got := f.replicaSets("web"); len(got) != 1 || f.restartStamp("web") != "" {
		t.Fatalf("dry run patched the workload: ReplicaSets %v, stamp %q", got, f.restartStamp("web"))
	}
}

func TestDependencySelectorScopesTriggers(t *testing.T) {
	f := setup(t)
	f.policy("all", `discovery: {workloadSelector: {}, dependencySelector: {matchLabels: {kick: "on"}}}`)
	f.secret("watched", map[string]string{"k": "1"}, map[string]string{"kick": "on"})
	f.secret("ignored", map[string]string{"k": "1"}, nil)
	f.secret("canary", map[string]string{"k": "1"}, map[string]string{"kick": "on"})
	f.deployment("web", 1, podSpec("watched", "ignored"))
	f.deployment("canary", 1, podSpec("canary"))
	f.waitAvailable("web")
	f.waitAvailable("canary")
	f.waitObservation("watched")
	f.waitObservation("canary")

	f.setSecret("ignored", map[string]string{"k": "2"})
	f.setSecret("canary", map[string]string{"k": "2"})
	f.waitPhase("deployment-canary", kickv1alpha1.PhaseSucceeded, 60*time.Second)
	if got := f.replicaSets("web"); len(got) != 1 {
		t.Fatalf("an out-of-scope Secret restarted web: %v", got)
	}
	f.setSecret("watched", map[string]string{"k": "2"})
	f.waitPhase("deployment-web", kickv1alpha1.PhaseSucceeded, 60*time.Second)
	f.waitReplicaSets("web", 2)
}

func TestStatefulSetAndDaemonSetRestart(t *testing.T) {
	f := setup(t)
	f.policy("all", selectAll)
	f.secret("db", map[string]string{"password": "alpha"}, nil)
	labels := map[string]string{"app": "store"}
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "store", Labels: labels},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](1), ServiceName: "store",
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: podSpec("db")},
		},
	}
	f.create(sts)
	dsLabels := map[string]string{"app": "agent"}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Labels: dsLabels},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: dsLabels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: dsLabels}, Spec: podSpec("db")},
		},
	}
	f.create(ds)
	cluster.Eventually(t, 60*time.Second, "the StatefulSet and DaemonSet to be ready", func() (bool, error) {
		if err := f.env.Client.Get(f.ctx, client.ObjectKeyFromObject(sts), sts); err != nil {
			return false, err
		}
		if err := f.env.Client.Get(f.ctx, client.ObjectKeyFromObject(ds), ds); err != nil {
			return false, err
		}
		return sts.Status.ReadyReplicas == 1 && ds.Status.NumberAvailable >= 1 && ds.Status.NumberAvailable == ds.Status.DesiredNumberScheduled, nil
	})
	f.waitObservation("db")
	f.setSecret("db", map[string]string{"password": "bravo"})
	for _, name := range []string{"statefulset-store", "daemonset-agent"} {
		kr := f.waitPhase(name, kickv1alpha1.PhaseSucceeded, 90*time.Second)
		if kr.Status.RestartCount != 1 {
			t.Fatalf("%s: restartCount %d, want 1", name, kr.Status.RestartCount)
		}
	}
	for _, obj := range []client.Object{sts, ds} {
		if err := f.env.Client.Get(f.ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			t.Fatal(err)
		}
	}
	if sts.Spec.Template.Annotations[freshness.RestartedAtAnnotation] == "" || ds.Spec.Template.Annotations[freshness.RestartedAtAnnotation] == "" {
		t.Fatal("the StatefulSet or DaemonSet template carries no restart stamp")
	}
}

func TestPausedAndScaledToZeroDeployments(t *testing.T) {
	f := setup(t)
	f.policy("all", selectAll)
	f.secret("db", map[string]string{"password": "alpha"}, nil)
	f.deployment("zero", 0, podSpec("db"))
	f.deployment("paused", 1, podSpec("db"))
	f.waitAvailable("zero")
	f.waitAvailable("paused")
	f.waitObservation("db")
	d := &appsv1.Deployment{}
	d.Namespace, d.Name = f.ns, "paused"
	if err := f.env.Client.Patch(f.ctx, d, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"paused":true}}`))); err != nil {
		t.Fatal(err)
	}
	f.setSecret("db", map[string]string{"password": "bravo"})
	// Scaled to zero: nothing runs, but the template is stale and is stamped,
	// so pods started later read the new content.
	f.waitPhase("deployment-zero", kickv1alpha1.PhaseSucceeded, 60*time.Second)
	kr := f.waitPhase("deployment-paused", kickv1alpha1.PhaseWaitingForRollout, 60*time.Second)
	if c := meta.FindStatusCondition(kr.Status.Conditions, kickv1alpha1.ConditionRolloutComplete); c == nil || c.Reason != freshness.Paused {
		t.Fatalf("a paused Deployment must wait with reason Paused: %+v", kr.Status.Conditions)
	}
	if err := f.env.Client.Patch(f.ctx, d, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"paused":false}}`))); err != nil {
		t.Fatal(err)
	}
	f.waitPhase("deployment-paused", kickv1alpha1.PhaseSucceeded, 60*time.Second)
	f.waitReplicaSets("paused", 2)
}

// TestSecretsStaySecret: no Secret value or key name reaches the manager's
// log, events, request or observation status, or metrics.
func TestSecretsStaySecret(t *testing.T) {
	f := setup(t)
	const key, value, newValue = "KICK_SENTINEL_KEY_7f3a", "sentinel-value-9c2e41", "sentinel-value-b81d07"
	f.policy("all", selectAll)
	f.secret("db", map[string]string{key: value}, nil)
	f.deployment("web", 1, podSpec("db"))
	f.waitAvailable("web")
	f.waitObservation("db")
	f.setSecret("db", map[string]string{key: newValue})
	kr := f.waitPhase("deployment-web", kickv1alpha1.PhaseSucceeded, 60*time.Second)
	rec := f.waitObservation("db")
	var events corev1.EventList
	if err := f.env.Client.List(f.ctx, &events, client.InNamespace(f.ns)); err != nil {
		t.Fatal(err)
	}
	metrics, err := f.mgr.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	places := map[string]string{
		"manager log":        f.mgr.Log(),
		"events":             fmt.Sprintf("%+v", events.Items),
		"request":            fmt.Sprintf("%+v", kr),
		"observation record": fmt.Sprintf("%+v", rec),
		"metrics":            metrics,
	}
	for where, text := range places {
		for _, secret := range []string{key, value, newValue} {
			if strings.Contains(text, secret) {
				t.Errorf("%s contains Secret material %q", where, secret)
			}
		}
	}
	for _, want := range []string{`kick_restarts_total{provider="none",result="started"}`, `kick_requests_total{provider="none",result="succeeded"}`, "kick_change_to_restart_seconds_count"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics do not contain %s", want)
		}
	}
}
