package assess

import (
	"fmt"
	"slices"
	"strings"
	"time"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/discovery"
	"github.com/kick-operator/kick/restart/freshness"
)

// Waves is what the wave stage reads about a workload that its policy's
// restart.waves place after the first wave: for each source the workload
// consumes, the consumers of that source that earlier waves hold.
type Waves struct {
	// Earlier is keyed by source ("Secret/name").
	Earlier map[string][]WaveMember
}

// WaveMember is a consumer of a source in an earlier wave, as the wave
// stage judges it.
type WaveMember struct {
	// Workload is "Kind namespace/name".
	Workload string
	// Wave is the member's wave index in the policy.
	Wave int
	// Since is a conservative start of the member's running template
	// (freshness.Rollout.Since): a change not after it is in its pods.
	Since time.Time
	// Complete is set when the member's rollout is complete and its pods
	// available; Status says what it is doing otherwise.
	Complete bool
	Status   string
	// CompletedAt is when the member's running rollout was last seen to
	// complete (its KickRequest's completion), zero when unknown.
	CompletedAt time.Time
	// AvailableSince is when the member last became available (a
	// Deployment's Available condition), zero when unknown. The bake
	// counts from the latest of Since, CompletedAt and AvailableSince: a
	// member that drops out of availability during the bake starts it
	// again, even when it is back before anyone looks.
	AvailableSince time.Time
	// Released is set when the member's restart failed its rollout and a
	// person released the halt: the waves after it go on without it.
	Released bool
	// Reads are the keys of the source the member reads; nil when unknown
	// (every key counts). A member waits only for the changes of its keys.
	Reads *discovery.Keys
}

// EarlierWave reports the wave of a consumer of a source, with labels,
// when it sits in a wave before wave of policy p: only workloads that p
// alone selects among the namespace's policies count.
func EarlierWave(p *kickv1alpha1.KickPolicy, policies []kickv1alpha1.KickPolicy, wave int, labels map[string]string) (int, bool) {
	sel := selectPolicy(Facts{Target: Target{Labels: labels}, Policies: policies})
	if sel.Policy == nil || sel.Policy.Name != p.Name {
		return 0, false
	}
	j, err := p.Spec.WaveOf(labels)
	if err != nil || j >= wave {
		return 0, false
	}
	return j, true
}

// WaveHold names what a restart held by an earlier wave waits for: the
// requests that wait for the same thing (the same change of the same
// source, the same earlier wave, the same step) are freed by the same
// event, so the manager wakes them together.
type WaveHold struct {
	// Source is "Kind/name" of the changed source.
	Source string
	// Change is the change of Source the earlier wave has to carry.
	Change time.Time
	// Wave is the index of the earlier wave in the policy.
	Wave int
	// Baking is set when the earlier wave has rolled out and bakes; the
	// stage's Next is then the bake's end.
	Baking bool
}

// wavePending is what holds a workload's wave back.
type wavePending struct {
	wave       int
	notYet     []string
	rolling    []string
	bakedUntil time.Time
	baking     int
	members    int
}

// waveStage holds a restart while a wave before the workload's own has not
// rolled out the change the restart would bring in: for every in-scope
// source whose change the running pods do not carry yet, each consumer of
// that source in an earlier wave must carry the change, be complete and
// available, and have been so for its wave's bake.
func waveStage(f Facts, p *kickv1alpha1.KickPolicy, latest freshness.Change, deps []DependencyResult) StageResult {
	waves := p.Spec.RestartWaves()
	if len(waves) == 0 {
		return open(StageWave, "no restart waves")
	}
	mine, err := p.Spec.WaveOf(f.Target.Labels)
	if err != nil {
		return StageResult{Stage: StageWave, Reason: kickv1alpha1.GateConfigurationError,
			Message: fmt.Sprintf("KickPolicy %s: %s", p.Name, err)}
	}
	name := waveLabel(p, mine)
	if mine == 0 {
		return open(StageWave, fmt.Sprintf("%s is the first of %d", name, len(waves)+1))
	}
	pending := pendingSources(f, deps)
	if lag := unrecorded(f, latest, pending); !lag.IsZero() {
		return StageResult{Stage: StageWave, Reason: kickv1alpha1.GateEarlierWave, Next: lag,
			Message: fmt.Sprintf("%s: waiting until %s for the record of the change at %s, to see which earlier waves it concerns",
				name, formatTime(lag), formatTime(latest.Latest))}
	}
	if len(pending) == 0 {
		return open(StageWave, fmt.Sprintf("%s: no change of a source to bring in", name))
	}
	if f.Waves == nil {
		return StageResult{Stage: StageWave, Unknown: true,
			Message: fmt.Sprintf("%s: decided by the manager from its caches", name)}
	}
	var hold *wavePending
	var held DependencyResult
	for _, d := range pending {
		w := judgeWaves(f, p, d, f.Waves.Earlier[d.Kind+"/"+d.Name])
		if w != nil && (hold == nil || w.wave < hold.wave) {
			hold, held = w, d
		}
	}
	if hold == nil {
		return open(StageWave, fmt.Sprintf("%s: every earlier wave has rolled out the change", name))
	}
	r := hold.result(p, name, held.Kind+"/"+held.Name)
	r.Wave = &WaveHold{Source: held.Kind + "/" + held.Name, Change: held.Change.Latest, Wave: hold.wave,
		Baking: len(hold.notYet) == 0 && len(hold.rolling) == 0}
	return r
}

// RecordLag is how long the wave stage waits for the observation record
// of a change it knows only from a router event or a request's change
// annotation: the record names the source, and so the earlier waves that
// go first. A change no record shows after that is a person's request,
// which waves do not order.
const RecordLag = 10 * time.Second

// unrecorded returns until when to wait for the record of latest, when the
// running pods do not carry it and no pending source's record shows it;
// zero otherwise.
func unrecorded(f Facts, latest freshness.Change, pending []DependencyResult) time.Time {
	if latest.IsZero() || !freshness.Newer(latest, f.Rollout.Since) {
		return time.Time{}
	}
	for _, d := range pending {
		if !d.Change.Latest.Before(latest.Latest) {
			return time.Time{}
		}
	}
	if until := latest.Latest.Add(RecordLag); f.Now.Before(until) {
		return until
	}
	return time.Time{}
}

// pendingSources are the in-scope Secrets and ConfigMaps whose recorded
// change the running pods do not carry yet.
func pendingSources(f Facts, deps []DependencyResult) []DependencyResult {
	var out []DependencyResult
	for _, d := range deps {
		if d.Scope != ScopeIn || d.Change.IsZero() || !freshness.Newer(d.Change, f.Rollout.Since) {
			continue
		}
		if d.Kind != string(kickv1alpha1.SourceSecret) && d.Kind != string(kickv1alpha1.SourceConfigMap) {
			continue
		}
		out = append(out, d)
	}
	return out
}

// memberChange is the change of d that member m has to carry: d's, or,
// when m reads only some keys and d's record can tell them apart, the
// newest change of those keys if it is older (m never restarts for a key
// it does not read, so waiting for it would wait for ever).
func memberChange(f Facts, p *kickv1alpha1.KickPolicy, d DependencyResult, m WaveMember) freshness.Change {
	if m.Reads == nil || m.Reads.All || f.KeyNames == nil || p.Spec.CountsEveryKey() || d.Dependency.Record == nil {
		return d.Change
	}
	names, ns := f.KeyNames, f.Target.Namespace
	c, ok := KeyChange(d.Dependency.Record, *m.Reads, func(key string) string { return names(ns, d.Kind, d.Name, key) })
	if ok && c.Latest.Before(d.Change.Latest) {
		return c
	}
	return d.Change
}

// judgeWaves returns the earliest wave whose members hold the change of d
// back, nil when none does.
func judgeWaves(f Facts, p *kickv1alpha1.KickPolicy, d DependencyResult, members []WaveMember) *wavePending {
	byWave := map[int]*wavePending{}
	for _, m := range members {
		if m.Released {
			continue
		}
		w := byWave[m.Wave]
		if w == nil {
			w = &wavePending{wave: m.Wave}
			byWave[m.Wave] = w
		}
		w.members++
		switch {
		case freshness.Newer(memberChange(f, p, d, m), m.Since):
			w.notYet = append(w.notYet, m.Workload)
		case !m.Complete:
			w.rolling = append(w.rolling, m.Workload+" ("+m.Status+")")
		default:
			// The moments come from workload and request status, which a
			// tenant can write: none counts later than now, so a forged
			// future time can stretch a bake by its length at most.
			var from time.Time
			for _, t := range []time.Time{m.Since, m.CompletedAt, m.AvailableSince} {
				if t.After(f.Now) {
					t = f.Now
				}
				if t.After(from) {
					from = t
				}
			}
			if until := from.Add(p.Spec.WaveBake(m.Wave)); f.Now.Before(until) {
				w.baking++
				if until.After(w.bakedUntil) {
					w.bakedUntil = until
				}
			}
		}
	}
	waves := make([]int, 0, len(byWave))
	for i := range byWave {
		waves = append(waves, i)
	}
	slices.Sort(waves)
	for _, i := range waves {
		if w := byWave[i]; len(w.notYet) > 0 || len(w.rolling) > 0 || w.baking > 0 {
			return w
		}
	}
	return nil
}

// SameWave reports whether two wave-stage messages describe the same wait
// (the same waves, the same source, the same step), whatever the counts:
// a request keeps the message it started waiting with, so that counts
// moving during a fan-out do not rewrite every waiting request.
func SameWave(a, b string) bool {
	ai, bi := strings.Index(a, ": "), strings.Index(b, ": ")
	if ai < 0 || bi < 0 {
		return a == b
	}
	return a[:ai] == b[:bi]
}

func (w *wavePending) result(p *kickv1alpha1.KickPolicy, mine, source string) StageResult {
	earlier := waveLabel(p, w.wave)
	r := StageResult{Stage: StageWave, Reason: kickv1alpha1.GateEarlierWave}
	switch {
	case len(w.notYet) > 0:
		r.Message = fmt.Sprintf("%s waits for %s to roll out the change of %s: %d of %d workloads have not restarted yet (%s)",
			mine, earlier, source, len(w.notYet), w.members, listSome(w.notYet))
	case len(w.rolling) > 0:
		r.Message = fmt.Sprintf("%s waits for %s to roll out the change of %s: %d of %d workloads are still rolling out (%s)",
			mine, earlier, source, len(w.rolling), w.members, listSome(w.rolling))
	default:
		r.Next = w.bakedUntil
		r.Message = fmt.Sprintf("%s waits for %s to bake (restart.waves bake %s) until %s",
			mine, earlier, p.Spec.WaveBake(w.wave), formatTime(w.bakedUntil))
	}
	return r
}

// waveLabel names wave i for people: `wave "canary" (1 of 3)`.
func waveLabel(p *kickv1alpha1.KickPolicy, i int) string {
	n := len(p.Spec.RestartWaves()) + 1
	if i >= n-1 {
		return fmt.Sprintf("the workloads no wave selects (%d of %d)", n, n)
	}
	return fmt.Sprintf("wave %q (%d of %d)", p.Spec.WaveName(i), i+1, n)
}

// listSome names the first three entries and how many more there are.
func listSome(names []string) string {
	slices.Sort(names)
	if len(names) <= 3 {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:3], ", "), len(names)-3)
}
