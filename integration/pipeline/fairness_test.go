package pipeline

import (
	"fmt"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/integration/fixture"
)

// TestFloodOfRequestsDoesNotDelayAnotherNamespace plays the tenant of issue 32 who creates
// 1,000 KickRequests (each naming a Deployment that does not exist, so each is a look and a
// status write) just before a bystander namespace's consumed Secret changes. The request
// controller takes turns between namespaces, so the bystander's restart starts while most of
// the tenant's backlog still waits; with one FIFO it started after the whole backlog.
//
// Order, not speed, is asserted, from the requests' status: how many of the tenant's requests
// had finished (completionTime) when the bystander's restart started (currentRollout.startedAt),
// both stamped by the manager. (A watch of the flood is closed by the API server as too slow a
// reader on a busy machine.) The manager's API budget (--kube-api-qps) keeps the backlog from
// draining while the test creates it, as a busy cluster would.
func TestFloodOfRequestsDoesNotDelayAnotherNamespace(t *testing.T) {
	const flood = 1000
	attacker := fixture.Setup(t, "--kube-api-qps=20", "--kube-api-burst=20")
	bystander := &fixture.F{T: t, Env: attacker.Env, NS: attacker.Env.Namespace(t), Ctx: attacker.Ctx, Mgr: attacker.Mgr}
	// A capped policy: the restart goes through the bystander's request
	// (the uncapped path restarts from the driver, past the request queue).
	bystander.Policy("capped", selectAll+"\nrestart: {minInterval: 0s, maxConcurrent: 10}")
	bystander.WebWithSecret()

	// The flood, created as fast as the test can.
	var wg sync.WaitGroup
	errs := make(chan error, flood)
	for g := range 16 {
		wg.Go(func() {
			for i := g; i < flood; i += 16 {
				kr := &kickv1alpha1.KickRequest{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("flood-%04d", i), Namespace: attacker.NS},
					Spec:       kickv1alpha1.KickRequestSpec{TargetRef: kickv1alpha1.TargetRef{Kind: kickv1alpha1.TargetDeployment, Name: fmt.Sprintf("ghost-%04d", i)}},
				}
				if err := attacker.Env.Client.Create(attacker.Ctx, kr); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("create the flood: %v", err)
	}
	before := len(finished(attacker.Requests()))
	if before > flood/2 {
		t.Fatalf("the manager finished %d of the %d requests while they were created: no backlog to test against", before, flood)
	}

	bystander.SetSecret("db", map[string]string{"password": "bravo"})
	var started time.Time
	cluster.Eventually(t, 10*time.Minute, "the bystander's restart to start", func() (bool, error) {
		for _, kr := range bystander.Requests() {
			if r := kr.Status.CurrentRollout; r != nil && r.StartedAt != nil {
				started = r.StartedAt.Time
				return true, nil
			}
		}
		return false, fmt.Errorf("%d of the tenant's %d requests finished", len(finished(attacker.Requests())), flood)
	})
	bystander.WaitReplicaSets("web", 2)
	// Every request of the flood is looked at in the end.
	var done []time.Time
	cluster.Eventually(t, 15*time.Minute, "every request of the flood to finish", func() (bool, error) {
		done = finished(attacker.Requests())
		return len(done) == flood, fmt.Errorf("%d of %d finished", len(done), flood)
	})
	// completionTime has whole seconds: a request finished in the second
	// the bystander's restart started counts as finished before it.
	ahead := 0
	for _, at := range done {
		if !at.After(started) {
			ahead++
		}
	}
	t.Logf("the tenant's requests finished: %d when the Secret changed, %d when the bystander's restart started", before, ahead)
	if backlog := flood - before; ahead-before >= backlog/2 {
		t.Fatalf("the bystander's restart waited for the tenant's backlog: %d of the %d requests waiting at the change finished before it started", ahead-before, backlog)
	}
}

// finished returns when each finished request of requests finished.
func finished(requests []kickv1alpha1.KickRequest) []time.Time {
	var out []time.Time
	for _, kr := range requests {
		if kr.Status.Phase.IsTerminal() && kr.Status.CompletionTime != nil {
			out = append(out, kr.Status.CompletionTime.Time)
		}
	}
	return out
}
