// Package format turns a KickRequest phase change or gate change, or a fan-out summary, into the
// HTTP body and headers of one webhook delivery, in the format a NotificationPolicy asks for: KICK's JSON document,
// CloudEvents, Slack or PagerDuty. It is pure: nothing here sends, retries, signs or reads Secrets.
package format

import (
	"errors"
	"fmt"
	"net/http"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/router"
)

// Message is one HTTP request body and its headers, ready to send. The dispatcher adds transport
// headers (auth, signing, the policy's static headers) on top of Header.
type Message struct {
	Body   []byte
	Header http.Header // Content-Type, and ce-* attributes for binary CloudEvents
}

// Formatter renders a phase change or a gate change in one NotificationPolicy's format.
// Implementations are immutable after New and safe for concurrent use.
type Formatter interface {
	// Format renders ev, a router.PhaseChanged or router.GateChanged. It returns ErrSkip when
	// the format has nothing to say about the event (PagerDuty only triggers and resolves
	// incidents, so it skips most phases and every gate change).
	Format(ev router.Event) (Message, error)
	// Summarize renders a fan-out summary (spec.rollUp).
	Summarize(s Summary) (Message, error)
}

// ErrSkip is returned by Format when the event produces no delivery for this format. The
// dispatcher treats it as "nothing to send": neither a success nor a failure.
var ErrSkip = errors.New("format: nothing to send for this event")

// unsupported is the error for an event kind no format renders.
func unsupported(ev router.Event) error {
	return fmt.Errorf("format: cannot render a %s event", ev.Kind())
}

// document is KICK's JSON document for ev: a Payload for a phase change, a GatePayload for a
// gate change. It is the json body and the CloudEvents data.
func document(ev router.Event) (any, error) {
	switch e := ev.(type) {
	case router.PhaseChanged:
		return NewPayload(e), nil
	case router.GateChanged:
		return NewGatePayload(e), nil
	}
	return nil, unsupported(ev)
}

// New returns the Formatter for spec.Format (json when empty). routingKey is the PagerDuty
// integration key the caller read from spec.PagerDuty.RoutingKey; other formats ignore it.
func New(spec kickv1alpha1.WebhookSpec, routingKey string) (Formatter, error) {
	switch spec.Format {
	case "", kickv1alpha1.FormatJSON:
		return traced{jsonFormatter{}}, nil
	case kickv1alpha1.FormatCloudEvents:
		mode := kickv1alpha1.CloudEventsStructured
		if spec.CloudEvents != nil && spec.CloudEvents.Mode != "" {
			mode = spec.CloudEvents.Mode
		}
		return newCloudEvents(mode)
	case kickv1alpha1.FormatSlack:
		return traced{slackFormatter{}}, nil
	case kickv1alpha1.FormatPagerDuty:
		var pd kickv1alpha1.PagerDutySpec
		if spec.PagerDuty != nil {
			pd = *spec.PagerDuty
		}
		f, err := newPagerDuty(pd, routingKey)
		if err != nil {
			return nil, err
		}
		return traced{f}, nil
	}
	return nil, fmt.Errorf("unknown payload format %q", spec.Format)
}

// EventID is the delivery id of an event: for a phase change, derived from the request UID, the
// phase entered and the transition time (PhaseChanged.TransitionID); for a gate change, from the
// request UID, the gate reason and the decision time (GateChanged.DecisionID). It is the same on
// every retry and after a manager restart, and differs between transitions and decisions. It is
// the CloudEvents id and the webhook-id. Other event kinds have none ("").
func EventID(ev router.Event) string {
	switch e := ev.(type) {
	case router.PhaseChanged:
		return e.TransitionID()
	case router.GateChanged:
		return e.DecisionID()
	}
	return ""
}
