// Package rollup groups the KickRequests of a namespace by the change of a Secret or ConfigMap
// they restart for, one group per fan-out, and decides when a group's summary is due. It is
// pure: the caller reads the requests (durable state) and sends the summaries.
package rollup

import (
	"slices"
	"time"
)

// Outcome is where one request of a fan-out stands.
type Outcome int

const (
	// InProgress: the restart was issued and its rollout is not complete.
	InProgress Outcome = iota
	// Waiting: the restart has not started; a gate (a schedule, the restart budget, ...) holds it.
	Waiting
	// Held: the restart has not started because its fan-out is halted or held by a person.
	Held
	// Succeeded: the request finished without failing.
	Succeeded
	// Failed: the request failed.
	Failed
)

// Open reports whether the request has not finished.
func (o Outcome) Open() bool { return o < Succeeded }

// Source names a Secret or ConfigMap of the namespace.
type Source struct {
	Kind string // Secret or ConfigMap
	Name string
}

// String is "Kind/name".
func (s Source) String() string { return s.Kind + "/" + s.Name }

// Key identifies one fan-out: one change of one source of a namespace.
type Key struct {
	Namespace string
	Source    Source
	ChangedAt time.Time // the change's time at full precision, as the observation record has it
}

// Member is one KickRequest, as far as fan-outs are concerned. The caller fills it from the
// request's status and leaves out requests whose target the policy does not select.
type Member struct {
	Namespace string
	// Target names the request's workload, "Kind/name" (as Consumer.Target).
	Target string
	// RestartedFor is the change the request's last restart answered (status.restartedFor);
	// zero Source when none is recorded.
	RestartedFor Source
	RestartedAt  time.Time // that change's time
	// Observed is the newest dependency change the request saw
	// (status.latestObservedDependencyChange, microseconds): an open request that has not
	// restarted for it yet belongs to the fan-out of the change with that time.
	Observed  time.Time
	Outcome   Outcome
	Completed time.Time // status.completionTime of a finished request
	Wave      int       // the restart wave the request belongs to, 0 when there are no waves
	// TargetLabels are the target workload's labels, for the policy's workload selector.
	TargetLabels map[string]string
}

// Group is what a summary says about one fan-out.
type Group struct {
	Key
	Workloads                                    int
	Succeeded, Failed, Held, Waiting, InProgress int
	// Pending counts the consumers of the source that KICK restarts, that have no request
	// answering the change yet and whose running pods do not carry it (see WithPending).
	// Workloads includes them.
	Pending int
	// Waves counts the distinct waves among the members (0 without waves).
	Waves int
	// LastCompletion is the newest completion time among the finished members.
	LastCompletion time.Time
}

// Open counts the members that have not finished.
func (g Group) Open() int { return g.Held + g.Waiting + g.InProgress + g.Pending }

// Build groups members into fan-outs, newest change first (then by namespace and source). A request belongs to the change its
// last restart answered, unless it is open and saw a newer change since: then it belongs to the
// fan-out of that newer change, if one of the other requests restarted for it (a change no
// request restarted for yet has no known source, so no group).
func Build(members []Member) []Group {
	groups := map[Key]*Group{}
	waves := map[Key]map[int]bool{}
	var later []Member
	for _, m := range members {
		if !settled(m) {
			later = append(later, m)
			continue
		}
		k := Key{Namespace: m.Namespace, Source: m.RestartedFor, ChangedAt: m.RestartedAt}
		add(groups, waves, k, m)
	}
	// The open requests that wait for a change they have not restarted for: match by time.
	for _, m := range later {
		if !m.Outcome.Open() || m.Observed.IsZero() {
			continue
		}
		if k, ok := byObserved(groups, m); ok {
			add(groups, waves, k, m)
		}
	}
	out := make([]Group, 0, len(groups))
	for k, g := range groups {
		g.Waves = len(waves[k])
		out = append(out, *g)
	}
	slices.SortFunc(out, func(a, b Group) int {
		if c := b.ChangedAt.Compare(a.ChangedAt); c != 0 {
			return c
		}
		if a.Namespace != b.Namespace {
			return compare(a.Namespace, b.Namespace)
		}
		if a.Source.Kind != b.Source.Kind {
			return compare(a.Source.Kind, b.Source.Kind)
		}
		return compare(a.Source.Name, b.Source.Name)
	})
	return out
}

// settled reports whether m belongs to the fan-out of the change its last restart answered: it
// recorded one and is not open for a newer change.
func settled(m Member) bool {
	return m.RestartedFor.Kind != "" && !(m.Outcome.Open() && m.Observed.After(m.RestartedAt.Truncate(time.Microsecond)))
}

// Consumer is a workload of the fan-out's namespace that reads its source and that a KickPolicy
// selects (KICK restarts it for the change), as the caller read it.
type Consumer struct {
	Target string // "Kind/name"
	// Carries reports whether its running pods started after the change, so they read it.
	Carries bool
	// Labels are the workload's labels, for the policy's workload selector.
	Labels map[string]string
}

// WithPending returns g with the consumers of its source that KICK has not restarted for its
// change yet counted as Pending (and in Workloads): those whose running pods do not carry the
// change and that no request answers it for (no request of members restarted for the change or
// waits to). Without a restart budget KICK writes a request only as it restarts the workload,
// so these are the restarts still to come; they keep the fan-out open. A consumer that carries
// the change without such a request (it started after the change by other means) is no restart
// of the fan-out and is not counted. members are those Build grouped.
func WithPending(g Group, members []Member, consumers []Consumer) Group {
	answered := make(map[string]bool, len(members))
	for _, m := range members {
		if m.Namespace == g.Namespace && m.Target != "" && answers(m, g.Key) {
			answered[m.Target] = true
		}
	}
	for _, c := range consumers {
		if !c.Carries && !answered[c.Target] {
			answered[c.Target] = true // a consumer listed twice counts once
			g.Pending++
			g.Workloads++
		}
	}
	return g
}

// answers reports whether m's request restarted for the change of k or, open, waits to restart
// for a change at k's time.
func answers(m Member, k Key) bool {
	if m.RestartedFor == k.Source && m.RestartedAt.Equal(k.ChangedAt) {
		return true
	}
	return m.Outcome.Open() && !m.Observed.IsZero() && m.Observed.Equal(k.ChangedAt.Truncate(time.Microsecond))
}

func compare(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// byObserved finds the group of m's namespace whose change has m's observed time (compared at
// microseconds, the precision the request stores); the first by source when several match.
func byObserved(groups map[Key]*Group, m Member) (Key, bool) {
	var found Key
	ok := false
	for k := range groups {
		if k.Namespace != m.Namespace || !k.ChangedAt.Truncate(time.Microsecond).Equal(m.Observed) {
			continue
		}
		if !ok || k.Source.String() < found.Source.String() {
			found, ok = k, true
		}
	}
	return found, ok
}

func add(groups map[Key]*Group, waves map[Key]map[int]bool, k Key, m Member) {
	g := groups[k]
	if g == nil {
		g = &Group{Key: k}
		groups[k] = g
	}
	g.Workloads++
	switch m.Outcome {
	case Succeeded:
		g.Succeeded++
	case Failed:
		g.Failed++
	case Held:
		g.Held++
	case Waiting:
		g.Waiting++
	default:
		g.InProgress++
	}
	if !m.Outcome.Open() && m.Completed.After(g.LastCompletion) {
		g.LastCompletion = m.Completed
	}
	if m.Wave > 0 {
		if waves[k] == nil {
			waves[k] = map[int]bool{}
		}
		waves[k][m.Wave] = true
	}
}

// Settle is how long a fan-out whose requests have all finished stays quiet before its summary
// is due. The consumers still to restart count as Pending (WithPending); a consumer KICK has
// just patched already carries the change in the cache a moment before its request shows
// there, and Settle covers that gap.
const Settle = 10 * time.Second

// Due reports whether the summary of g is due at now, with maxWait, and the summary's time:
// the last completion when every member finished (and Settle has passed since) no later than
// maxWait after the change, otherwise the change's time plus maxWait once that has passed. The
// time is read back from durable state the same way after a manager restart.
func Due(g Group, maxWait time.Duration, now time.Time) (time.Time, bool) {
	deadline := g.ChangedAt.Add(maxWait)
	if g.Open() == 0 && !g.LastCompletion.After(deadline) {
		return g.LastCompletion, !now.Before(g.LastCompletion.Add(Settle))
	}
	return deadline, !now.Before(deadline)
}

// NextCheck is when g should be looked at again (Due may change by the clock alone).
func NextCheck(g Group, maxWait time.Duration) time.Time {
	deadline := g.ChangedAt.Add(maxWait)
	if g.Open() == 0 && !g.LastCompletion.After(deadline) {
		return g.LastCompletion.Add(Settle)
	}
	return deadline
}
