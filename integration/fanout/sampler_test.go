package fanout

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kick-operator/kick/cmd/kick-devcluster/controlplane"
	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/restart/freshness"
)

// rollouts follows the Deployments carrying a label through one watch, so
// every figure comes from the Deployments' own status in the API server's
// order, never from KICK's bookkeeping.
type rollouts struct {
	mu sync.Mutex
	// state is the latest copy of each Deployment ("namespace/name").
	state map[string]*appsv1.Deployment
	// stamps are the restart stamps each Deployment's template carried,
	// in the order they appeared.
	stamps map[string][]string
	// started is the order in which Deployments began a rollout for a new
	// stamp.
	started []string
	// peak is the most rollouts in progress at any one point.
	peak     int
	peakWhen string
	// startedAt is when the watch showed each Deployment's latest stamp;
	// availableAt when it first showed it available after that.
	startedAt, availableAt map[string]time.Time
}

// followRollouts starts watching the Deployments labelled key=value in
// every namespace; the watch stops when the test ends.
func followRollouts(t *testing.T, env *cluster.Env, key, value string) *rollouts {
	t.Helper()
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, err := wc.Watch(ctx, &appsv1.DeploymentList{}, client.MatchingLabels{key: value})
	if err != nil {
		t.Fatal(err)
	}
	r := &rollouts{state: map[string]*appsv1.Deployment{}, stamps: map[string][]string{},
		startedAt: map[string]time.Time{}, availableAt: map[string]time.Time{}}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			d, ok := ev.Object.(*appsv1.Deployment)
			if !ok || ev.Type == watch.Bookmark {
				continue
			}
			r.observe(ev.Type, d)
		}
	}()
	return r
}

func (r *rollouts) observe(typ watch.EventType, d *appsv1.Deployment) {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := d.Namespace + "/" + d.Name
	if typ == watch.Deleted {
		delete(r.state, key)
		return
	}
	r.state[key] = d
	stamp := d.Spec.Template.Annotations[freshness.RestartedAtAnnotation]
	if seen := r.stamps[key]; stamp != "" && (len(seen) == 0 || seen[len(seen)-1] != stamp) {
		r.stamps[key] = append(seen, stamp)
		r.started = append(r.started, key)
		r.startedAt[key] = time.Now()
		delete(r.availableAt, key)
	}
	if _, done := r.availableAt[key]; !done && len(r.stamps[key]) > 0 && controlplane.DeploymentAvailable(d) {
		r.availableAt[key] = time.Now()
	}
	n := 0
	for _, other := range r.state {
		if !controlplane.DeploymentAvailable(other) {
			n++
		}
	}
	if n > r.peak {
		r.peak, r.peakWhen = n, fmt.Sprintf("after an event of %s at resourceVersion %s", key, d.ResourceVersion)
	}
}

// Restarts returns how many restart stamps each Deployment took.
func (r *rollouts) Restarts() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]int{}
	for k, s := range r.stamps {
		out[k] = len(s)
	}
	return out
}

// Peak is the most rollouts in progress at once.
func (r *rollouts) Peak() (int, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.peak, r.peakWhen
}

// Times returns when the watch showed each Deployment's latest restart
// begin, and when it showed that restart rolled out (zero: not yet).
func (r *rollouts) Times(key string) (started, available time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.startedAt[key], r.availableAt[key]
}

// Started returns the Deployments in the order their restarts began.
func (r *rollouts) Started() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.started...)
}

// WaitSettled waits until each of the Deployments took want restarts and
// every one of them is available again.
func (r *rollouts) WaitSettled(t *testing.T, timeout time.Duration, want int, deployments ...string) {
	t.Helper()
	cluster.Eventually(t, timeout, fmt.Sprintf("%d Deployments restarted %d times and available", len(deployments), want), func() (bool, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, key := range deployments {
			d, ok := r.state[key]
			switch {
			case !ok:
				return false, fmt.Errorf("%s not seen", key)
			case len(r.stamps[key]) < want:
				return false, fmt.Errorf("%s restarted %d times", key, len(r.stamps[key]))
			case !controlplane.DeploymentAvailable(d):
				return false, fmt.Errorf("%s still rolling out: %+v", key, d.Status)
			}
		}
		return true, nil
	})
}
