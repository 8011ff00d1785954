package timeline

import (
	"context"

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
	return sub.Run(ctx, func(_ context.Context, ev router.Event) { h.Add(FromRouter(ev)...) })
}

// FromRouter turns a router event into entries: a source change once per
// consumer, a phase change or a gate decision on the request's target.
func FromRouter(ev router.Event) []entry.Entry {
	switch ev := ev.(type) {
	case router.SourceChanged:
		source := ev.Source.Kind + " " + ev.Source.Name
		out := make([]entry.Entry, 0, len(ev.Consumers))
		for _, c := range ev.Consumers {
			out = append(out, entry.NewChange(workloadOf(c), source, string(ev.Class), ev.ChangeTime, len(ev.Consumers)))
		}
		return out
	case router.PhaseChanged:
		return []entry.Entry{entry.NewPhase(workloadOf(ev.Target), entry.Phase{
			Request: ev.Request.Name, From: ev.From, To: ev.To, At: ev.Time,
			Reason: ev.Reason, Outcome: ev.Outcome, OutcomeMessage: ev.OutcomeMessage,
		})}
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
