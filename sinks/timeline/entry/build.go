package entry

import (
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
)

// NewChange is a change (class Relevant) or baseline (class Baseline) of
// source ("Secret db") seen by consumer w at time at.
func NewChange(w Workload, source, class string, at time.Time, consumers int) Entry {
	typ, summary := Change, source+" changed"
	if class == string(kickv1alpha1.ObservationBaseline) {
		typ, summary = Baseline, source+" recorded (baseline, no restart)"
	}
	return Entry{Time: at, Type: typ, Workload: w, Summary: summary, Reason: class, Source: source,
		Consumers: consumers, ID: id(typ, w, at, source)}
}

// KeysUnread marks a change entry of a consumer that reads only keys of
// the source the change left alone: it awaits no restart of that workload
// (unless its policy counts every key, restart.keys All).
func KeysUnread(e Entry) Entry {
	e.KeysUnread = true
	e.Summary = e.Source + " changed, but none of the keys it reads"
	return e
}

// Phase is one KickRequest phase transition.
type Phase struct {
	Request  string
	From, To string
	At       time.Time
	// Reason is the requester's free text; Outcome and OutcomeMessage the
	// Completed condition of a terminal phase.
	Reason, Outcome, OutcomeMessage string
}

// NewPhase is the entry for a request's transition: restart when it starts
// executing, completion, failure or finished when it ends, request
// otherwise.
func NewPhase(w Workload, p Phase) Entry {
	e := Entry{Time: p.At, Workload: w, Request: p.Request, Phase: p.To, Reason: p.Outcome, Message: p.OutcomeMessage}
	switch kickv1alpha1.KickRequestPhase(p.To) {
	case kickv1alpha1.PhaseExecuting:
		return NewRestart(w, p.Request, p.At, 0)
	case kickv1alpha1.PhaseSucceeded:
		e.Type, e.Summary = Completion, "rollout completed"
	case kickv1alpha1.PhaseFailed:
		e.Type, e.Summary, e.Warning = Failure, "request failed", true
	case kickv1alpha1.PhaseNoLongerRequired:
		e.Type, e.Summary = Finished, "no restart needed: the running rollout already carries the change"
	case kickv1alpha1.PhaseDryRun:
		e.Type, e.Summary = Finished, "dry run: a restart would have been issued"
	default:
		e.Type = Request
		if p.From == "" {
			e.Summary = "KickRequest " + p.Request + " created"
			if p.Reason != "" {
				e.Summary += " (" + p.Reason + ")"
			}
		} else {
			e.Summary = "request " + p.From + " → " + p.To
		}
	}
	if p.Outcome != "" && e.Type != Request {
		e.Summary += " (" + p.Outcome + ")"
	}
	if e.Type == Request {
		e.ID = id(Request, w, p.At, p.Request, p.To)
	} else {
		// Terminal times are stored to the second.
		e.ID = secondID(e.Type, w, p.At, p.Request)
	}
	return e
}

// NewRestart is KICK's restart patch of w at time at (count: the request's
// restart count, 0 when unknown).
func NewRestart(w Workload, request string, at time.Time, count int32) Entry {
	summary := "restarted by KICK"
	if count > 1 {
		summary += " (restart " + strconv.Itoa(int(count)) + " of this request)"
	}
	return Entry{Time: at, Type: Restart, Workload: w, Summary: summary, Request: request,
		Phase: string(kickv1alpha1.PhaseExecuting), ID: id(Restart, w, at, request)}
}

// GateDecision is one gate decision of a request.
type GateDecision struct {
	Request, Stage, Reason, Message string
	Allowed                         bool
	At                              time.Time
	Until                           time.Time // zero: unknown
}

// NewGate is a gate decision: the restart is held back, or may run again.
func NewGate(w Workload, g GateDecision) Entry {
	e := Entry{Time: g.At, Type: Gate, Workload: w, Request: g.Request, Stage: g.Stage, Reason: g.Reason,
		Message: g.Message, ID: secondID(Gate, w, g.At, g.Request, g.Reason)}
	if g.Allowed {
		e.Summary = "gate open"
	} else {
		e.Summary = "waiting"
		if g.Stage != "" {
			e.Summary += " at the " + g.Stage + " gate"
		}
		e.Summary += ": " + g.Reason
	}
	if !g.Until.IsZero() {
		u := g.Until
		e.Until = &u
	}
	return e
}

// TargetOf is the workload a KickRequest targets.
func TargetOf(kr *kickv1alpha1.KickRequest) Workload {
	return Workload{Namespace: kr.Namespace, Kind: string(kr.Spec.TargetRef.Kind), Name: kr.Spec.TargetRef.Name}
}

// FromRequest rebuilds what a KickRequest still tells: its creation, the
// newest dependency change it answers, the current gate decision while it
// holds the restart back, the last restart and how the request ended.
// Earlier cycles of a reopened request are gone from the object.
func FromRequest(kr *kickv1alpha1.KickRequest) []Entry {
	w := TargetOf(kr)
	st := &kr.Status
	out := []Entry{NewPhase(w, Phase{Request: kr.Name, To: string(kickv1alpha1.PhasePending),
		At: kr.CreationTimestamp.Time, Reason: kr.Spec.Reason})}
	if c := st.LatestObservedDependencyChange; c != nil {
		// The source's record, if it still holds this change, names it;
		// Dedupe then drops this anonymous one.
		e := NewChange(w, "", string(kickv1alpha1.ObservationRelevant), c.Time, 0)
		e.Summary = "a dependency changed (the newest change this request answers)"
		out = append(out, e)
	}
	if g := st.Gate; g != nil && g.LastEvaluated != nil && g.Reason != "" && g.Reason.Blocks() && !st.Phase.IsTerminal() {
		d := GateDecision{Request: kr.Name, Stage: g.Stage, Reason: string(g.Reason), Message: g.Message, At: g.LastEvaluated.Time}
		if g.RequeueAt != nil {
			d.Until = g.RequeueAt.Time
		}
		out = append(out, NewGate(w, d))
	}
	if st.LastRestartTime != nil {
		out = append(out, NewRestart(w, kr.Name, st.LastRestartTime.Time, st.RestartCount))
	}
	if st.Phase.IsTerminal() && st.CompletionTime != nil {
		p := Phase{Request: kr.Name, To: string(st.Phase), At: st.CompletionTime.Time}
		if c := meta.FindStatusCondition(st.Conditions, kickv1alpha1.ConditionCompleted); c != nil {
			p.Outcome, p.OutcomeMessage = c.Reason, c.Message
		}
		out = append(out, NewPhase(w, p))
	}
	// The earlier cycles a reopen kept: their restarts and outcomes, which
	// no Event may record (a quick restart writes none).
	for _, c := range st.History {
		if c.RestartedAt != nil {
			out = append(out, NewRestart(w, kr.Name, c.RestartedAt.Time, 0))
		}
		out = append(out, NewPhase(w, Phase{Request: kr.Name, To: string(c.Phase), At: c.CompletedAt.Time, Outcome: c.Reason}))
	}
	return out
}

// FromObservation is the last recorded change of a SourceObservation, once
// for each consumer.
func FromObservation(rec *kickv1alpha1.SourceObservation, consumers []Workload) []Entry {
	s := rec.Spec
	if s.LastRelevantChangeTime == nil {
		return nil
	}
	at := s.LastRelevantChangeTime.Time
	if s.Class == kickv1alpha1.ObservationBaseline && s.BaselineObservedAt != nil {
		at = s.BaselineObservedAt.Time
	}
	source := string(s.Source.Kind) + " " + s.Source.Name
	out := make([]Entry, 0, len(consumers))
	for _, w := range consumers {
		out = append(out, NewChange(w, source, string(s.Class), at, len(consumers)))
	}
	return out
}

// maxMessage bounds an Event message kept in an entry.
const maxMessage = 512

// FromEvent is a Kubernetes Event about workload w (or its KickRequest).
func FromEvent(ev *corev1.Event, w Workload) Entry {
	at := EventTime(ev)
	msg := ev.Message
	if len(msg) > maxMessage {
		msg = msg[:maxMessage] + "…"
	}
	about := ev.InvolvedObject.Kind
	if about == "KickRequest" {
		about += " " + ev.InvolvedObject.Name
	}
	e := Entry{Time: at, Type: Event, Workload: w, Reason: ev.Reason, Message: msg,
		Summary: about + ": " + ev.Reason, Warning: ev.Type == corev1.EventTypeWarning,
		ID: "event|" + string(ev.UID) + "|" + strconv.FormatInt(at.UnixMilli(), 10)}
	if msg != "" {
		e.Summary += ": " + firstLine(msg)
	}
	return e
}

// EventTime is when an Event last happened.
func EventTime(ev *corev1.Event) time.Time {
	switch {
	case ev.Series != nil && !ev.Series.LastObservedTime.IsZero():
		return ev.Series.LastObservedTime.Time
	case !ev.LastTimestamp.IsZero():
		return ev.LastTimestamp.Time
	case !ev.EventTime.IsZero():
		return ev.EventTime.Time
	case !ev.FirstTimestamp.IsZero():
		return ev.FirstTimestamp.Time
	}
	return ev.CreationTimestamp.Time
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}
