package fanout

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/integration/rolloutwatch"
)

// rolloutWatch counts the rollouts in progress from the Deployments' own
// status (package rolloutwatch).
type rolloutWatch struct{ *rolloutwatch.Sampler }

// followRollouts starts watching the Deployments labelled key=value in
// every namespace; the watch stops when the test ends.
func followRollouts(t *testing.T, env *cluster.Env, key, value string) rolloutWatch {
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
	return rolloutWatch{rolloutwatch.Follow(w)}
}

// WaitSettled waits until each of the Deployments took want restarts and
// every one of them is available again.
func (r rolloutWatch) WaitSettled(t *testing.T, timeout time.Duration, want int, deployments ...string) {
	t.Helper()
	cluster.Eventually(t, timeout, fmt.Sprintf("%d Deployments restarted %d times and available", len(deployments), want), func() (bool, error) {
		return r.Settled(want, deployments...)
	})
}
