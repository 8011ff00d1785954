// Package pipeline proves the restart pipeline end to end on the local
// control plane, with the real kick-manager binary: a relevant change to a
// consumed Secret restarts its workload exactly once, inert changes and
// adoption restart nothing, and every gate holds a restart back until it
// allows it.
package pipeline

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/integration/fixture"
	"github.com/kick-operator/kick/restart/freshness"
)

const selectAll = `discovery: {workloadSelector: {}}`

func TestDataChangeRestartsExactlyOnce(t *testing.T) {
	f := fixture.Setup(t)
	f.Policy("all", selectAll)
	f.Secret("db", map[string]string{"password": "alpha"}, nil)
	f.Deployment("web", 2, fixture.PodSpec("db"))
	f.WaitAvailable("web")
	rec := f.WaitObservation("db")
	if rec.Spec.Class != kickv1alpha1.ObservationBaseline {
		t.Fatalf("first observation class = %s, want Baseline", rec.Spec.Class)
	}
	if len(f.Requests()) != 0 {
		t.Fatalf("adopting a fresh workload created a KickRequest: %+v", f.Requests())
	}

	// Watch the request from before the change, to count its writes.
	wc, err := client.NewWithWatch(f.Env.Config, client.Options{Scheme: f.Env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	w, err := wc.Watch(f.Ctx, &kickv1alpha1.KickRequestList{}, client.InNamespace(f.NS))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	before := time.Now()
	f.SetSecret("db", map[string]string{"password": "bravo"})
	kr := f.WaitPhase("deployment-web", kickv1alpha1.PhaseSucceeded, 90*time.Second)
	f.WaitReplicaSets("web", 2)
	// An ordinary two-replica rollout costs the request two status writes:
	// the restart and the completion, nothing for each replica in between.
	writes := map[watch.EventType]int{}
	for done := false; !done; {
		select {
		case ev := <-w.ResultChan():
			writes[ev.Type]++
			if o, ok := ev.Object.(*kickv1alpha1.KickRequest); ok && o.ResourceVersion == kr.ResourceVersion {
				done = true
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("the watch never showed the Succeeded request; saw %v", writes)
		}
	}
	if writes[watch.Added] != 1 || writes[watch.Modified] > 2 {
		t.Errorf("request writes up to Succeeded: %v, want 1 create and at most 2 status updates", writes)
	}
	stamp, ok := freshness.ParseStamp(f.RestartStamp("web"))
	if !ok || stamp.Before(before) {
		t.Fatalf("restartedAt %q is not a sub-second stamp after the change", f.RestartStamp("web"))
	}
	if kr.Status.RestartCount != 1 {
		t.Fatalf("restartCount = %d, want 1", kr.Status.RestartCount)
	}
	if kr.Status.LatestObservedDependencyChange == nil || kr.Status.LatestObservedDependencyChange.Time.Before(before) {
		t.Fatalf("latestObservedDependencyChange %v is older than the change", kr.Status.LatestObservedDependencyChange)
	}
	// A settled request and an unchanged Secret: nothing more happens.
	f.Barrier()
	if got := f.ReplicaSets("web"); len(got) != 2 {
		t.Fatalf("want exactly one new ReplicaSet, got %v", got)
	}
}

func TestInertChangesRestartNothing(t *testing.T) {
	f := fixture.Setup(t)
	f.Policy("all", selectAll)
	f.Secret("db", map[string]string{"password": "alpha"}, nil)
	f.Deployment("web", 1, fixture.PodSpec("db"))
	f.WaitAvailable("web")
	rec := f.WaitObservation("db")

	f.LabelSecret("db", "team", "payments")                   // metadata only
	f.SetSecret("db", map[string]string{"password": "alpha"}) // identical rewrite
	f.Barrier()

	if got := f.ReplicaSets("web"); len(got) != 1 {
		t.Fatalf("an inert change restarted the workload: ReplicaSets %v", got)
	}
	if _, err := f.Request("deployment-web"); err == nil {
		t.Fatal("an inert change created a KickRequest")
	}
	after := f.WaitObservation("db")
	if after.ResourceVersion != rec.ResourceVersion {
		t.Fatalf("an inert change rewrote the observation record (%s → %s)", rec.ResourceVersion, after.ResourceVersion)
	}
}

func TestAdoptionRestartsNothing(t *testing.T) {
	env := cluster.Get(t)
	f := &fixture.F{T: t, Env: env, NS: env.Namespace(t), Ctx: t.Context()}
	f.Policy("all", selectAll)
	for _, name := range []string{"a", "b", "c"} {
		f.Secret(name, map[string]string{"k": "v"}, nil)
		f.Deployment(name, 1, fixture.PodSpec(name))
	}
	for _, name := range []string{"a", "b", "c"} {
		f.WaitAvailable(name)
	}
	f.Mgr = env.StartManager(t, fixture.ManagerNamespace)
	for _, name := range []string{"a", "b", "c"} {
		f.WaitObservation(name)
	}
	f.Barrier()
	if reqs := f.Requests(); len(reqs) != 1 { // the barrier's own request
		t.Fatalf("adoption created KickRequests: %d", len(reqs))
	}
	for _, name := range []string{"a", "b", "c"} {
		if got := f.ReplicaSets(name); len(got) != 1 {
			t.Fatalf("adoption restarted %s: %v", name, got)
		}
	}
}

func TestChangeWhileManagerDownRestartsOnce(t *testing.T) {
	f := fixture.Setup(t)
	f.Policy("all", selectAll)
	f.Secret("db", map[string]string{"password": "alpha"}, nil)
	f.Secret("cfg", map[string]string{"mode": "a"}, nil)
	f.Deployment("web", 1, fixture.PodSpec("db"))
	f.Deployment("api", 1, fixture.PodSpec("cfg"))
	f.WaitAvailable("web")
	f.WaitAvailable("api")
	f.WaitObservation("db")
	f.WaitObservation("cfg")

	f.Mgr.Stop()
	f.SetSecret("db", map[string]string{"password": "bravo"}) // content change while down
	f.LabelSecret("cfg", "touched", "yes")                    // metadata change while down
	f.Mgr = f.Env.StartManager(t, fixture.ManagerNamespace)

	f.WaitPhase("deployment-web", kickv1alpha1.PhaseSucceeded, 90*time.Second)
	f.WaitReplicaSets("web", 2)
	f.Barrier()
	if got := f.ReplicaSets("web"); len(got) != 2 {
		t.Fatalf("want exactly one restart of web, ReplicaSets %v", got)
	}
	if got := f.ReplicaSets("api"); len(got) != 1 {
		t.Fatalf("a metadata change made while the manager was down restarted api: %v", got)
	}
}

func TestBackToBackChangesAreNotLost(t *testing.T) {
	f := fixture.Setup(t)
	f.Policy("all", selectAll+"\nrestart: {minInterval: 0s}")
	f.WebWithSecret()

	f.SetSecret("db", map[string]string{"password": "bravo"})
	f.WaitPhase("deployment-web", kickv1alpha1.PhaseSucceeded, 90*time.Second)
	first := f.RestartStamp("web")
	// Change again at once: usually within the same second as the rollout
	// that just finished, which a whole-second comparison would miss.
	f.SetSecret("db", map[string]string{"password": "charlie"})
	cluster.Eventually(t, 90*time.Second, "a second restart", func() (bool, error) {
		kr, err := f.Request("deployment-web")
		if err != nil {
			return false, err
		}
		return kr.Status.RestartCount == 2 && kr.Status.Phase == kickv1alpha1.PhaseSucceeded, nil
	})
	if f.RestartStamp("web") == first {
		t.Fatal("the second change did not produce a new restart stamp")
	}
	f.WaitReplicaSets("web", 3)
}

// TestSuspendHoldsAndChangesCoalesce changes three Secrets of one
// workload while its policy is suspended: the request waits with reason
// Suspended, and resuming the policy restarts the workload exactly once.
func TestSuspendHoldsAndChangesCoalesce(t *testing.T) {
	f := fixture.Setup(t)
	f.Policy("all", selectAll+"\nsuspend: true")
	f.Secret("a", map[string]string{"k": "1"}, nil)
	f.Secret("b", map[string]string{"k": "1"}, nil)
	f.Secret("c", map[string]string{"k": "1"}, nil)
	f.Deployment("web", 1, fixture.PodSpec("a", "b", "c"))
	f.WaitAvailable("web")
	for _, s := range []string{"a", "b", "c"} {
		f.WaitObservation(s)
	}
	for _, s := range []string{"a", "b", "c"} {
		f.SetSecret(s, map[string]string{"k": "2"})
	}
	kr := f.WaitPhase("deployment-web", kickv1alpha1.PhaseWaitingForGate, 60*time.Second)
	if kr.Status.Gate == nil || kr.Status.Gate.Reason != kickv1alpha1.GateSuspended {
		t.Fatalf("gate = %+v, want reason Suspended", kr.Status.Gate)
	}
	cluster.Eventually(t, 30*time.Second, "every change to be folded into the request", func() (bool, error) {
		rec := f.WaitObservation("c")
		kr, err := f.Request("deployment-web")
		if err != nil || kr.Status.LatestObservedDependencyChange == nil {
			return false, err
		}
		return !kr.Status.LatestObservedDependencyChange.Time.Before(rec.Spec.LastRelevantChangeTime.Time.Truncate(time.Microsecond)), nil
	})
	if got := f.ReplicaSets("web"); len(got) != 1 {
		t.Fatalf("a suspended policy restarted the workload: %v", got)
	}
	f.PatchPolicy("all", `{"spec":{"suspend":false}}`)
	kr = f.WaitPhase("deployment-web", kickv1alpha1.PhaseSucceeded, 60*time.Second)
	f.Barrier()
	if got := f.ReplicaSets("web"); len(got) != 2 || kr.Status.RestartCount != 1 {
		t.Fatalf("three changes must restart once: ReplicaSets %v, restartCount %d", got, kr.Status.RestartCount)
	}
	if n := len(f.Requests()); n != 2 { // web and the barrier
		t.Fatalf("want one request per target, got %d requests", n)
	}
}

func TestMinIntervalHoldsTheSecondRestart(t *testing.T) {
	f := fixture.Setup(t)
	f.Policy("all", selectAll+"\nrestart: {minInterval: 8s}")
	f.WebWithSecret()

	f.SetSecret("db", map[string]string{"password": "bravo"})
	f.WaitPhase("deployment-web", kickv1alpha1.PhaseSucceeded, 60*time.Second)
	first, _ := freshness.ParseStamp(f.RestartStamp("web"))
	f.SetSecret("db", map[string]string{"password": "charlie"})
	kr := f.WaitPhase("deployment-web", kickv1alpha1.PhaseWaitingForGate, 30*time.Second)
	if kr.Status.Gate.Reason != kickv1alpha1.GateMinIntervalNotElapsed || kr.Status.Gate.RequeueAt == nil {
		t.Fatalf("gate = %+v, want MinIntervalNotElapsed with requeueAt", kr.Status.Gate)
	}
	cluster.Eventually(t, 60*time.Second, "the held restart", func() (bool, error) {
		kr, err := f.Request("deployment-web")
		return err == nil && kr.Status.RestartCount == 2 && kr.Status.Phase == kickv1alpha1.PhaseSucceeded, err
	})
	second, _ := freshness.ParseStamp(f.RestartStamp("web"))
	if second.Sub(first) < 8*time.Second {
		t.Fatalf("second restart %s came %s after the first, before minInterval 8s", second, second.Sub(first))
	}
}

// TestDenyWindowWaitsUntilItsEnd puts the cluster inside a Deny window that
// ends a few seconds from now: the restart waits with OutsideSchedule and
// runs at the boundary, without any further change.
func TestDenyWindowWaitsUntilItsEnd(t *testing.T) {
	f := fixture.Setup(t)
	now := time.Now().UTC()
	start := now.Truncate(time.Minute)
	end := now.Add(6 * time.Second)
	f.Policy("all", selectAll+fmt.Sprintf("\nschedule: {windows: [{type: Deny, cron: \"%d %d * * *\", duration: %s}]}",
		start.Minute(), start.Hour(), end.Sub(start).Round(time.Second)))
	f.WebWithSecret()
	f.SetSecret("db", map[string]string{"password": "bravo"})
	kr := f.WaitPhase("deployment-web", kickv1alpha1.PhaseWaitingForGate, 30*time.Second)
	if kr.Status.Gate.Reason != kickv1alpha1.GateOutsideSchedule || kr.Status.Gate.RequeueAt == nil {
		t.Fatalf("gate = %+v, want OutsideSchedule with requeueAt at the window end", kr.Status.Gate)
	}
	f.WaitPhase("deployment-web", kickv1alpha1.PhaseSucceeded, 60*time.Second)
	stamp, _ := freshness.ParseStamp(f.RestartStamp("web"))
	if stamp.Before(end.Truncate(time.Second)) {
		t.Fatalf("restarted at %s, inside the Deny window that ended at %s", stamp, end)
	}
}

func TestDryRunRestartsNothing(t *testing.T) {
	f := fixture.Setup(t)
	f.Policy("all", selectAll+"\ndryRun: true")
	f.WebWithSecret()
	f.SetSecret("db", map[string]string{"password": "bravo"})
	kr := f.WaitPhase("deployment-web", kickv1alpha1.PhaseDryRun, 60*time.Second)
	if c := meta.FindStatusCondition(kr.Status.Conditions, kickv1alpha1.ConditionStale); c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("a dry run must record the decision it took: conditions %+v", kr.Status.Conditions)
	}
	if got := f.ReplicaSets("web"); len(got) != 1 || f.RestartStamp("web") != "" {
		t.Fatalf("dry run patched the workload: ReplicaSets %v, stamp %q", got, f.RestartStamp("web"))
	}
}

func TestDependencySelectorScopesTriggers(t *testing.T) {
	f := fixture.Setup(t)
	f.Policy("all", `discovery: {workloadSelector: {}, dependencySelector: {matchLabels: {kick: "on"}}}`)
	f.Secret("watched", map[string]string{"k": "1"}, map[string]string{"kick": "on"})
	f.Secret("ignored", map[string]string{"k": "1"}, nil)
	f.Secret("canary", map[string]string{"k": "1"}, map[string]string{"kick": "on"})
	f.Deployment("web", 1, fixture.PodSpec("watched", "ignored"))
	f.Deployment("canary", 1, fixture.PodSpec("canary"))
	f.WaitAvailable("web")
	f.WaitAvailable("canary")
	f.WaitObservation("watched")
	f.WaitObservation("canary")

	f.SetSecret("ignored", map[string]string{"k": "2"})
	f.SetSecret("canary", map[string]string{"k": "2"})
	f.WaitPhase("deployment-canary", kickv1alpha1.PhaseSucceeded, 60*time.Second)
	if got := f.ReplicaSets("web"); len(got) != 1 {
		t.Fatalf("an out-of-scope Secret restarted web: %v", got)
	}
	f.SetSecret("watched", map[string]string{"k": "2"})
	f.WaitPhase("deployment-web", kickv1alpha1.PhaseSucceeded, 60*time.Second)
	f.WaitReplicaSets("web", 2)
}

func TestStatefulSetAndDaemonSetRestart(t *testing.T) {
	f := fixture.Setup(t)
	f.Policy("all", selectAll)
	f.Secret("db", map[string]string{"password": "alpha"}, nil)
	labels := map[string]string{"app": "store"}
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "store", Labels: labels},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](1), ServiceName: "store",
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: fixture.PodSpec("db")},
		},
	}
	f.Create(sts)
	dsLabels := map[string]string{"app": "agent"}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Labels: dsLabels},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: dsLabels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: dsLabels}, Spec: fixture.PodSpec("db")},
		},
	}
	f.Create(ds)
	cluster.Eventually(t, 60*time.Second, "the StatefulSet and DaemonSet to be ready", func() (bool, error) {
		if err := f.Env.Client.Get(f.Ctx, client.ObjectKeyFromObject(sts), sts); err != nil {
			return false, err
		}
		if err := f.Env.Client.Get(f.Ctx, client.ObjectKeyFromObject(ds), ds); err != nil {
			return false, err
		}
		return sts.Status.ReadyReplicas == 1 && ds.Status.NumberAvailable >= 1 && ds.Status.NumberAvailable == ds.Status.DesiredNumberScheduled, nil
	})
	f.WaitObservation("db")
	f.SetSecret("db", map[string]string{"password": "bravo"})
	for _, name := range []string{"statefulset-store", "daemonset-agent"} {
		kr := f.WaitPhase(name, kickv1alpha1.PhaseSucceeded, 90*time.Second)
		if kr.Status.RestartCount != 1 {
			t.Fatalf("%s: restartCount %d, want 1", name, kr.Status.RestartCount)
		}
	}
	for _, obj := range []client.Object{sts, ds} {
		if err := f.Env.Client.Get(f.Ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			t.Fatal(err)
		}
	}
	if sts.Spec.Template.Annotations[freshness.RestartedAtAnnotation] == "" || ds.Spec.Template.Annotations[freshness.RestartedAtAnnotation] == "" {
		t.Fatal("the StatefulSet or DaemonSet template carries no restart stamp")
	}
}

func TestPausedAndScaledToZeroDeployments(t *testing.T) {
	f := fixture.Setup(t)
	f.Policy("all", selectAll)
	f.Secret("db", map[string]string{"password": "alpha"}, nil)
	f.Deployment("zero", 0, fixture.PodSpec("db"))
	f.Deployment("paused", 1, fixture.PodSpec("db"))
	f.WaitAvailable("zero")
	f.WaitAvailable("paused")
	f.WaitObservation("db")
	d := &appsv1.Deployment{}
	d.Namespace, d.Name = f.NS, "paused"
	if err := f.Env.Client.Patch(f.Ctx, d, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"paused":true}}`))); err != nil {
		t.Fatal(err)
	}
	f.SetSecret("db", map[string]string{"password": "bravo"})
	// Scaled to zero: nothing runs, but the template is stale and is stamped,
	// so pods started later read the new content.
	f.WaitPhase("deployment-zero", kickv1alpha1.PhaseSucceeded, 60*time.Second)
	kr := f.WaitPhase("deployment-paused", kickv1alpha1.PhaseWaitingForRollout, 60*time.Second)
	if c := meta.FindStatusCondition(kr.Status.Conditions, kickv1alpha1.ConditionRolloutComplete); c == nil || c.Reason != freshness.Paused {
		t.Fatalf("a paused Deployment must wait with reason Paused: %+v", kr.Status.Conditions)
	}
	if err := f.Env.Client.Patch(f.Ctx, d, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"paused":false}}`))); err != nil {
		t.Fatal(err)
	}
	f.WaitPhase("deployment-paused", kickv1alpha1.PhaseSucceeded, 60*time.Second)
	f.WaitReplicaSets("paused", 2)
}

// TestSecretsStaySecret: no Secret value or key name reaches the manager's
// log, events, request or observation status, metrics or timeline; nor
// does a record's per-key id or value print leave the record. A second
// change, of a key keyed does not read, puts a marked change (keysUnread)
// on keyed's timeline, which names no key either.
func TestSecretsStaySecret(t *testing.T) {
	// The highest verbosity: client-go logs response bodies from level 8 on.
	f := fixture.Setup(t, "--zap-log-level=10")
	const key, value, newValue = "KICK_SENTINEL_KEY_7f3a", "sentinel-value-9c2e41", "sentinel-value-b81d07"
	const other, otherValue, otherNew = "KICK_SENTINEL_OTHER_2d9e", "sentinel-value-55e0c3", "sentinel-value-e3a9f4"
	f.Policy("all", selectAll)
	f.Secret("db", map[string]string{key: value, other: otherValue}, nil)
	f.Deployment("web", 1, fixture.PodSpec("db"))
	// keyed reads the key by name: its decision is made key by key.
	f.Deployment("keyed", 1, corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10",
		Env: []corev1.EnvVar{{Name: "PASS", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: key}}}}}}})
	f.WaitAvailable("web")
	f.WaitAvailable("keyed")
	f.WaitObservation("db")
	f.SetSecret("db", map[string]string{key: newValue, other: otherValue})
	kr := f.WaitPhase("deployment-web", kickv1alpha1.PhaseSucceeded, 60*time.Second)
	keyed := f.WaitPhase("deployment-keyed", kickv1alpha1.PhaseSucceeded, 60*time.Second)
	f.WaitReplicaSets("web", 2)
	f.SetSecret("db", map[string]string{key: newValue, other: otherNew})
	f.WaitReplicaSets("web", 3)
	rec := f.WaitObservation("db")
	if rec.Spec.Keys == nil || len(rec.Spec.Keys.Entries) != 2 {
		t.Fatalf("record keys %+v, want two entries", rec.Spec.Keys)
	}
	var events corev1.EventList
	if err := f.Env.Client.List(f.Ctx, &events, client.InNamespace(f.NS)); err != nil {
		t.Fatal(err)
	}
	metrics, err := f.Mgr.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	var overview string
	cluster.Eventually(t, 30*time.Second, "keyed's marked change on the timeline", func() (bool, error) {
		resp, err := http.Get("http://" + f.Mgr.Timeline() + "/timeline/overview")
		if err != nil {
			return false, err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		overview = string(body)
		return err == nil && strings.Contains(overview, `"keysUnread":true`), fmt.Errorf("overview %d: %.2000s", resp.StatusCode, overview)
	})
	places := map[string]string{
		"manager log":        f.Mgr.Log(),
		"events":             fmt.Sprintf("%+v", events.Items),
		"request":            fmt.Sprintf("%+v %+v", kr, keyed),
		"observation record": fmt.Sprintf("%+v", rec),
		"metrics":            metrics,
		"timeline":           overview,
	}
	prints := []string{rec.Spec.RelevantFingerprint}
	for _, e := range rec.Spec.Keys.Entries {
		prints = append(prints, e.ID, e.Fingerprint)
	}
	for where, text := range places {
		for _, secret := range []string{key, value, newValue, other, otherValue, otherNew} {
			if strings.Contains(text, secret) {
				t.Errorf("%s contains Secret material %q", where, secret)
			}
		}
		for _, print := range prints {
			if where != "observation record" && strings.Contains(text, print) {
				t.Errorf("%s contains the record's key id or print %q", where, print)
			}
		}
	}
	for _, want := range []string{`kick_restarts_total{provider="none",result="started"}`, `kick_requests_total{provider="none",result="succeeded"}`, "kick_change_to_restart_seconds_count"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics do not contain %s", want)
		}
	}
}
