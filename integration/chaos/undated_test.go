package chaos

import (
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/integration/fixture"
	"github.com/kick-operator/kick/restart/freshness"
)

const (
	identifying = `kick_driver_decisions_total{decision="identifying"}`
	undated     = `kick_driver_undated_rollouts`
)

// changeBeforeTheFirstReplicaSet applies web with its Secret while the
// controller-manager is stopped, changes the Secret before any ReplicaSet
// exists (a GitOps sync that changes both) and returns the Deployment and
// the recorded change time, once the driver has looked at web and found
// nothing that dates its rollout.
func changeBeforeTheFirstReplicaSet(t *testing.T, f *fixture.F) (*appsv1.Deployment, time.Time) {
	t.Helper()
	f.Policy("all", policy)
	stopKCM(t, f)
	f.Secret("db", map[string]string{"password": "alpha"}, nil)
	d := f.Deployment("web", 1, fixture.PodSpec("db"))
	f.WaitObservation("db")
	f.SetSecret("db", map[string]string{"password": "bravo"})

	var changed time.Time
	cluster.Eventually(t, 30*time.Second, "the change of db to be recorded", func() (bool, error) {
		rec := f.WaitObservation("db")
		if rec.Spec.Class != kickv1alpha1.ObservationRelevant || rec.Spec.LastRelevantChangeTime == nil {
			return false, fmt.Errorf("record class %q", rec.Spec.Class)
		}
		changed = rec.Spec.LastRelevantChangeTime.Time
		return true, nil
	})
	cluster.Eventually(t, 30*time.Second, "the driver to wait for web's rollout to be dated", func() (bool, error) {
		n, err := f.Metric(identifying)
		if err != nil {
			return false, err
		}
		return n >= 1, fmt.Errorf("%s = %v; requests %s", identifying, n, requestPhases(f))
	})
	return d, changed
}

// TestChangeBeforeTheFirstReplicaSetOpensNoRequest: while the controller
// has not created the ReplicaSet of a new Deployment, nothing says whether
// its pods will carry a change; the driver waits for the ReplicaSet rather
// than open a request that could only end KickNoLongerRequired. The
// ReplicaSet, created after the change, carries it: no request, no restart.
func TestChangeBeforeTheFirstReplicaSetOpensNoRequest(t *testing.T) {
	f := fixture.Setup(t)
	d, changed := changeBeforeTheFirstReplicaSet(t, f)
	if krs := f.Requests(); len(krs) != 0 {
		t.Fatalf("a request was opened before web's rollout could be dated: %s", requestPhases(f))
	}

	// Creation times are whole seconds: a ReplicaSet created in the
	// change's second may predate it. Create it in a later one.
	cluster.Eventually(t, 5*time.Second, "the clock to leave the change's second", func() (bool, error) {
		return time.Now().Truncate(time.Second).After(changed), fmt.Errorf("changed at %s", changed)
	})
	createReplicaSetOf(f, d, "first")
	cluster.Eventually(t, 30*time.Second, "the driver to date web's rollout", func() (bool, error) {
		n, err := f.Metric(undated)
		if err != nil {
			return false, err
		}
		return n == 0, fmt.Errorf("%s = %v", undated, n)
	})
	if krs := f.Requests(); len(krs) != 0 {
		t.Fatalf("a request was opened for a rollout that started after the change: %s", requestPhases(f))
	}
	if stamp := f.RestartStamp("web"); stamp != "" {
		t.Fatalf("web was restarted (stamp %s)", stamp)
	}
}

// TestRolloutNeverDatedGetsItsRequest: when the controller never creates
// the ReplicaSet (it stays stopped), the driver does not wait forever: after
// the grace it opens the request, which waits for the rollout and says why.
func TestRolloutNeverDatedGetsItsRequest(t *testing.T) {
	f := fixture.Setup(t)
	changeBeforeTheFirstReplicaSet(t, f)
	kr := f.WaitPhase("deployment-web", kickv1alpha1.PhaseWaitingForRollout, 60*time.Second)
	c := meta.FindStatusCondition(kr.Status.Conditions, kickv1alpha1.ConditionRolloutComplete)
	if c == nil || c.Status != "False" || (c.Reason != freshness.GenerationNotObserved && c.Reason != freshness.NoMatchingReplicaSet) {
		t.Fatalf("RolloutComplete condition %+v: want it to say the rollout is not identified yet", c)
	}
	if n, err := f.Metric(undated); err != nil || n != 0 {
		t.Fatalf("%s = %v (%v) once the request is open", undated, n, err)
	}
	if stamp := f.RestartStamp("web"); stamp != "" {
		t.Fatalf("web was restarted (stamp %s) before its rollout was dated", stamp)
	}
}

// requestPhases lists the test namespace's requests for a failure message.
func requestPhases(f *fixture.F) string {
	var out []string
	for _, kr := range f.Requests() {
		out = append(out, kr.Name+"="+string(kr.Status.Phase))
	}
	return fmt.Sprint(out)
}
