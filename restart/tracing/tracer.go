package tracing

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
)

// Span and event names of a restart cycle.
const (
	SpanChanged        = "dependency.changed"
	SpanRestarted      = "restart.executed"
	EventSourceChanged = "source.changed"
	EventRestarted     = "workload.restarted"
)

// Attribute keys of both spans.
const (
	AttrNamespace    = "k8s.namespace.name"
	AttrWorkloadKind = "kick.workload.kind"
	AttrWorkloadName = "kick.workload.name"
	AttrRequest      = "kick.request.name"
	AttrPolicy       = "kick.policy.name"
	AttrProvider     = "kick.provider"
	AttrSourceKind   = "kick.source.kind"
	AttrSourceName   = "kick.source.name"
)

// InstrumentationName names the tracer.
const InstrumentationName = "github.com/kick-operator/kick/restart/tracing"

// Cycle is what the spans of a restart cycle say about it. Names only: never Secret data, key
// names or fingerprints. Empty fields are left out.
type Cycle struct {
	Namespace    string
	WorkloadKind string
	WorkloadName string
	Request      string
	Policy       string
	Provider     string
	SourceKind   string
	SourceName   string
}

// Attributes are c's span attributes.
func (c Cycle) Attributes() []attribute.KeyValue {
	out := make([]attribute.KeyValue, 0, 8)
	for _, kv := range [...]struct{ k, v string }{
		{AttrNamespace, c.Namespace}, {AttrWorkloadKind, c.WorkloadKind}, {AttrWorkloadName, c.WorkloadName},
		{AttrRequest, c.Request}, {AttrPolicy, c.Policy}, {AttrProvider, c.Provider},
		{AttrSourceKind, c.SourceKind}, {AttrSourceName, c.SourceName},
	} {
		if kv.v != "" {
			out = append(out, attribute.String(kv.k, kv.v))
		}
	}
	return out
}

// Tracer records restart cycles. A nil Tracer records nothing: every method returns at once
// without allocating, so a manager without an exporter pays nothing per restart.
type Tracer struct {
	tracer trace.Tracer
}

// New records through tp.
func New(tp trace.TracerProvider) *Tracer {
	return &Tracer{tracer: tp.Tracer(InstrumentationName)}
}

// Change is a started dependency.changed span. The zero Change records nothing.
type Change struct {
	span trace.Span
}

// StartChange starts the dependency.changed span of a new cycle at changed (the observed
// change time θ), with the event source.changed at that time. Store its Traceparent on the
// request, then call Recorded; a Change never recorded is never exported.
func (t *Tracer) StartChange(ctx context.Context, c Cycle, changed time.Time) Change {
	if t == nil {
		return Change{}
	}
	return t.startChange(ctx, c, changed)
}

func (t *Tracer) startChange(ctx context.Context, c Cycle, changed time.Time) Change {
	attrs := c.Attributes()
	// A new trace: the cycle starts with the change, whatever the caller's context holds.
	_, span := t.tracer.Start(ctx, SpanChanged, trace.WithNewRoot(), trace.WithTimestamp(changed),
		trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	source := Cycle{SourceKind: c.SourceKind, SourceName: c.SourceName}
	span.AddEvent(EventSourceChanged, trace.WithTimestamp(changed), trace.WithAttributes(source.Attributes()...))
	return Change{span: span}
}

// Traceparent is the span's W3C traceparent, "" for the zero Change.
func (ch Change) Traceparent() string {
	if ch.span == nil {
		return ""
	}
	return Format(ch.span.SpanContext())
}

// Recorded ends the span at at, once its traceparent is stored on the request named request.
func (ch Change) Recorded(request string, at time.Time) {
	if ch.span == nil {
		return
	}
	ch.span.SetAttributes(attribute.String(AttrRequest, request))
	ch.span.End(trace.WithTimestamp(at))
}

// Restarted records the restart.executed span of the cycle whose stored traceparent is parent
// (a trace of its own when parent is empty or invalid) from start to end, with the event
// workload.restarted at end. parent must be KICK's own (a Change's Traceparent, or Of a
// request); RestartedRequest chooses for a request.
func (t *Tracer) Restarted(ctx context.Context, parent string, c Cycle, start, end time.Time) {
	if t == nil {
		return
	}
	sc, _ := Parse(parent)
	t.restarted(ctx, sc, trace.SpanContext{}, c, start, end)
}

// RestartedRequest records the restart.executed span of kr's restart: the child of the
// cycle's dependency.changed span when the manager created kr (Of), else a trace of its own
// that links to the traceparent the request's author stored, if any (Foreign).
func (t *Tracer) RestartedRequest(ctx context.Context, kr *kickv1alpha1.KickRequest, c Cycle, start, end time.Time) {
	if t == nil {
		return
	}
	parent, _ := Parse(Of(kr))
	link, _ := Foreign(kr)
	t.restarted(ctx, parent, link, c, start, end)
}

// restarted starts the span as the child of parent when it is valid, else as a new root
// linked to link when that is valid.
func (t *Tracer) restarted(ctx context.Context, parent, link trace.SpanContext, c Cycle, start, end time.Time) {
	opts := []trace.SpanStartOption{trace.WithTimestamp(start), trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(c.Attributes()...)}
	if parent.IsValid() {
		ctx = trace.ContextWithRemoteSpanContext(ctx, parent)
	} else {
		opts = append(opts, trace.WithNewRoot())
		if link.IsValid() {
			opts = append(opts, trace.WithLinks(trace.Link{SpanContext: link}))
		}
	}
	_, span := t.tracer.Start(ctx, SpanRestarted, opts...)
	span.AddEvent(EventRestarted, trace.WithTimestamp(end))
	span.End(trace.WithTimestamp(end))
}
