package chaos

import (
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/integration/fixture"
	"github.com/kick-operator/kick/restart/freshness"
)

const unrecorded = `kick_requests_unrecorded_restarts`

// TestBurstRecordsEachRestartOnce: ten Deployments share a Secret, and its
// change restarts them all at once while their rollouts cannot progress
// (the controller-manager is stopped). A lone rollout is recorded as
// Executing after 5 s; ten at once are a burst, whose requests keep their
// first status write until their rollouts end (or a minute passes), so the
// API server spends itself on the rollouts. Each request then goes from
// Pending to Succeeded in one status write, seen on a watch of the
// requests, and records no Event (its status write is the record).
func TestBurstRecordsEachRestartOnce(t *testing.T) {
	const n = 10
	f := sharingDeployments(t, n)
	writes := watchStatusWrites(f)

	stopKCM(t, f)
	f.SetSecret("db", map[string]string{"password": "bravo"})
	cluster.Eventually(t, 60*time.Second, "every request to follow its driver restart unrecorded", func() (bool, error) {
		v, err := f.Metric(unrecorded)
		if err != nil {
			return false, err
		}
		return v == n, fmt.Errorf("%s = %v; requests %s", unrecorded, v, requestPhases(f))
	})
	var last time.Time
	for i := range n {
		stamp, ok := freshness.ParseStamp(f.RestartStamp(name(i)))
		if !ok {
			t.Fatalf("%s carries no restart stamp", name(i))
		}
		if stamp.After(last) {
			last = stamp
		}
	}

	// Past the lone rollout's grace (and a margin for the requeue), nothing
	// is recorded yet.
	cluster.Eventually(t, 30*time.Second, "the lone rollout's grace to pass", func() (bool, error) {
		return time.Since(last) > 8*time.Second, fmt.Errorf("last restart at %s", last)
	})
	for _, kr := range f.Requests() {
		if kr.Status.Phase != "" && kr.Status.Phase != kickv1alpha1.PhasePending {
			t.Fatalf("request %s recorded %s during the burst; requests %s", kr.Name, kr.Status.Phase, requestPhases(f))
		}
	}

	// The rollouts end as the controller-manager would end them: the
	// ReplicaSet of the new template, then the Deployment's status.
	for i := range n {
		var d appsv1.Deployment
		if err := f.Env.Client.Get(f.Ctx, client.ObjectKey{Namespace: f.NS, Name: name(i)}, &d); err != nil {
			t.Fatal(err)
		}
		createReplicaSetOf(f, &d, "burst")
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}
		if err := f.Env.Client.Status().Update(f.Ctx, &d); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		f.WaitPhase("deployment-"+name(i), kickv1alpha1.PhaseSucceeded, 60*time.Second)
	}
	if v, err := f.Metric(unrecorded); err != nil || v != 0 {
		t.Fatalf("%s = %v (%v) after every request finished", unrecorded, v, err)
	}

	// One status write per request, Succeeded; no Event said it started.
	cluster.Eventually(t, 30*time.Second, "one status write for every request", func() (bool, error) {
		for i := range n {
			kr := "deployment-" + name(i)
			if got := writes.of(kr); len(got) != 1 || got[0] != kickv1alpha1.PhaseSucceeded {
				return false, fmt.Errorf("request %s has status writes %v, want [Succeeded]", kr, got)
			}
		}
		return true, nil
	})
	reasons, err := requestEvents(f)
	if err != nil {
		t.Fatal(err)
	}
	for kr, got := range reasons {
		if slices.Contains(got, "KickStarted") {
			t.Errorf("request %s has Events %v: it recorded its restart as started", kr, got)
		}
	}
}

// statusWrites records, from a watch of the test namespace's requests
// that starts now, the phase of each write that changed a request's status.
type statusWrites struct {
	mu     sync.Mutex
	last   map[string]kickv1alpha1.KickRequestStatus
	phases map[string][]kickv1alpha1.KickRequestPhase
}

func watchStatusWrites(f *fixture.F) *statusWrites {
	f.T.Helper()
	w := &statusWrites{last: map[string]kickv1alpha1.KickRequestStatus{}, phases: map[string][]kickv1alpha1.KickRequestPhase{}}
	var list kickv1alpha1.KickRequestList
	if err := f.Env.Client.List(f.Ctx, &list, client.InNamespace(f.NS)); err != nil {
		f.T.Fatal(err)
	}
	for _, kr := range list.Items {
		w.last[kr.Name] = kr.Status
	}
	f.WatchRequests(func(kr *kickv1alpha1.KickRequest) {
		w.mu.Lock()
		defer w.mu.Unlock()
		if !reflect.DeepEqual(w.last[kr.Name], kr.Status) {
			w.phases[kr.Name] = append(w.phases[kr.Name], kr.Status.Phase)
		}
		w.last[kr.Name] = kr.Status
	}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.ResourceVersion}})
	return w
}

// of returns the phases a request's status writes set, in order.
func (w *statusWrites) of(request string) []kickv1alpha1.KickRequestPhase {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.phases[request])
}

// sharingDeployments starts a manager with args selecting every workload,
// and n Deployments that all read the Secret db, available and observed.
func sharingDeployments(t *testing.T, n int, args ...string) *fixture.F {
	t.Helper()
	f := fixture.Setup(t, args...)
	f.Policy("all", policy)
	f.Secret("db", map[string]string{"password": "alpha"}, nil)
	for i := range n {
		f.Deployment(name(i), 1, fixture.PodSpec("db"))
	}
	for i := range n {
		f.WaitAvailable(name(i))
	}
	f.WaitObservation("db")
	return f
}

// requestEvents returns the reasons of the Events about each request of
// the test namespace.
func requestEvents(f *fixture.F) (map[string][]string, error) {
	var events corev1.EventList
	if err := f.Env.Client.List(f.Ctx, &events, client.InNamespace(f.NS)); err != nil {
		return nil, err
	}
	reasons := map[string][]string{}
	for _, ev := range events.Items {
		if ev.InvolvedObject.Kind == "KickRequest" {
			reasons[ev.InvolvedObject.Name] = append(reasons[ev.InvolvedObject.Name], ev.Reason)
		}
	}
	return reasons, nil
}
