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
	// gone reports that the manager exited: the run stops at once.
	gone func() bool

	mu sync.Mutex
	// stamps: per Deployment, the restartedAt values seen and when the
	// watch first showed each.
	stamps map[string]map[string]time.Time
	last   map[string]string // the newest stamp per Deployment
	// secrets: when the watch first showed each resourceVersion of the
	// namespace's Secrets (what any watcher, KICK included, can see).
	secrets map[string]time.Time
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
	// server, with the preflight in the way); visible is from the write
	// to a watch of the Secrets showing it; decided is from the write to
	// the restartedAt stamp KICK wrote (KICK's clock, same machine).
	writes, visible, decided []time.Duration
	// own is from a watch of the Secrets showing the write to KICK's
	// restartedAt stamp: KICK's part of the latency (the API server's
	// write and watch delivery taken out).
	own []time.Duration
	// cpu is the CPU time the manager, the control plane and the test
	// used during the run; load the machine's load average at its end.
	cpu  cpuUse
	load string
}

// startWatches records, with the test's clock, when each Deployment of
// the namespace shows each new restartedAt value, and when each version of
// its Secrets is seen; both watches run until ctx ends.
func (b *bystander) startWatches(ctx context.Context) error {
	b.stamps, b.last, b.secrets = map[string]map[string]time.Time{}, map[string]string{}, map[string]time.Time{}
	err := follow(ctx, func() (watch.Interface, error) {
		return b.cs.AppsV1().Deployments(b.ns).Watch(ctx, metav1.ListOptions{})
	}, func(o any, now time.Time) {
		d, ok := o.(*appsv1.Deployment)
		if !ok {
			return
		}
		stamp := d.Spec.Template.Annotations[freshness.RestartedAtAnnotation]
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.stamps[d.Name] == nil {
			b.stamps[d.Name] = map[string]time.Time{}
		}
		if _, seen := b.stamps[d.Name][stamp]; !seen {
			b.stamps[d.Name][stamp] = now
		}
		b.last[d.Name] = stamp
	})
	if err != nil {
		return err
	}
	return follow(ctx, func() (watch.Interface, error) {
		return b.cs.CoreV1().Secrets(b.ns).Watch(ctx, metav1.ListOptions{})
	}, func(o any, now time.Time) {
		if s, ok := o.(*corev1.Secret); ok {
			b.mu.Lock()
			defer b.mu.Unlock()
			if _, seen := b.secrets[s.ResourceVersion]; !seen {
				b.secrets[s.ResourceVersion] = now
			}
		}
	})
}

// follow hands every object of the watch start makes to seen, with the
// time it arrived, until ctx ends; a watch that ends is started again (an
// object seen late is timed late, never early).
func follow(ctx context.Context, start func() (watch.Interface, error), seen func(any, time.Time)) error {
	w, err := start()
	if err != nil {
		return err
	}
	go func() {
		for {
			for ev := range w.ResultChan() {
				seen(ev.Object, time.Now())
			}
			for {
				if ctx.Err() != nil {
					return
				}
				if w, err = start(); err == nil {
					break
				}
				time.Sleep(time.Second)
			}
		}
	}()
	return nil
}

// secretSeen is when the watch first showed a Secret's resourceVersion.
func (b *bystander) secretSeen(rv string) (time.Time, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	at, ok := b.secrets[rv]
	return at, ok
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
		if b.gone() {
			return r, fmt.Errorf("the manager exited during the run %s, after %d changes", name, k)
		}
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
			visible, isVisible := b.secretSeen(s.ResourceVersion)
			if isVisible {
				r.visible = append(r.visible, visible.Sub(wrote))
			}
			if at, ok := freshness.ParseStamp(stamp); ok {
				r.decided = append(r.decided, at.Sub(wrote))
				if isVisible {
					r.own = append(r.own, at.Sub(visible))
				}
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
	slices.Sort(r.visible)
	slices.Sort(r.own)
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
