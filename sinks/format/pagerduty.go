package format

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/router"
)

// PagerDuty Events API v2 limits.
const (
	pagerDutySummaryMax  = 1024
	pagerDutyDedupKeyMax = 255
)

// pagerDutyFormatter renders PagerDuty Events API v2 events. A Failed request triggers an
// incident for its workload; a later Succeeded or NoLongerRequired (UpToDate) for the same
// workload resolves it; every other phase, DryRun included, and every gate change is skipped
// with ErrSkip: waiting for a gate is KICK working as configured, not an incident.
//
// Incidents are keyed per workload (see DedupKey), so the failure and its later resolution
// meet even when they come from different KickRequests, and a failure after a resolution
// opens a new incident (PagerDuty starts a new incident for a key whose incident is resolved).
// A resolve for a workload without an open incident is accepted and ignored by PagerDuty.
type pagerDutyFormatter struct {
	routingKey string
	severity   kickv1alpha1.PagerDutySeverity
	source     string // overrides the default source when set
}

func newPagerDuty(spec kickv1alpha1.PagerDutySpec, routingKey string) (Formatter, error) {
	if routingKey == "" {
		return nil, errors.New("pagerduty format needs a routing key")
	}
	sev := spec.Severity
	switch sev {
	case "":
		sev = kickv1alpha1.SeverityError
	case kickv1alpha1.SeverityCritical, kickv1alpha1.SeverityError, kickv1alpha1.SeverityWarning, kickv1alpha1.SeverityInfo:
	default:
		return nil, fmt.Errorf("unknown PagerDuty severity %q", sev)
	}
	return pagerDutyFormatter{routingKey: routingKey, severity: sev, source: spec.Source}, nil
}

type pagerDutyEvent struct {
	RoutingKey  string            `json:"routing_key"`
	EventAction string            `json:"event_action"` // trigger or resolve
	DedupKey    string            `json:"dedup_key"`
	Client      string            `json:"client,omitempty"`
	Payload     *pagerDutyPayload `json:"payload,omitempty"` // trigger only
}

type pagerDutyPayload struct {
	Summary       string  `json:"summary"`
	Source        string  `json:"source"`
	Severity      string  `json:"severity"`
	Timestamp     string  `json:"timestamp,omitempty"`
	Component     string  `json:"component"`
	Group         string  `json:"group"`
	Class         string  `json:"class"`
	CustomDetails Payload `json:"custom_details"`
}

func (f pagerDutyFormatter) Format(e router.Event) (Message, error) {
	ev, ok := e.(router.PhaseChanged)
	if !ok {
		if _, gate := e.(router.GateChanged); gate {
			return Message{}, ErrSkip
		}
		return Message{}, unsupported(e)
	}
	outcome, outcomeMessage := outcomeOf(ev)
	out := pagerDutyEvent{RoutingKey: f.routingKey, DedupKey: DedupKey(ev)}
	switch kickv1alpha1.KickRequestPhase(ev.To) {
	case kickv1alpha1.PhaseFailed:
		d := describe(ev, outcome, outcomeMessage)
		source := f.source
		if source == "" {
			source = ev.Request.Namespace + "/" + ev.Target.Kind + "/" + ev.Target.Name
		}
		out.EventAction = "trigger"
		out.Client = "KICK"
		out.Payload = &pagerDutyPayload{
			Summary:       truncate(d.Text(), pagerDutySummaryMax),
			Source:        source,
			Severity:      string(f.severity),
			Component:     ev.Target.Kind + "/" + ev.Target.Name,
			Group:         ev.Request.Namespace,
			Class:         ev.To,
			CustomDetails: payloadOf(ev, d),
		}
		if !ev.Time.IsZero() {
			out.Payload.Timestamp = ev.Time.UTC().Format(time.RFC3339Nano)
		}
	case kickv1alpha1.PhaseSucceeded, kickv1alpha1.PhaseNoLongerRequired:
		if outcome == ReasonCoalesced {
			// Another request still works on the workload: nothing is resolved yet.
			return Message{}, ErrSkip
		}
		out.EventAction = "resolve"
	default:
		return Message{}, ErrSkip
	}
	return jsonMessage(out)
}

// Summarize triggers one PagerDuty event per fan-out, deduplicated per change (SummaryDedupKey),
// so a summary sent again after a manager restart updates the same alert. Its severity says
// how the fan-out went: the policy's severity (default error) when a restart failed, warning
// when restarts are still open or held when it is sent, info when every restart succeeded.
func (f pagerDutyFormatter) Summarize(s Summary) (Message, error) {
	sev := kickv1alpha1.SeverityInfo
	class := "FanOutSucceeded"
	switch {
	case s.Failed > 0:
		sev, class = f.severity, "FanOutFailed"
	case !s.Finished():
		sev, class = kickv1alpha1.SeverityWarning, "FanOutOpen"
	}
	source := f.source
	if source == "" {
		source = s.Namespace + "/" + s.SourceKind + "/" + s.SourceName
	}
	return jsonMessage(summaryEvent{
		RoutingKey:  f.routingKey,
		EventAction: "trigger",
		DedupKey:    SummaryDedupKey(s),
		Client:      "KICK",
		Payload: summaryAlert{
			Summary:       truncate(s.Text()+".", pagerDutySummaryMax),
			Source:        source,
			Severity:      string(sev),
			Timestamp:     s.Time.UTC().Format(time.RFC3339Nano),
			Component:     s.SourceKind + "/" + s.SourceName,
			Group:         s.Namespace,
			Class:         class,
			CustomDetails: NewSummaryPayload(s),
		},
	})
}

type summaryEvent struct {
	RoutingKey  string       `json:"routing_key"`
	EventAction string       `json:"event_action"`
	DedupKey    string       `json:"dedup_key"`
	Client      string       `json:"client"`
	Payload     summaryAlert `json:"payload"`
}

type summaryAlert struct {
	Summary       string         `json:"summary"`
	Source        string         `json:"source"`
	Severity      string         `json:"severity"`
	Timestamp     string         `json:"timestamp"`
	Component     string         `json:"component"`
	Group         string         `json:"group"`
	Class         string         `json:"class"`
	CustomDetails SummaryPayload `json:"custom_details"`
}

// SummaryDedupKey is the PagerDuty dedup_key of a fan-out summary:
// "kick:fanout:<namespace>/<Kind>/<name>@<change time, RFC 3339 UTC with nanoseconds>", or
// "kick:fanout:sha256:<hex>" of that string when it would exceed 255 characters. One per change
// of a source, apart from the per-workload keys of DedupKey.
func SummaryDedupKey(s Summary) string {
	key := "kick:fanout:" + s.Namespace + "/" + s.SourceKind + "/" + s.SourceName + "@" + s.ChangedAt.UTC().Format(time.RFC3339Nano)
	if len(key) <= pagerDutyDedupKeyMax {
		return key
	}
	sum := sha256.Sum256([]byte(key))
	return "kick:fanout:sha256:" + hex.EncodeToString(sum[:])
}

// DedupKey is the PagerDuty dedup_key of a workload: "kick:<namespace>/<kind>/<name>", or
// "kick:sha256:<hex>" of that string when it would exceed PagerDuty's 255 characters. It is
// the same for every request about the workload, so a resolve closes the incident a failure
// opened.
func DedupKey(ev router.PhaseChanged) string {
	key := "kick:" + ev.Request.Namespace + "/" + ev.Target.Kind + "/" + ev.Target.Name
	if len(key) <= pagerDutyDedupKeyMax {
		return key
	}
	sum := sha256.Sum256([]byte(key))
	return "kick:sha256:" + hex.EncodeToString(sum[:])
}

// truncate cuts s to at most max characters, ending a cut string with an ellipsis.
func truncate(s string, max int) string {
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	n := 0
	for i := range s {
		if n == max-1 {
			return s[:i] + "…"
		}
		n++
	}
	return s
}
