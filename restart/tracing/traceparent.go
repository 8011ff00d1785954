package tracing

import (
	"go.opentelemetry.io/otel/trace"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
)

// traceparentLen is the length of a version 00 traceparent:
// "00-" + 32 hex trace id + "-" + 16 hex parent id + "-" + 2 hex flags.
const traceparentLen = 55

// Parse reads a W3C traceparent header value. It accepts what the Trace Context
// specification accepts: lower-case hex, a version other than ff (a version after 00 may
// carry more fields after a dash), and non-zero trace and parent ids. The span context is
// marked remote.
func Parse(s string) (trace.SpanContext, bool) {
	if len(s) < traceparentLen || s[2] != '-' || s[35] != '-' || s[52] != '-' {
		return trace.SpanContext{}, false
	}
	version, ok := hexByte(s[0:2])
	if !ok || version == 0xff || (version == 0 && len(s) != traceparentLen) ||
		(len(s) > traceparentLen && s[traceparentLen] != '-') {
		return trace.SpanContext{}, false
	}
	flags, ok := hexByte(s[53:55])
	if !ok || !lowerHex(s[3:35]) || !lowerHex(s[36:52]) {
		return trace.SpanContext{}, false
	}
	tid, err := trace.TraceIDFromHex(s[3:35])
	if err != nil {
		return trace.SpanContext{}, false
	}
	sid, err := trace.SpanIDFromHex(s[36:52])
	if err != nil {
		return trace.SpanContext{}, false
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: tid, SpanID: sid, TraceFlags: trace.TraceFlags(flags) & trace.FlagsSampled, Remote: true,
	})
	return sc, sc.IsValid()
}

// Format renders sc as a version 00 traceparent; "" when sc is not valid.
func Format(sc trace.SpanContext) string {
	if !sc.IsValid() {
		return ""
	}
	flags := "00"
	if sc.IsSampled() {
		flags = "01"
	}
	return "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + flags
}

// Of is the traceparent a KickRequest's notifications and restart span carry on from its
// TraceparentAnnotation: the parsed context re-formatted as a version 00 traceparent, never
// the stored text (whatever follows the four fields of a later version, tracestate or
// control characters is dropped). Only a request the manager created itself
// (ManagedByLabel) has one: the annotation of a request a person or CI created is theirs,
// and is followed only as a link (Foreign), never as a parent. "" when there is none or it
// does not parse.
func Of(kr *kickv1alpha1.KickRequest) string {
	if !createdByKick(kr) {
		return ""
	}
	sc, _ := stored(kr)
	return Format(sc)
}

// Foreign is the span context in the TraceparentAnnotation of a request a person or CI
// created (no ManagedByLabel): the restart span links to it rather than continuing it, so a
// request's author cannot make KICK's spans part of a trace of their choosing.
func Foreign(kr *kickv1alpha1.KickRequest) (trace.SpanContext, bool) {
	if createdByKick(kr) {
		return trace.SpanContext{}, false
	}
	return stored(kr)
}

func createdByKick(kr *kickv1alpha1.KickRequest) bool {
	return kr.Labels[kickv1alpha1.ManagedByLabel] == kickv1alpha1.ManagedByKick
}

func stored(kr *kickv1alpha1.KickRequest) (trace.SpanContext, bool) {
	s := kr.Annotations[kickv1alpha1.TraceparentAnnotation]
	if s == "" {
		return trace.SpanContext{}, false
	}
	return Parse(s)
}

func hexByte(s string) (byte, bool) {
	hi, ok1 := hexDigit(s[0])
	lo, ok2 := hexDigit(s[1])
	return hi<<4 | lo, ok1 && ok2
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if _, ok := hexDigit(s[i]); !ok {
			return false
		}
	}
	return true
}
