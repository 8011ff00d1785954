package sinks

import (
	"context"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
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
// and writes it. What has been sent is in the policy's ledger (policyState.ledger), which is
// durable.
type rollState struct {
	evicted map[rollup.Key]bool // open groups given up to keep within MaxOpenRollUps
	open    map[rollup.Key]bool // the groups open at the last look
}

func newRollState() *rollState {
	return &rollState{evicted: map[rollup.Key]bool{}, open: map[rollup.Key]bool{}}
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
// when to look again at the latest. Each summary sent is recorded in the policy's ledger,
// which the status flusher writes at once; the ledger's Since then moves on, held by every
// fan-out not summarized yet (rollup.Ledger).
func (d *dispatcher) rollUpOnce(ctx context.Context, st *policyState, rs *rollState, now time.Time) time.Time {
	next := now.Add(d.opts.RollUpInterval)
	sel := st.selection()
	if sel.rollUp == nil {
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
	handled, ok := st.handled(groups)
	if !ok {
		return next // rollUp was just turned off
	}
	var (
		due     []format.Summary
		hold    = rollup.Unanswered(members) // fan-outs no restart answered yet
		open    = make(map[rollup.Key]bool)
		evicted int64
		present = make(map[rollup.Key]bool, len(groups))
	)
	for i, g := range groups { // newest change first
		present[g.Key] = true
		if handled[i] {
			if rs.open[g.Key] {
				evicted++ // the ledger's bound gave it up while it was open
			}
			continue
		}
		if rs.evicted[g.Key] {
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
		case isDue:
			due = append(due, summaryOf(st, g, at))
		case len(open) >= d.opts.MaxOpenRollUps:
			rs.evicted[g.Key] = true
			evicted++
		default:
			open[g.Key] = true
			if hold.IsZero() || g.ChangedAt.Before(hold) {
				hold = g.ChangedAt
			}
			if c := rollup.NextCheck(g, sel.rollUp.maxWait); c.Before(next) {
				next = c
			}
		}
	}
	rs.open = open
	forgetAbsent(rs.evicted, present)
	if evicted > 0 {
		st.mu.Lock()
		st.rollUpsEvicted += evicted
		st.dirty = true
		st.mu.Unlock()
		d.metrics.rollUpsEvicted.Add(float64(evicted))
		d.log.Info("gave up following fan-outs: too many open at once", "namespace", st.key.Namespace, "policy", st.key.Name, "evicted", evicted, "max", d.opts.MaxOpenRollUps)
	}
	slices.SortStableFunc(due, func(a, b format.Summary) int { return a.Time.Compare(b.Time) })
	for _, s := range due {
		if !d.sendSummary(ctx, st, s) {
			return next // stopping: the ledger still holds what was not sent
		}
		d.recordSummary(st, summaryKey(s))
	}
	st.mu.Lock()
	if st.ledger != nil && st.ledger.Advance(now, hold) {
		st.dirty = true
	}
	st.mu.Unlock()
	return next
}

// handled reports, for each group, whether the policy's ledger says its summary needs no
// sending; false when the policy has no ledger (no spec.rollUp).
func (st *policyState) handled(groups []rollup.Group) ([]bool, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.ledger == nil {
		return nil, false
	}
	out := make([]bool, len(groups))
	for i, g := range groups {
		out[i] = st.ledger.Handled(g.Key)
	}
	return out, true
}

// recordSummary notes in the ledger that the summary of k was sent, and has the status
// (where the ledger is kept) written at once: a manager that dies before the write sends the
// summary again, with the same id.
func (d *dispatcher) recordSummary(st *policyState, k rollup.Key) {
	st.mu.Lock()
	if st.ledger != nil {
		st.ledger.Record(k)
		st.dirty, st.urgent = true, true
	}
	st.mu.Unlock()
	select {
	case d.wake <- struct{}{}:
	default:
	}
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

// ledgerOf is the roll-up ledger kept in p's status. A policy that has none yet starts it at
// its watermark (a policy that delivered before it asked for summaries gets none for older
// changes) or, when it never had a status, at its creation.
func ledgerOf(p *kickv1alpha1.NotificationPolicy, now time.Time) *rollup.Ledger {
	if r := p.Status.RollUp; r != nil {
		keys := make([]rollup.Key, 0, len(r.Sent))
		for _, c := range r.Sent {
			keys = append(keys, rollup.Key{Namespace: p.Namespace, Source: rollup.Source{Kind: string(c.Kind), Name: c.Name}, ChangedAt: c.ChangedAt.Time})
		}
		return rollup.NewLedger(r.Since.Time, keys)
	}
	since := now
	switch {
	case p.Status.HandledThrough != nil:
		since = p.Status.HandledThrough.Time
	case !p.CreationTimestamp.IsZero():
		since = p.CreationTimestamp.Time
	}
	return rollup.NewLedger(since, nil)
}

// rollUpStatus is the status.rollUp that stores l; nil (no field) without a ledger.
func rollUpStatus(l *rollup.Ledger) *kickv1alpha1.RollUpStatus {
	if l == nil {
		return nil
	}
	out := &kickv1alpha1.RollUpStatus{Since: kickv1alpha1.NewNanoTime(l.Since())}
	for _, k := range l.Sent() {
		out.Sent = append(out.Sent, kickv1alpha1.SourceChange{Kind: kickv1alpha1.SourceKind(k.Source.Kind), Name: k.Source.Name, ChangedAt: kickv1alpha1.NewNanoTime(k.ChangedAt)})
	}
	return out
}
