package sinks

import (
	"context"
	"slices"
	"time"

	"github.com/kick-operator/kick/router"
)

// ReplaySource rebuilds the events that describe where the KickRequests of a namespace stand
// now, with the times (and so the ids) they were announced with, for those not older than
// since. restart/request.Replayer implements it from the manager's cache.
type ReplaySource interface {
	Events(ctx context.Context, namespace string, since time.Time) ([]router.Event, error)
}

// publishLag bounds how long after its time an event is published: its time is taken when the
// KickRequest reconcile starts, the event is published after the status write. The watermark
// stays this far behind the clock, so an event not yet published when it is written is not
// counted as handled.
const publishLag = time.Minute

// pendingTimes counts, by time, the events a policy accepted and has not finished with: queued,
// being delivered, or waiting to be replayed.
type pendingTimes map[int64]int

func (p pendingTimes) add(t time.Time) { p[t.UnixNano()]++ }

func (p pendingTimes) done(t time.Time) {
	k := t.UnixNano()
	if p[k] <= 1 {
		delete(p, k)
		return
	}
	p[k]--
}

// oldest is the earliest pending time.
func (p pendingTimes) oldest() (time.Time, bool) {
	first, ok := int64(0), false
	for k := range p {
		if !ok || k < first {
			first, ok = k, true
		}
	}
	return time.Unix(0, first), ok
}

// watermark is the status.handledThrough to write at now: publishLag before now, but never
// after the oldest pending event, and not before floor (the last watermark, or the first
// reconcile of a new policy) unless an event that old is pending.
func watermark(now, floor time.Time, pending pendingTimes) time.Time {
	w := now.Add(-publishLag)
	if w.Before(floor) {
		w = floor
	}
	if t, ok := pending.oldest(); ok && t.Before(w) {
		w = t
	}
	return w
}

// replayFrom is the time from which a policy whose watermark is handled replays after a
// manager start at now: the watermark, but no earlier than window ago.
func replayFrom(handled, now time.Time, window time.Duration) time.Time {
	if from := now.Add(-window); handled.Before(from) {
		return from
	}
	return handled
}

// eventTime is the time an event's id is derived from.
func eventTime(ev router.Event) time.Time {
	switch e := ev.(type) {
	case router.PhaseChanged:
		return e.Time
	case router.GateChanged:
		return e.Time
	}
	return time.Time{}
}

// replayable keeps, oldest first, the events st delivers that are not older than from.
func replayable(st *policyState, evs []router.Event, from time.Time) []router.Event {
	var out []router.Event
	for _, ev := range evs {
		if st.wants(ev) && !eventTime(ev).Before(from) {
			out = append(out, ev)
		}
	}
	slices.SortStableFunc(out, func(a, b router.Event) int { return eventTime(a).Compare(eventTime(b)) })
	return out
}

// replay returns the events st replays when its worker starts: those a previous leader may not
// have delivered (see Options.Replay). They count as pending from here on, and the watermark
// moves again. On an error the watermark stays where it was, so a later leader replays them.
func (d *dispatcher) replay(ctx context.Context, st *policyState) []router.Event {
	st.mu.Lock()
	from, due := st.replayFrom, st.replaying
	st.mu.Unlock()
	if !due {
		return nil
	}
	evs, err := d.opts.Replay.Events(ctx, st.key.Namespace, from)
	if err != nil {
		if ctx.Err() == nil {
			d.log.Error(err, "reading the events to replay", "namespace", st.key.Namespace, "policy", st.key.Name)
		}
		return nil
	}
	evs = replayable(st, evs, from)
	st.mu.Lock()
	for _, ev := range evs {
		st.pending.add(eventTime(ev))
	}
	st.replaying = false
	st.mu.Unlock()
	if len(evs) > 0 {
		d.log.Info("replaying notifications a previous manager may not have delivered", "namespace", st.key.Namespace, "policy", st.key.Name, "events", len(evs), "since", from)
	}
	return evs
}
