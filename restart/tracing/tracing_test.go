package tracing

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
)

const sample = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

func TestParseFormatRoundTrip(t *testing.T) {
	sc, ok := Parse(sample)
	if !ok {
		t.Fatal("valid traceparent refused")
	}
	if sc.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || sc.SpanID().String() != "00f067aa0ba902b7" || !sc.IsSampled() || !sc.IsRemote() {
		t.Fatalf("parsed %+v", sc)
	}
	if got := Format(sc); got != sample {
		t.Fatalf("Format = %q, want %q", got, sample)
	}
	unsampled, _ := Parse(strings.TrimSuffix(sample, "01") + "00")
	if Format(unsampled) != strings.TrimSuffix(sample, "01")+"00" {
		t.Fatalf("unsampled: %q", Format(unsampled))
	}
	if Format(trace.SpanContext{}) != "" {
		t.Fatal("an invalid span context must format as empty")
	}
}

func TestParseRefuses(t *testing.T) {
	for _, s := range []string{
		"",
		"garbage",
		strings.ToUpper(sample),
		"ff" + sample[2:], // version ff is invalid
		sample + "-extra", // version 00 has exactly four fields
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01", // zero trace id
		"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", // zero span id
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g",
		"00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"01" + sample[2:] + "x", // a later version needs a dash before more fields
	} {
		if _, ok := Parse(s); ok {
			t.Errorf("Parse(%q) accepted", s)
		}
	}
	if _, ok := Parse("01" + sample[2:] + "-more"); !ok {
		t.Error("a later version with more fields must parse")
	}
}

// kickRequest is a request with the traceparent annotation tp, created by
// the manager when byKick (ManagedByLabel), else by a person or CI.
func kickRequest(tp string, byKick bool) *kickv1alpha1.KickRequest {
	kr := &kickv1alpha1.KickRequest{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{kickv1alpha1.TraceparentAnnotation: tp}}}
	if byKick {
		kr.Labels = map[string]string{kickv1alpha1.ManagedByLabel: kickv1alpha1.ManagedByKick}
	}
	return kr
}

func TestOf(t *testing.T) {
	if got := Of(kickRequest(sample, true)); got != sample {
		t.Fatalf("Of = %q", got)
	}
	if Of(kickRequest("00-bad\r\nX-Injected: 1", true)) != "" {
		t.Fatal("an invalid stored traceparent must not be passed on")
	}
	if Of(&kickv1alpha1.KickRequest{}) != "" {
		t.Fatal("no annotation, no traceparent")
	}
}

// TestOfNeverEchoes plays whoever may write a request's annotations: a
// traceparent that parses but carries more (a later version's extra
// fields, CRLF and a forged header, tracestate, an overlong tail) is passed
// on as its four fields in canonical form, never as written.
func TestOfNeverEchoes(t *testing.T) {
	fields := sample[2:] // "-<trace id>-<span id>-01"
	for _, hostile := range []string{
		"01" + fields + "-x\r\nX-Injected: 1",
		"cc" + fields + "-" + strings.Repeat("a", 4096),
		"01" + fields + "-rojo=00f067aa0ba902b7,congo=t61rcWkgMzE",
		"01" + fields + "-\x00\x7f",
	} {
		if _, ok := Parse(hostile); !ok {
			t.Fatalf("fixture %q should parse (the specification admits a later version's tail)", hostile)
		}
		if got := Of(kickRequest(hostile, true)); got != sample {
			t.Errorf("Of(%.80q) = %.80q, want %q", hostile, got, sample)
		}
	}
}

// TestForeignTraceparent: the traceparent on a request a person or CI
// created is not KICK's to continue: Of is empty, Foreign returns it.
func TestForeignTraceparent(t *testing.T) {
	kr := kickRequest(sample, false)
	if got := Of(kr); got != "" {
		t.Fatalf("Of a request KICK did not create = %q, want none", got)
	}
	if sc, ok := Foreign(kr); !ok || Format(sc) != sample {
		t.Fatalf("Foreign = %v %t", sc, ok)
	}
	if _, ok := Foreign(kickRequest(sample, true)); ok {
		t.Fatal("KICK's own traceparent is not foreign")
	}
}

func FuzzParse(f *testing.F) {
	f.Add(sample)
	f.Add("01" + sample[2:] + "-x")
	f.Fuzz(func(t *testing.T, s string) {
		sc, ok := Parse(s)
		if !ok {
			return
		}
		// What parses round-trips to a version 00 value that parses to the same context.
		again, ok := Parse(Format(sc))
		if !ok || again.TraceID() != sc.TraceID() || again.SpanID() != sc.SpanID() || again.TraceFlags() != sc.TraceFlags() {
			t.Fatalf("%q: round trip gave %v", s, again)
		}
	})
}

func TestCycleSpans(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tr := New(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)))
	theta := time.Date(2026, 3, 1, 10, 0, 0, 123456789, time.UTC)
	c := Cycle{Namespace: "shop", WorkloadKind: "Deployment", WorkloadName: "web", Policy: "p", SourceKind: "Secret", SourceName: "db"}

	ch := tr.StartChange(context.Background(), c, theta)
	tp := ch.Traceparent()
	if _, ok := Parse(tp); !ok {
		t.Fatalf("traceparent %q", tp)
	}
	ch.Recorded("deployment-web", theta.Add(time.Second))
	// Another process, later: only the stored traceparent links the restart.
	c.Request, c.Provider = "deployment-web", "none"
	tr.Restarted(context.Background(), tp, c, theta.Add(2*time.Second), theta.Add(3*time.Second))

	spans := rec.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans", len(spans))
	}
	changed, restarted := spans[0], spans[1]
	if changed.Name() != SpanChanged || restarted.Name() != SpanRestarted {
		t.Fatalf("names %q, %q", changed.Name(), restarted.Name())
	}
	if restarted.SpanContext().TraceID() != changed.SpanContext().TraceID() || restarted.Parent().SpanID() != changed.SpanContext().SpanID() {
		t.Fatal("restart.executed is not the child of dependency.changed")
	}
	if !changed.StartTime().Equal(theta) || len(changed.Events()) != 1 || changed.Events()[0].Name != EventSourceChanged || !changed.Events()[0].Time.Equal(theta) {
		t.Fatalf("dependency.changed: start %v events %+v", changed.StartTime(), changed.Events())
	}
	if len(restarted.Events()) != 1 || restarted.Events()[0].Name != EventRestarted {
		t.Fatalf("restart.executed events %+v", restarted.Events())
	}
	want := map[attribute.Key]string{AttrNamespace: "shop", AttrWorkloadKind: "Deployment", AttrWorkloadName: "web",
		AttrRequest: "deployment-web", AttrPolicy: "p", AttrSourceKind: "Secret", AttrSourceName: "db"}
	for _, s := range spans {
		got := map[attribute.Key]string{}
		for _, kv := range s.Attributes() {
			got[kv.Key] = kv.Value.AsString()
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: %s = %q, want %q", s.Name(), k, got[k], v)
			}
		}
	}
}

func TestRestartedWithoutParentStartsATrace(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tr := New(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)))
	now := time.Now()
	tr.Restarted(context.Background(), "not-a-traceparent", Cycle{Namespace: "a"}, now, now)
	spans := rec.Ended()
	if len(spans) != 1 || spans[0].Parent().IsValid() || !spans[0].SpanContext().IsValid() {
		t.Fatalf("spans %+v", spans)
	}
}

// TestRestartedRequestLinksForeignTraces: the restart of a request KICK
// created continues its stored trace; the restart of a request a person or
// CI created (with a traceparent of their own) starts a trace of its own
// that links to theirs.
func TestRestartedRequestLinksForeignTraces(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tr := New(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)))
	now := time.Now()
	want, _ := Parse(sample)

	tr.RestartedRequest(context.Background(), kickRequest(sample, false), Cycle{Namespace: "a"}, now, now)
	tr.RestartedRequest(context.Background(), kickRequest(sample, true), Cycle{Namespace: "a"}, now, now)
	spans := rec.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans", len(spans))
	}
	user, kick := spans[0], spans[1]
	if user.Parent().IsValid() || user.SpanContext().TraceID() == want.TraceID() {
		t.Fatalf("a person's request parents the restart: parent %v trace %s", user.Parent(), user.SpanContext().TraceID())
	}
	if links := user.Links(); len(links) != 1 || !links[0].SpanContext.Equal(want) {
		t.Fatalf("a person's request: links %+v, want one to %s", links, sample)
	}
	if kick.Parent().SpanID() != want.SpanID() || kick.SpanContext().TraceID() != want.TraceID() || len(kick.Links()) != 0 {
		t.Fatalf("KICK's request: parent %v links %+v", kick.Parent(), kick.Links())
	}
}

func TestUnrecordedChangeIsNotExported(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tr := New(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)))
	_ = tr.StartChange(context.Background(), Cycle{}, time.Now())
	if n := len(rec.Ended()); n != 0 {
		t.Fatalf("%d spans exported for a change never stored", n)
	}
}

// TestDisabledAllocatesNothing: without an exporter the manager holds a nil
// Tracer, and a restart cycle costs no allocation.
func TestDisabledAllocatesNothing(t *testing.T) {
	var tr *Tracer
	ctx := context.Background()
	c := Cycle{Namespace: "shop", WorkloadKind: "Deployment", WorkloadName: "web", SourceKind: "Secret", SourceName: "db"}
	now := time.Now()
	allocs := testing.AllocsPerRun(1000, func() {
		ch := tr.StartChange(ctx, c, now)
		if ch.Traceparent() != "" {
			t.Fatal("traceparent without a tracer")
		}
		ch.Recorded("deployment-web", now)
		tr.Restarted(ctx, ch.Traceparent(), c, now, now)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per cycle with tracing off", allocs)
	}
}
