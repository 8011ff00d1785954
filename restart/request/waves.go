package request

import (
	"context"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/assess"
	"github.com/kick-operator/kick/restart/discovery"
	"github.com/kick-operator/kick/restart/workload"
)

// A policy's restart.waves order the restarts of one change: the wave
// stage of the assessment holds a workload until the consumers of the
// changed source in earlier waves run the change, have completed their
// rollout and have baked. waves gathers those consumers from the cache
// (the source index, the workloads' own rollout status and their
// KickRequests), so what it reads survives a crash or a failover.

// DefaultWavePoll is how often a restart held by an earlier wave looks
// again when nothing woke it (Options.WavePoll). It is a safety net: the
// completions of the earlier wave's requests and the end of its bake wake
// the held requests (see wavewake.go); only a change the manager sees no
// event of (an earlier workload that rolls out again by itself, a wake
// lost to a restart of the manager) waits for it.
const DefaultWavePoll = 30 * time.Second

// waves fills f.Waves when the policy selecting the workload orders its
// restarts in waves and the workload is not in the first.
func (b *Batch) waves(ctx context.Context, f *assess.Facts) error {
	sel := assess.Select(*f)
	p := sel.Policy
	if p == nil || len(p.Spec.RestartWaves()) == 0 {
		return nil
	}
	mine, err := p.Spec.WaveOf(f.Target.Labels)
	if err != nil || mine == 0 {
		return nil // the wave stage reports the error, or lets the first wave go
	}
	f.Waves = &assess.Waves{Earlier: map[string][]assess.WaveMember{}}
	for _, d := range f.Dependencies {
		if !d.Counted || d.Record == nil || (d.Kind != string(kickv1alpha1.SourceSecret) && d.Kind != string(kickv1alpha1.SourceConfigMap)) {
			continue
		}
		key := d.Kind + "/" + d.Name
		members, err := b.waveMembers(ctx, p, mine, f.Target, d.Kind, d.Name)
		if err != nil {
			return err
		}
		f.Waves.Earlier[key] = members
	}
	return nil
}

// waveCache keeps the wave members of a policy's source for waveCacheTTL,
// so the hundreds of requests a wave holds, woken together, read the
// earlier waves once between them instead of once each. An entry is served
// only while no request of its namespace has finished since it was read
// (see completions), so a look woken by a completion sees it. It holds at
// most waveCacheMax sources; past that, reads are not kept.
type waveCache struct {
	mu      sync.Mutex
	entries map[string]waveEntry
	done    completions
	// available is when StatefulSets and DaemonSets last became available
	// again (see availability.go).
	available availabilityMemory
}

// availability is the cache's memory of StatefulSets and DaemonSets that
// became available again; nil without a cache.
func (c *waveCache) availability() *availabilityMemory {
	if c == nil {
		return nil
	}
	return &c.available
}

type waveEntry struct {
	members []assess.WaveMember
	at      time.Time
	epoch   uint64
}

const (
	waveCacheTTL = 2 * time.Second
	waveCacheMax = 4096
)

// epoch is the namespace's count of completions, to read its wave members
// at; 0 without a cache.
func (c *waveCache) epoch(namespace string) uint64 {
	if c == nil {
		return 0
	}
	return c.done.epoch(namespace)
}

// completed notes that a request of the namespace finished: the members
// read before are not served any more.
func (c *waveCache) completed(namespace string) {
	if c != nil {
		c.done.bump(namespace)
	}
}

func (c *waveCache) get(key string, now time.Time, epoch uint64) ([]assess.WaveMember, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || e.epoch != epoch || now.Sub(e.at) > waveCacheTTL || now.Before(e.at) {
		return nil, false
	}
	return e.members, true
}

// put keeps members read at epoch (taken before the read began).
func (c *waveCache) put(key string, members []assess.WaveMember, now time.Time, epoch uint64) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[string]waveEntry{}
	}
	if len(c.entries) >= waveCacheMax {
		for k, e := range c.entries {
			if now.Sub(e.at) > waveCacheTTL {
				delete(c.entries, k)
			}
		}
		if len(c.entries) >= waveCacheMax {
			return
		}
	}
	c.entries[key] = waveEntry{members: members, at: now, epoch: epoch}
}

// waveMembers lists the consumers of a source in the policy's waves before
// wave, the target left out. The batch reads each source's consumers once
// (the preflight assesses every consumer of the source being written), and
// shares them for waveCacheTTL through the manager's memory, until a
// request of the namespace finishes.
func (b *Batch) waveMembers(ctx context.Context, p *kickv1alpha1.KickPolicy, wave int, target assess.Target, kind, name string) ([]assess.WaveMember, error) {
	key := target.Namespace + "/" + p.Name + "\x00" + kind + "/" + name
	all, read := b.members[key]
	epoch := b.shared.epoch(target.Namespace)
	if !read {
		all, read = b.shared.get(key, b.now, epoch)
	}
	if !read {
		var err error
		if all, err = b.readWaveMembers(ctx, p, target.Namespace, kind, name); err != nil {
			return nil, err
		}
		b.shared.put(key, all, b.now, epoch)
		if b.members == nil {
			b.members = map[string][]assess.WaveMember{}
		}
		b.members[key] = all
	}
	self := workload.Ref{Kind: target.Kind, Namespace: target.Namespace, Name: target.Name}.String()
	var out []assess.WaveMember
	for _, m := range all {
		if m.Wave < wave && m.Workload != self {
			out = append(out, m)
		}
	}
	return out, nil
}

// readWaveMembers reads every consumer of a source that the policy alone
// selects and places in a wave other than the last.
func (b *Batch) readWaveMembers(ctx context.Context, p *kickv1alpha1.KickPolicy, namespace, kind, name string) ([]assess.WaveMember, error) {
	last := len(p.Spec.RestartWaves())
	var out []assess.WaveMember
	for _, list := range b.kinds.Lists() {
		if err := b.c.List(ctx, list, client.InNamespace(namespace),
			client.MatchingFields{discovery.SourceIndex: discovery.IndexKey(kind, name)}); err != nil {
			return nil, fmt.Errorf("list the consumers of %s %s/%s: %w", kind, namespace, name, err)
		}
		for _, w := range workload.Items(list) {
			if !w.GetDeletionTimestamp().IsZero() {
				continue
			}
			j, earlier := assess.EarlierWave(p, b.policies, last, w.GetLabels())
			if !earlier {
				continue
			}
			m, err := b.waveMember(ctx, w, j)
			if err != nil {
				return nil, err
			}
			m.Reads = b.keysRead(w, 1).of(discovery.Dependency{APIVersion: discovery.CoreAPIVersion, Kind: kind, Name: name})
			out = append(out, m)
		}
	}
	return out, nil
}

// waveMember reads what the wave stage judges of one earlier consumer.
func (b *Batch) waveMember(ctx context.Context, w client.Object, wave int) (assess.WaveMember, error) {
	ref := workload.RefOf(w)
	m := assess.WaveMember{Workload: ref.String(), Wave: wave}
	h, err := b.kinds.Handle(ctx, b.c, w)
	if err != nil {
		return m, err
	}
	r, err := h.Inspect(ctx, b.c)
	if err != nil {
		return m, err
	}
	m.Since, m.Complete, m.Status = r.Since, r.Complete, r.Message
	m.AvailableSince = availableSince(w)
	if m.AvailableSince.IsZero() {
		m.AvailableSince = b.shared.availability().since(w)
	}
	var kr kickv1alpha1.KickRequest
	err = b.c.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: kickv1alpha1.RequestName(ref.Kind, ref.Name)}, &kr, client.UnsafeDisableDeepCopy)
	switch {
	case apierrors.IsNotFound(err):
		return m, nil
	case err != nil:
		return m, fmt.Errorf("read the KickRequest of %s: %w", ref, err)
	}
	if m.Complete && !kr.Status.Phase.IsTerminal() {
		// The bake counts from the completion its request records; until
		// then the member is not done.
		m.Complete, m.Status = false, fmt.Sprintf("KickRequest %s is %s", kr.Name, orDefault(string(kr.Status.Phase), "new"))
	}
	if kr.Status.Phase == kickv1alpha1.PhaseSucceeded && kr.Status.CompletionTime != nil {
		m.CompletedAt = kr.Status.CompletionTime.Time
	}
	if _, released := kr.Annotations[kickv1alpha1.ReleaseHaltAnnotation]; released && kr.Status.Phase == kickv1alpha1.PhaseFailed && kr.Status.RestartedFor != nil {
		m.Released = true
	}
	return m, nil
}

// availableSince is when a Deployment last became available (its Available
// condition's transition to True); zero for other kinds, which record no
// such moment (the manager remembers it for StatefulSets and DaemonSets,
// availabilityMemory), and while it is not available.
func availableSince(w client.Object) time.Time {
	d, ok := w.(*appsv1.Deployment)
	if !ok {
		return time.Time{}
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}
