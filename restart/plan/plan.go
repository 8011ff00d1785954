// Package plan says, before a change is made, how KICK will roll it out to
// the workloads it restarts: how many, how many at a time, in which waves,
// and about how long it takes. It is pure: the admission preflight and
// kubectl kick give it what they read.
package plan

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
)

// Restart is one workload the change restarts.
type Restart struct {
	// Policy selects the workload.
	Policy *kickv1alpha1.KickPolicy
	// Labels are the workload's labels (its wave).
	Labels map[string]string
	// Rollout is how long the workload's last restart took to roll out;
	// zero when unknown.
	Rollout time.Duration
}

// Input is a change's fan-out.
type Input struct {
	Restarts []Restart
	// ClusterLimit is --max-concurrent-restarts (0: none); other
	// namespaces' restarts may take its slots too.
	ClusterLimit int
}

// Plan is how one policy's share of the fan-out rolls out.
type Plan struct {
	Policy    string
	Workloads int
	// AtATime is how many restarts run at once; 0 is all of them.
	AtATime int
	// AtATimeBy names the cap that sets AtATime.
	AtATimeBy string
	Waves     []Wave
	// Rollout is the median of the known rollout times; zero when none is
	// known, and then Estimate is zero too.
	Rollout  time.Duration
	Estimate time.Duration
}

// Wave is one step of the plan.
type Wave struct {
	Name      string
	Workloads int
	Bake      time.Duration
	// Rest is set for the workloads no wave selects.
	Rest bool
}

// Make plans each policy's share, the biggest first.
func Make(in Input) []Plan {
	byPolicy := map[string][]Restart{}
	policies := map[string]*kickv1alpha1.KickPolicy{}
	for _, r := range in.Restarts {
		if r.Policy == nil {
			continue
		}
		byPolicy[r.Policy.Name] = append(byPolicy[r.Policy.Name], r)
		policies[r.Policy.Name] = r.Policy
	}
	out := make([]Plan, 0, len(byPolicy))
	for name, rs := range byPolicy {
		out = append(out, planPolicy(policies[name], rs, in.ClusterLimit))
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Workloads != out[j].Workloads {
			return out[i].Workloads > out[j].Workloads
		}
		return out[i].Policy < out[j].Policy
	})
	return out
}

func planPolicy(p *kickv1alpha1.KickPolicy, rs []Restart, clusterLimit int) Plan {
	pl := Plan{Policy: p.Name, Workloads: len(rs)}
	if limit, capped := p.Spec.MaxConcurrentRestarts(int(p.Status.MatchedWorkloads)); capped {
		pl.AtATime, pl.AtATimeBy = limit, "restart.maxConcurrent"
	}
	if clusterLimit > 0 && (pl.AtATime == 0 || clusterLimit < pl.AtATime) {
		pl.AtATime, pl.AtATimeBy = clusterLimit, "--max-concurrent-restarts"
	}
	if pl.AtATime >= len(rs) {
		pl.AtATime, pl.AtATimeBy = 0, ""
	}
	counts := make([]int, len(p.Spec.RestartWaves())+1)
	var rollouts []time.Duration
	for _, r := range rs {
		i, err := p.Spec.WaveOf(r.Labels)
		if err != nil {
			i = len(counts) - 1
		}
		counts[i]++
		if r.Rollout > 0 {
			rollouts = append(rollouts, r.Rollout)
		}
	}
	for i, n := range counts {
		if n == 0 {
			continue
		}
		pl.Waves = append(pl.Waves, Wave{Name: p.Spec.WaveName(i), Workloads: n, Bake: p.Spec.WaveBake(i), Rest: i == len(counts)-1})
	}
	if len(rollouts) > 0 {
		slices.Sort(rollouts)
		pl.Rollout = rollouts[len(rollouts)/2]
		pl.Estimate = pl.estimate()
	}
	return pl
}

// estimate adds each wave's rounds of rollouts and the bakes between
// waves; the last wave's bake holds nothing back.
func (p Plan) estimate() time.Duration {
	var d time.Duration
	for i, w := range p.Waves {
		rounds := 1
		if p.AtATime > 0 {
			rounds = (w.Workloads + p.AtATime - 1) / p.AtATime
		}
		d += time.Duration(rounds) * p.Rollout
		if i < len(p.Waves)-1 {
			d += w.Bake
		}
	}
	return d
}

// String words the plan in one line, such as "restarts 212 workloads, 5 at
// a time, wave canary (2) first (bake 2m), then 210 more: about 9 min".
func (p Plan) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "restarts %s", count(p.Workloads, "workload"))
	if p.AtATime > 0 {
		fmt.Fprintf(&b, ", %d at a time", p.AtATime)
	} else if p.Workloads > 1 {
		b.WriteString(" at once")
	}
	if len(p.Waves) > 1 || len(p.Waves) == 1 && !p.Waves[0].Rest {
		for i, w := range p.Waves {
			switch {
			case i == 0 && w.Rest:
				fmt.Fprintf(&b, ", %d in no wave first", w.Workloads)
			case i == 0:
				fmt.Fprintf(&b, ", wave %s (%d) first", w.Name, w.Workloads)
			case w.Rest:
				fmt.Fprintf(&b, ", then %d more", w.Workloads)
			default:
				fmt.Fprintf(&b, ", then %s (%d)", w.Name, w.Workloads)
			}
			if w.Bake > 0 && i < len(p.Waves)-1 {
				fmt.Fprintf(&b, " (bake %s)", short(w.Bake))
			}
		}
	}
	if p.Estimate > 0 {
		fmt.Fprintf(&b, ": about %s (rollouts took %s)", short(p.Estimate), short(p.Rollout))
	}
	return b.String()
}

func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// short renders a duration the way people say it: 45s, 2m, 9 min, 1h5m.
func short(d time.Duration) string {
	switch {
	case d < time.Minute:
		return d.Round(time.Second).String()
	case d < time.Hour:
		d = d.Round(time.Second)
		if d%time.Minute == 0 {
			return fmt.Sprintf("%dm", d/time.Minute)
		}
		return strings.TrimSuffix(d.String(), "0s")
	}
	return strings.TrimSuffix(d.Round(time.Minute).String(), "0s")
}
