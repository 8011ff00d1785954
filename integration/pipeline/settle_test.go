package pipeline

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/integration/fixture"
)

// rewriteThreeTimes changes Secret db three times in a burst, as a tool
// that rewrites a credential in steps would. Each change follows the one
// before as soon as KICK has observed that one (its observation record
// names the Secret's resourceVersion), not after a pause: a pause long
// enough to be sure of the observation on a busy machine could outlast the
// settle time, and one short enough could end before the observation.
func rewriteThreeTimes(f *fixture.F) {
	f.T.Helper()
	for _, v := range []string{"bravo", "charlie", "delta"} {
		f.SetSecret("db", map[string]string{"password": v})
		var s corev1.Secret
		if err := f.Env.Client.Get(f.Ctx, client.ObjectKey{Namespace: f.NS, Name: "db"}, &s); err != nil {
			f.T.Fatal(err)
		}
		cluster.Eventually(f.T, 30*time.Second, "the observation of Secret db at resourceVersion "+s.ResourceVersion, func() (bool, error) {
			rec := f.WaitObservation("db")
			return rec.Spec.LastRelevantResourceVersion == s.ResourceVersion,
				fmt.Errorf("observed at %s", rec.Spec.LastRelevantResourceVersion)
		})
	}
}

// waitSettling waits until the request waits with reason Settling for the
// last of the changes.
func waitSettling(f *fixture.F) *kickv1alpha1.KickRequest {
	f.T.Helper()
	var kr *kickv1alpha1.KickRequest
	cluster.Eventually(f.T, 30*time.Second, "the request to wait for the sources to settle", func() (bool, error) {
		var err error
		if kr, err = f.Request("deployment-web"); err != nil {
			return false, err
		}
		g := kr.Status.Gate
		return g != nil && g.Reason == kickv1alpha1.GateSettling && kr.Status.Phase == kickv1alpha1.PhaseWaitingForGate,
			fmt.Errorf("phase %s, gate %+v", kr.Status.Phase, g)
	})
	return kr
}

func assertOneSettledRestart(t *testing.T, f *fixture.F) {
	t.Helper()
	kr := f.WaitPhase("deployment-web", kickv1alpha1.PhaseSucceeded, 60*time.Second)
	f.Barrier()
	if got := f.ReplicaSets("web"); len(got) != 2 || kr.Status.RestartCount != 1 {
		t.Fatalf("three changes within the settle time must restart once: ReplicaSets %v, restartCount %d", got, kr.Status.RestartCount)
	}
	rec := f.WaitObservation("db")
	if kr.Status.LastRestartTime == nil || kr.Status.LastRestartTime.Time.Before(rec.Spec.LastRelevantChangeTime.Add(5*time.Second)) {
		t.Fatalf("restarted at %v, before the sources were quiet for 5 s after %v", kr.Status.LastRestartTime, rec.Spec.LastRelevantChangeTime)
	}
}

// TestSettleCoalescesABurstOfChanges: with restart.settle 5s, three
// changes one second apart give one restart, after the last change plus 5 s.
func TestSettleCoalescesABurstOfChanges(t *testing.T) {
	f := fixture.Setup(t)
	f.Policy("all", selectAll+"\nrestart: {minInterval: 0s, settle: 5s}")
	f.WebWithSecret()
	rewriteThreeTimes(f)
	waitSettling(f)
	assertOneSettledRestart(t, f)
}

// TestSettleSurvivesAManagerCrash: the wait is durable (the request and its
// requeue time), so a manager killed in the settle window restarts the
// workload once after it comes back.
func TestSettleSurvivesAManagerCrash(t *testing.T) {
	f := fixture.Setup(t)
	f.Policy("all", selectAll+"\nrestart: {minInterval: 0s, settle: 5s}")
	f.WebWithSecret()
	rewriteThreeTimes(f)
	kr := waitSettling(f)
	if kr.Status.Gate.RequeueAt == nil || !kr.Status.Gate.RequeueAt.After(time.Now()) {
		t.Fatalf("the settle wait must record when it ends, in the future: %+v", kr.Status.Gate)
	}
	f.Mgr.Kill()
	f.Mgr = f.Env.StartManager(t, fixture.ManagerNamespace)
	assertOneSettledRestart(t, f)
}
