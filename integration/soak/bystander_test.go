package soak

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/restart/freshness"
)

// The bystander: Deployments b-0 … b-(workloads-1), each consuming Secret
// s-i, in a namespace whose KickPolicy selects them all. It changes one
// Secret every interval, in turn, and times each change to the restart the
// Deployment shows.
const (
	workloads = 3
	interval  = 2 * time.Second
	// restartDeadline is how long a change may wait for its restart before
	// the bystander moves on (the change then counts as late, and the
	// final count from the Deployments says whether it was lost).
	restartDeadline = 90 * time.Second
)

type bystander struct {
	ns string
	c  client.Client
	cs kubernetes.Interface

	mu sync.Mutex
	// stamps: per Deployment, the restartedAt values seen and when the
	// watch first showed each.
	stamps map[string]map[string]time.Time
	last   map[string]string // the newest stamp per Deployment
}

// run is the figures of one run.
type run struct {
	name      string
	latencies []time.Duration
	changes   int
	restarts  int
	lost, dup int
	late      int
	peakRSS   int64
	// writes are how long the bystander's Secret updates took (the API
	// server, with the preflight in the way); decided is from the write to
	// the restartedAt stamp KICK wrote (KICK's clock, same machine).
	writes, decided []time.Duration
	// cpu is the manager's CPU time during the run.
	cpu time.Duration
}

// watchDeployments records, with the test's clock, when each Deployment of
// the namespace shows each new restartedAt value; it runs until ctx ends.
func (b *bystander) watchDeployments(ctx context.Context) error {
	b.stamps, b.last = map[string]map[string]time.Time{}, map[string]string{}
	start := func() (watch.Interface, error) {
		return b.cs.AppsV1().Deployments(b.ns).Watch(ctx, metav1.ListOptions{})
	}
	w, err := start()
	if err != nil {
		return err
	}
	go func() {
		for {
			for ev := range w.ResultChan() {
				d, ok := ev.Object.(*appsv1.Deployment)
				if !ok {
					continue
				}
				now := time.Now()
				stamp := d.Spec.Template.Annotations[freshness.RestartedAtAnnotation]
				b.mu.Lock()
				if b.stamps[d.Name] == nil {
					b.stamps[d.Name] = map[string]time.Time{}
				}
				if _, seen := b.stamps[d.Name][stamp]; !seen {
					b.stamps[d.Name][stamp] = now
				}
				b.last[d.Name] = stamp
				b.mu.Unlock()
			}
			if ctx.Err() != nil {
				return
			}
			// The watch ended (a timeout, an API server hiccup): start
			// again; a stamp seen late is timed late, never early.
			for {
				if w, err = start(); err == nil || ctx.Err() != nil {
					break
				}
				time.Sleep(time.Second)
			}
			if ctx.Err() != nil {
				return
			}
		}
	}()
	return nil
}

// newStamp is the stamp of deployment other than before, if the watch
// showed one, and when it first showed it.
func (b *bystander) newStamp(deployment, before string) (string, time.Time, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.last[deployment] == before {
		return "", time.Time{}, false
	}
	return b.last[deployment], b.stamps[deployment][b.last[deployment]], true
}

func (b *bystander) stamp(deployment string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.last[deployment]
}

// generations reads every Deployment's metadata.generation: only KICK
// changes their spec, so its growth is the number of restarts.
func (b *bystander) generations(ctx context.Context) (map[string]int64, error) {
	var list appsv1.DeploymentList
	if err := b.c.List(ctx, &list, client.InNamespace(b.ns)); err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, d := range list.Items {
		out[d.Name] = d.Generation
	}
	return out, nil
}

// quiet waits until the Deployments' generations have not moved for
// settle, and returns them.
func (b *bystander) quiet(ctx context.Context, settle time.Duration) (map[string]int64, error) {
	gens, err := b.generations(ctx)
	if err != nil {
		return nil, err
	}
	since := time.Now()
	err = cluster.Poll(5*time.Minute, "the bystander's Deployments to be quiet", func() (bool, error) {
		now, err := b.generations(ctx)
		if err != nil {
			return false, err
		}
		for name, g := range now {
			if gens[name] != g {
				gens, since = now, time.Now()
				return false, fmt.Errorf("%s moved to generation %d", name, g)
			}
		}
		return time.Since(since) >= settle, nil
	})
	return gens, err
}

// change runs the bystander for d: one Secret changed every interval, in
// turn, each change timed to the restart its Deployment shows. It then
// waits for the cluster to be quiet and counts, per Deployment, the
// restarts (generations) against the changes.
func (b *bystander) change(ctx context.Context, name string, d time.Duration) (run, error) {
	r := run{name: name}
	before, err := b.quiet(ctx, 5*time.Second)
	if err != nil {
		return r, err
	}
	changes := map[string]int{}
	end := time.Now().Add(d)
	for k := 0; time.Now().Before(end); k++ {
		deployment, secret := fmt.Sprintf("b-%d", k%workloads), fmt.Sprintf("s-%d", k%workloads)
		was := b.stamp(deployment)
		s := &corev1.Secret{}
		if err := b.c.Get(ctx, client.ObjectKey{Namespace: b.ns, Name: secret}, s); err != nil {
			return r, err
		}
		s.Data = map[string][]byte{"password": fmt.Appendf(nil, "%s-%d", name, k)}
		wrote := time.Now()
		if err := b.c.Update(ctx, s); err != nil {
			return r, fmt.Errorf("change %d of %s: %w", k, secret, err)
		}
		r.writes = append(r.writes, time.Since(wrote))
		changes[deployment]++
		r.changes++
		var stamp string
		var seen time.Time
		if cluster.Poll(restartDeadline, "the restart of "+deployment, func() (bool, error) {
			var ok bool
			stamp, seen, ok = b.newStamp(deployment, was)
			return ok, nil
		}) != nil {
			r.late++
		} else {
			r.latencies = append(r.latencies, seen.Sub(wrote))
			if at, ok := freshness.ParseStamp(stamp); ok {
				r.decided = append(r.decided, at.Sub(wrote))
			}
		}
		if wait := time.Until(wrote.Add(interval)); wait > 0 {
			time.Sleep(wait) // the bystander's pace, not a condition
		}
	}
	after, err := b.quiet(ctx, 10*time.Second)
	if err != nil {
		return r, err
	}
	for i := range workloads {
		deployment := fmt.Sprintf("b-%d", i)
		restarts := int(after[deployment] - before[deployment])
		r.restarts += restarts
		r.lost += max(0, changes[deployment]-restarts)
		r.dup += max(0, restarts-changes[deployment])
	}
	slices.Sort(r.latencies)
	slices.Sort(r.writes)
	slices.Sort(r.decided)
	return r, nil
}

// percentile of sorted latencies (nearest rank); 0 when there are none.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p+0.999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
