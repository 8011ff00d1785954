// Package pipeline proves the restart pipeline end to end on the local
// control plane, with the real kick-manager binary: a relevant change to a
// consumed Secret restarts its workload exactly once, inert changes and
// adoption restart nothing, and every gate holds a restart back until it
// allows it.
package pipeline

import (
	"testing"
	"time"

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
	f.secret("db", map[string]string{"password": "alpha"}, nil)
	f.deployment("web", 1, podSpec("db"))
	f.waitAvailable("web")
	f.waitObservation("db")

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
