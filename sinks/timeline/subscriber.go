package timeline

import (
	"context"
	"slices"
	"time"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/router"
	"github.com/kick-operator/kick/sinks/timeline/entry"
)

// SubscriberName is the timeline's router subscription; its drops are
// counted in kick_router_dropped_total{subscriber="timeline"}.
const SubscriberName = "timeline"

// Subscribe opens the timeline's drop-oldest subscription: a slow reader
// of the timeline never holds up a publisher, let alone a restart.
func Subscribe(rt *router.Router, capacity int) (*router.Subscription, error) {
	return rt.Subscribe(SubscriberName, router.DropOldest, capacity, nil)
}

// Record adds the entries of ev to h until sub is closed or ctx ends.
func Record(ctx context.Context, sub *router.Subscription, h *History) error {
	var seq arrival
	return sub.Run(ctx, func(_ context.Context, ev router.Event) { h.Add(seq.order(FromRouter(ev))...) })
}

// arrival keeps live entries in the order they happened where their times
// cannot tell it. A gate decision or a request's creation is stored to the
// whole second, so the gate that a change at 12:00:07.531 closed would read
// 12:00:07.000, before the change. An entry stamped to the whole second is
// therefore shown a microsecond after the latest entry recorded before it
// for the same workload within that second (its ID keeps the stored time,
// so a rebuilt copy of it still counts once).
type arrival struct {
	last map[string]time.Time
}

// maxArrivals bounds the workloads arrival remembers; beyond it, those
// whose latest entry is over a second older than the newest are forgotten.
const maxArrivals = 10000

func (a *arrival) order(es []entry.Entry) []entry.Entry {
	if a.last == nil {
		a.last = map[string]time.Time{}
	}
	for i := range es {
		e := &es[i]
		k := e.Key()
		last, seen := a.last[k]
		if seen && e.Time.Nanosecond() == 0 && !last.Before(e.Time) && last.Sub(e.Time) < time.Second {
			e.Time = last.Add(time.Microsecond)
		}
		if !seen || e.Time.After(last) {
			a.last[k] = e.Time
		}
	}
	if len(a.last) > maxArrivals && len(es) > 0 {
		for k, t := range a.last {
			if es[0].Time.Sub(t) > time.Second {
				delete(a.last, k)
			}
		}
	}
	return es
}

// FromRouter turns a router event into entries: a source change once per
// consumer, a phase change or a gate decision on the request's target.
func FromRouter(ev router.Event) []entry.Entry {
	switch ev := ev.(type) {
	case router.SourceChanged:
		source := ev.Source.Kind + " " + ev.Source.Name
		out := make([]entry.Entry, 0, len(ev.Consumers))
		for _, c := range ev.Consumers {
			e := entry.NewChange(workloadOf(c), source, string(ev.Class), ev.ChangeTime, len(ev.Consumers))
			if slices.Contains(ev.KeysUnread, c) {
				e = entry.KeysUnread(e)
			}
			out = append(out, e)
		}
		return out
	case router.PhaseChanged:
		w := workloadOf(ev.Target)
		phase := entry.NewPhase(w, entry.Phase{
			Request: ev.Request.Name, From: ev.From, To: ev.To, At: ev.Time,
			Reason: ev.Reason, Outcome: ev.Outcome, OutcomeMessage: ev.OutcomeMessage,
		})
		if ev.From != string(kickv1alpha1.PhaseExecuting) && !ev.RestartedAt.IsZero() {
			// A quick restart was never announced as Executing.
			return []entry.Entry{entry.NewRestart(w, ev.Request.Name, ev.RestartedAt, 0), phase}
		}
		return []entry.Entry{phase}
	case router.GateChanged:
		return []entry.Entry{entry.NewGate(workloadOf(ev.Target), entry.GateDecision{
			Request: ev.Request.Name, Stage: ev.Stage, Reason: ev.Reason, Message: ev.Message,
			Allowed: ev.Allowed, At: ev.Time, Until: ev.OpensAt,
		})}
	}
	return nil
}

func workloadOf(r router.ObjectRef) entry.Workload {
	return entry.Workload{Namespace: r.Namespace, Kind: r.Kind, Name: r.Name}
}
