package format

import (
	"github.com/kick-operator/kick/restart/tracing"
	"github.com/kick-operator/kick/router"
)

// Distributed tracing: a notification carries the W3C traceparent of the restart cycle it
// reports, so a receiver can join the cycle's trace. CloudEvents carry it as the distributed
// tracing extension attribute; every other format as the HTTP header.

// TraceparentHeader is the W3C Trace Context header; TraceparentExtension the CloudEvents
// distributed tracing extension attribute. Both are named "traceparent".
const (
	TraceparentHeader    = "traceparent"
	TraceparentExtension = "traceparent"
)

// Traceparent is the traceparent an event carries, parsed and formatted afresh as a version
// 00 W3C traceparent: a notification never echoes the text it came from (a request's
// annotation, which whoever may write the request may write), so neither control
// characters, extra fields nor tracestate reach a header or a CloudEvent. "" when the
// event has none or it does not parse.
func Traceparent(ev router.Event) string {
	var s string
	switch e := ev.(type) {
	case router.PhaseChanged:
		s = e.Traceparent
	case router.GateChanged:
		s = e.Traceparent
	}
	sc, _ := tracing.Parse(s)
	return tracing.Format(sc)
}

// traced adds the traceparent header to what a non-CloudEvents format renders.
type traced struct {
	Formatter
}

func (t traced) Format(ev router.Event) (Message, error) {
	m, err := t.Formatter.Format(ev)
	if err != nil {
		return m, err
	}
	if tp := Traceparent(ev); tp != "" {
		m.Header.Set(TraceparentHeader, tp)
	}
	return m, nil
}

// Summarize renders a summary, which belongs to no single restart cycle: no traceparent.
func (t traced) Summarize(s Summary) (Message, error) { return t.Formatter.Summarize(s) }
