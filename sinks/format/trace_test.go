package format

import (
	"strings"
	"testing"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/router"
)

const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

func withTrace(e *router.PhaseChanged) { e.Traceparent = traceparent }

// Every format but CloudEvents carries the traceparent as the HTTP header.
func TestTraceparentHeader(t *testing.T) {
	gate := router.GateChanged{Request: router.RequestRef{Namespace: "a", Name: "r", UID: "u"}, Target: router.ObjectRef{Kind: "Deployment", Name: "web"},
		Reason: string(kickv1alpha1.GateOutsideSchedule), Time: at, Traceparent: traceparent}
	for _, tc := range []struct {
		name string
		spec kickv1alpha1.WebhookSpec
		ev   router.Event
	}{
		{"json phase", kickv1alpha1.WebhookSpec{}, phaseChange(kickv1alpha1.PhaseSucceeded, withTrace)},
		{"json gate", kickv1alpha1.WebhookSpec{}, gate},
		{"slack", kickv1alpha1.WebhookSpec{Format: kickv1alpha1.FormatSlack}, phaseChange(kickv1alpha1.PhaseSucceeded, withTrace)},
		{"pagerduty", kickv1alpha1.WebhookSpec{Format: kickv1alpha1.FormatPagerDuty}, phaseChange(kickv1alpha1.PhaseFailed, withTrace)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := mustFormat(t, mustNew(t, tc.spec, "rk"), tc.ev)
			if got := m.Header.Get("Traceparent"); got != traceparent {
				t.Fatalf("traceparent header %q, want %q", got, traceparent)
			}
		})
	}
	m := mustFormat(t, mustNew(t, kickv1alpha1.WebhookSpec{}, ""), phaseChange(kickv1alpha1.PhaseSucceeded))
	if _, ok := m.Header["Traceparent"]; ok {
		t.Fatal("a header without a trace")
	}
}

// CloudEvents carry it as the distributed tracing extension, in both modes.
func TestTraceparentCloudEvents(t *testing.T) {
	for _, mode := range []kickv1alpha1.CloudEventsMode{kickv1alpha1.CloudEventsStructured, kickv1alpha1.CloudEventsBinary} {
		m := mustFormat(t, mustNew(t, ceSpec(mode), ""), phaseChange(kickv1alpha1.PhaseSucceeded, withTrace))
		e, _ := parseCloudEvent(t, m)
		if got := e.Extensions()[TraceparentExtension]; got != traceparent {
			t.Fatalf("%s: extension traceparent = %v, want %q", mode, got, traceparent)
		}
		if mode == kickv1alpha1.CloudEventsBinary && m.Header.Get("ce-traceparent") != traceparent {
			t.Fatalf("binary: ce-traceparent = %q", m.Header.Get("ce-traceparent"))
		}
		plain := mustFormat(t, mustNew(t, ceSpec(mode), ""), phaseChange(kickv1alpha1.PhaseSucceeded))
		if e, _ := parseCloudEvent(t, plain); e.Extensions()[TraceparentExtension] != nil {
			t.Fatalf("%s: extension without a trace", mode)
		}
	}
}

// TestTraceparentNeverEchoed plays whoever may write a request's
// annotations: a traceparent that parses but carries a later version's
// extra fields, CRLF and a forged header, tracestate or an overlong tail
// reaches the header and the CloudEvent only as its four canonical fields;
// one that does not parse reaches neither.
func TestTraceparentNeverEchoed(t *testing.T) {
	fields := traceparent[2:]
	specs := map[string]kickv1alpha1.WebhookSpec{
		"json": {}, "slack": {Format: kickv1alpha1.FormatSlack},
		"cloudevents structured": ceSpec(kickv1alpha1.CloudEventsStructured), "cloudevents binary": ceSpec(kickv1alpha1.CloudEventsBinary),
	}
	for _, tc := range []struct{ stored, want string }{
		{"01" + fields + "-x\r\nX-Injected: 1", traceparent},
		{"cc" + fields + "-" + strings.Repeat("a", 8192), traceparent},
		{"01" + fields + "-rojo=00f067aa0ba902b7,congo=t61rcWkgMzE", traceparent},
		{traceparent + "\r\nX-Injected: 1", ""},
		{"00-bad\r\nX-Injected: 1", ""},
	} {
		for name, spec := range specs {
			ev := phaseChange(kickv1alpha1.PhaseSucceeded, func(e *router.PhaseChanged) { e.Traceparent = tc.stored })
			m := mustFormat(t, mustNew(t, spec, "rk"), ev)
			for k, vs := range m.Header {
				for _, v := range vs {
					if strings.ContainsAny(v, "\r\n") || strings.Contains(v, "rojo") || strings.Contains(v, "aaaaaaaa") {
						t.Fatalf("%s: header %s carries the stored text: %q", name, k, v)
					}
				}
			}
			if strings.Contains(string(m.Body), "X-Injected") || strings.Contains(string(m.Body), "rojo") || strings.Contains(string(m.Body), "aaaaaaaa") {
				t.Fatalf("%s: the body carries the stored text", name)
			}
			got := m.Header.Get("Traceparent")
			if spec.Format == kickv1alpha1.FormatCloudEvents {
				e, _ := parseCloudEvent(t, m)
				got, _ = e.Extensions()[TraceparentExtension].(string)
			}
			if got != tc.want {
				t.Fatalf("%s: stored %.40q gave traceparent %q, want %q", name, tc.stored, got, tc.want)
			}
		}
	}
}
