package sinks

import (
	"context"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/kick-operator/kick/router"
	"github.com/kick-operator/kick/sinks/format"
	"github.com/kick-operator/kick/sinks/rollup"
)

// FanOutSource lists the KickRequests of a namespace as fan-out members, read from durable
// state (the manager's cache of KickRequests and their target workloads), so a manager that
// restarts mid-fan-out rebuilds the same groups. restart/request.FanOuts implements it.
type FanOutSource interface {
	Members(ctx context.Context, namespace string) ([]rollup.Member, error)
	// Consumers lists the workloads of namespace that read source and that a KickPolicy
	// selects, with their labels (for the policy's workload selector) and whether their running
	// pods carry the change at changedAt. It reads the cache: one indexed list per workload kind
	// and one look per consumer.
	Consumers(ctx context.Context, namespace string, source rollup.Source, changedAt time.Time) ([]rollup.Consumer, error)
}

// Defaults of the roll-up options.
const (
	DefaultRollUpInterval = 5 * time.Second
	DefaultMaxOpenRollUps = 64
)

// rollUpDebounce is how long the roll-up loop waits after a request of its namespace changed
// phase: a fan-out's requests finish in bursts, and the cache shows each a moment after its
// event.
const rollUpDebounce = 500 * time.Millisecond

// rollUpSettings is the part of spec.rollUp the dispatcher needs.
type rollUpSettings struct {
	only    bool // no per-request phase changes
	maxWait time.Duration
}

// rollState is what a policy's roll-up loop remembers between two looks. Only that loop reads
// and writes it.
type rollState struct {
	sent    map[rollup.Key]bool // summaries sent (or skipped) whose group is still in the cache
	evicted map[rollup.Key]bool // open groups given up to keep within MaxOpenRollUps
	holds   []time.Time         // what this loop added to the policy's pending times
	from    time.Time           // groups whose summary time is before this are not sent
}

// pokeRollUp wakes st's roll-up loop when a request of its namespace changed phase.
func (st *policyState) pokeRollUp(ev router.Event) {
	e, ok := ev.(router.PhaseChanged)
	if !ok || e.Request.Namespace != st.key.Namespace {
		return
	}
	if s := st.sel.Load(); s == nil || s.rollUp == nil {
		return
	}
	select {
	case st.rollWake <- struct{}{}:
	default:
	}
}

// rollUps runs st's roll-up loop until ctx ends: it looks at the fan-outs of the policy's
// namespace when a request changed phase, when a summary may fall due, and every
// RollUpInterval, and sends each summary that is due.
func (d *dispatcher) rollUps(ctx context.Context, st *policyState, rs *rollState) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	at := time.Now() // when the timer fires
	for {
		select {
		case <-ctx.Done():
			return
		case <-st.rollWake:
			// Look soon, but never later than planned: a namespace whose requests keep
			// changing phase must not postpone the look for ever.
			if soon := time.Now().Add(rollUpDebounce); soon.Before(at) {
				at = soon
				timer.Reset(rollUpDebounce)
			}
			continue
		case <-timer.C:
		}
		next := d.rollUpOnce(ctx, st, rs, time.Now())
		wait := max(time.Until(next), rollUpDebounce)
		at = time.Now().Add(wait)
		timer.Reset(wait)
	}
}

// rollUpOnce looks at the fan-outs once at now, sends the summaries that are due and returns
// when to look again at the latest.
func (d *dispatcher) rollUpOnce(ctx context.Context, st *policyState, rs *rollState, now time.Time) time.Time {
	next := now.Add(d.opts.RollUpInterval)
	sel := st.selection()
	if sel.rollUp == nil {
		d.setHolds(st, rs, nil)
		return next
	}
	members, err := d.opts.FanOuts.Members(ctx, st.key.Namespace)
	if err != nil {
		if ctx.Err() == nil {
			d.log.Error(err, "reading the fan-outs of a namespace", "namespace", st.key.Namespace, "policy", st.key.Name)
		}
		return next
	}
	members = selected(members, sel.match.selector)
	groups := rollup.Build(members)

	st.mu.Lock()
	from := rs.from
	if st.floor.After(from) {
		from = st.floor
	}
	st.mu.Unlock()
	var (
		due     []format.Summary
		holds   []time.Time // of the open groups
		open    int
		evicted int64
		present = make(map[rollup.Key]bool, len(groups))
	)
	for _, g := range groups { // newest change first
		present[g.Key] = true
		if rs.sent[g.Key] || rs.evicted[g.Key] {
			continue
		}
		at, isDue := rollup.Due(g, sel.rollUp.maxWait, now)
		if isDue {
			// Only a group that would be due needs its consumers still to restart: they keep
			// it open, or are counted when maxWait sends it.
			g = d.withPending(ctx, st, sel.match.selector, g, members)
			at, isDue = rollup.Due(g, sel.rollUp.maxWait, now)
		}
		switch {
		case isDue && at.Before(from):
			rs.sent[g.Key] = true // handled before this manager, or before the policy existed
		case isDue:
			due = append(due, summaryOf(st, g, at))
		case open >= d.opts.MaxOpenRollUps:
			rs.evicted[g.Key] = true
			evicted++
		default:
			open++
			holds = append(holds, rollup.Hold(g))
			if c := rollup.NextCheck(g, sel.rollUp.maxWait); c.Before(next) {
				next = c
			}
		}
	}
	forgetAbsent(rs.sent, present)
	forgetAbsent(rs.evicted, present)
	if evicted > 0 {
		st.mu.Lock()
		st.rollUpsEvicted += evicted
		st.dirty = true
		st.mu.Unlock()
		d.metrics.rollUpsEvicted.Add(float64(evicted))
		d.log.Info("gave up following fan-outs: too many open at once", "namespace", st.key.Namespace, "policy", st.key.Name, "evicted", evicted, "max", d.opts.MaxOpenRollUps)
	}
	// Oldest first; each unsent summary holds the watermark at its time.
	slices.SortStableFunc(due, func(a, b format.Summary) int { return a.Time.Compare(b.Time) })
	for i := range due {
		d.setHolds(st, rs, append(slices.Clip(holds), summaryTimes(due[i:])...))
		if !d.sendSummary(ctx, st, due[i]) {
			return next // stopping: the holds keep the watermark before what was not sent
		}
		rs.sent[summaryKey(due[i])] = true
	}
	d.setHolds(st, rs, holds)
	return next
}

// withPending counts in g the consumers of its source that the policy selects and KICK has not
// restarted for its change yet (rollup.WithPending). When the cache cannot be read, g is
// returned as its requests alone make it.
func (d *dispatcher) withPending(ctx context.Context, st *policyState, sel labels.Selector, g rollup.Group, members []rollup.Member) rollup.Group {
	found, err := d.opts.FanOuts.Consumers(ctx, g.Namespace, g.Source, g.ChangedAt)
	if err != nil {
		if ctx.Err() == nil {
			d.log.Error(err, "reading the consumers of a fan-out's source", "namespace", g.Namespace, "policy", st.key.Name, "source", g.Source.String())
		}
		return g
	}
	consumers := make([]rollup.Consumer, 0, len(found))
	for _, c := range found {
		if sel != nil && sel.Matches(labels.Set(c.Labels)) {
			consumers = append(consumers, c)
		}
	}
	return rollup.WithPending(g, members, consumers)
}

// selected keeps the members whose target the policy's selector matches.
func selected(members []rollup.Member, sel labels.Selector) []rollup.Member {
	if sel == nil {
		return nil
	}
	out := members[:0:0]
	for _, m := range members {
		if sel.Matches(labels.Set(m.TargetLabels)) {
			out = append(out, m)
		}
	}
	return out
}

func forgetAbsent(m map[rollup.Key]bool, present map[rollup.Key]bool) {
	for k := range m {
		if !present[k] {
			delete(m, k)
		}
	}
}

// setHolds replaces what rs added to st's pending times by holds: the watermark stays before
// the summary of every open or unsent group.
func (d *dispatcher) setHolds(st *policyState, rs *rollState, holds []time.Time) {
	st.mu.Lock()
	for _, t := range rs.holds {
		st.pending.done(t)
	}
	for _, t := range holds {
		st.pending.add(t)
	}
	st.rollPrimed = true
	st.mu.Unlock()
	rs.holds = append(rs.holds[:0], holds...)
}

func summaryOf(st *policyState, g rollup.Group, at time.Time) format.Summary {
	return format.Summary{
		Policy:         string(st.uid),
		Namespace:      g.Namespace,
		SourceKind:     g.Source.Kind,
		SourceName:     g.Source.Name,
		ChangedAt:      g.ChangedAt,
		Workloads:      g.Workloads,
		Succeeded:      g.Succeeded,
		Failed:         g.Failed,
		Held:           g.Held,
		Waiting:        g.Waiting + g.Pending, // consumers still to restart wait their turn
		InProgress:     g.InProgress,
		Waves:          g.Waves,
		LastCompletion: g.LastCompletion,
		Time:           at,
	}
}

func summaryTimes(ss []format.Summary) []time.Time {
	out := make([]time.Time, len(ss))
	for i, s := range ss {
		out[i] = s.Time
	}
	return out
}

func summaryKey(s format.Summary) rollup.Key {
	return rollup.Key{Namespace: s.Namespace, Source: rollup.Source{Kind: s.SourceKind, Name: s.SourceName}, ChangedAt: s.ChangedAt}
}

// sendSummary delivers one summary as handle delivers an event; false when the manager is
// stopping and it was not sent.
func (d *dispatcher) sendSummary(ctx context.Context, st *policyState, s format.Summary) bool {
	if st.selection().suspended {
		return true // not sent later, like every event during a suspension
	}
	st.mu.Lock()
	cfg, gen := st.cfg, st.generation
	if st.problem != nil || st.gone || cfg == nil {
		d.blockedLocked(st)
		st.mu.Unlock()
		return true
	}
	st.mu.Unlock()
	out := cfg.deliverSummary(ctx, s)
	if out.kind == outcomeCanceled {
		return false
	}
	d.record(st, cfg, gen, out)
	return true
}
