package request

import (
	"context"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/assess"
	"github.com/kick-operator/kick/restart/freshness"
	"github.com/kick-operator/kick/restart/tracing"
	"github.com/kick-operator/kick/router"
)

const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// TestEventsCarryTheStoredTraceparent: phase and gate events (and so the
// notifications) carry the request's traceparent, only when it is valid and
// the manager created the request (a person's traceparent is theirs, see
// tracing.Of).
func TestEventsCarryTheStoredTraceparent(t *testing.T) {
	kr := &kickv1alpha1.KickRequest{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "deployment-web",
		Labels:      map[string]string{kickv1alpha1.ManagedByLabel: kickv1alpha1.ManagedByKick},
		Annotations: map[string]string{kickv1alpha1.TraceparentAnnotation: traceparent}},
		Status: kickv1alpha1.KickRequestStatus{Phase: kickv1alpha1.PhaseWaitingForGate, Gate: gateAt(kickv1alpha1.GateSuspended, "Suspend", time.Now())}}
	if got := phaseEvent(kr, "", nil, time.Now()).Traceparent; got != traceparent {
		t.Errorf("PhaseChanged.Traceparent = %q", got)
	}
	if got := gateEvent(kr, nil, time.Time{}).Traceparent; got != traceparent {
		t.Errorf("GateChanged.Traceparent = %q", got)
	}
	delete(kr.Labels, kickv1alpha1.ManagedByLabel)
	if got := phaseEvent(kr, "", nil, time.Now()).Traceparent; got != "" {
		t.Errorf("the traceparent of a person's request was passed on: %q", got)
	}
	kr.Labels[kickv1alpha1.ManagedByLabel] = kickv1alpha1.ManagedByKick
	kr.Annotations[kickv1alpha1.TraceparentAnnotation] = "forged\r\nheader"
	if got := phaseEvent(kr, "", nil, time.Now()).Traceparent; got != "" {
		t.Errorf("an invalid annotation was passed on: %q", got)
	}
}

// TestChangeSource: the span names the dependency whose record holds the
// latest change, else the source of the router event that handed it.
func TestChangeSource(t *testing.T) {
	t1 := time.Date(2026, 5, 1, 10, 0, 0, 1, time.UTC)
	t2 := t1.Add(time.Second)
	dep := func(kind, name, scope string, at time.Time) assess.DependencyResult {
		return assess.DependencyResult{Dependency: assess.Dependency{Kind: kind, Name: name}, Scope: scope, Change: freshness.At(at)}
	}
	a := assess.Assessment{Latest: freshness.At(t2), Dependencies: []assess.DependencyResult{
		dep("Secret", "old", assess.ScopeIn, t1), dep("ConfigMap", "out", assess.ScopeOut, t2), dep("Secret", "db", assess.ScopeIn, t2)}}
	if k, n := changeSource(a, handoff{}); k != "Secret" || n != "db" {
		t.Errorf("from records: %s/%s", k, n)
	}
	handed := handoff{change: freshness.At(t2), source: router.ObjectRef{Kind: "Secret", Name: "fresh"}}
	a.Dependencies = a.Dependencies[:1]
	if k, n := changeSource(a, handed); k != "Secret" || n != "fresh" {
		t.Errorf("from the event: %s/%s", k, n)
	}
	handed.change = freshness.At(t1)
	if k, n := changeSource(a, handed); k != "" || n != "" {
		t.Errorf("an older event named %s/%s", k, n)
	}
}

// TestHandoffKeepsTheNewestSource: the handed change is the newest, and so
// is the source it names.
func TestHandoffKeepsTheNewestSource(t *testing.T) {
	var h handedChanges
	k := WorkloadKey{Kind: "Deployment", Namespace: "shop", Name: "web"}
	t1 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	h.add(k, freshness.At(t1.Add(time.Second)), router.ObjectRef{Kind: "Secret", Name: "new"}, t1, false)
	h.add(k, freshness.At(t1), router.ObjectRef{Kind: "Secret", Name: "old"}, t1, false)
	if got := h.get(k); got.source.Name != "new" || !got.change.Latest.Equal(t1.Add(time.Second)) {
		t.Fatalf("handoff %+v", got)
	}
}

// TestTracingOffAllocatesNothing: with tracing off (no exporter, a nil
// Tracer) the driver's and the reconciler's tracing steps of a restart
// cycle allocate nothing.
func TestTracingOffAllocatesNothing(t *testing.T) {
	ctx := context.Background()
	d := &Driver{Now: time.Now}
	r := &Reconciler{Now: time.Now}
	k := WorkloadKey{Kind: "Deployment", Namespace: "shop", Name: "web"}
	a := assess.Assessment{Latest: freshness.At(time.Now()), Dependencies: []assess.DependencyResult{
		{Dependency: assess.Dependency{Kind: "Secret", Name: "db"}, Scope: assess.ScopeIn, Change: freshness.At(time.Now())}}}
	kr := &kickv1alpha1.KickRequest{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "deployment-web"}}
	allocs := testing.AllocsPerRun(1000, func() {
		tc := d.startChange(ctx, k, a, handoff{})
		if tc.Traceparent() != "" {
			t.Fatal("a traceparent with tracing off")
		}
		tc.Recorded(kr.Name, d.Now())
		d.Tracer.Restarted(ctx, tc.Traceparent(), changeCycle(k, a, handoff{}), d.Now(), d.Now())
		r.traceRestart(ctx, kr, a, r.Now())
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per restart cycle with tracing off", allocs)
	}
}

func parses(traceparent string) bool {
	_, ok := tracing.Parse(traceparent)
	return ok
}

// TestRetrace: a finished request the reconciler reopens itself gets the
// new cycle's traceparent, or loses the previous one with tracing off.
func TestRetrace(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := kickv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	rec := tracetest.NewSpanRecorder()
	on := tracing.New(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)))
	for _, tc := range []struct {
		name   string
		tracer *tracing.Tracer
	}{{"tracing on", on}, {"tracing off", nil}} {
		kr := &kickv1alpha1.KickRequest{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "deployment-web",
			Annotations: map[string]string{kickv1alpha1.TraceparentAnnotation: traceparent}}}
		c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(kr).Build()
		s := &step{r: &Reconciler{Client: c, Tracer: tc.tracer, Now: time.Now}, kr: kr.DeepCopy(), a: assess.Assessment{Latest: freshness.At(time.Now())}}
		if err := s.retrace(context.Background()); err != nil {
			t.Fatal(err)
		}
		var stored kickv1alpha1.KickRequest
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(kr), &stored); err != nil {
			t.Fatal(err)
		}
		got, ok := stored.Annotations[kickv1alpha1.TraceparentAnnotation]
		switch {
		case tc.tracer == nil && ok:
			t.Errorf("%s: the previous cycle's traceparent %q stayed", tc.name, got)
		case tc.tracer != nil && (got == traceparent || !parses(got)):
			t.Errorf("%s: traceparent %q, want the new cycle's", tc.name, got)
		}
		if s.kr.Annotations[kickv1alpha1.TraceparentAnnotation] != got {
			t.Errorf("%s: the step's copy was not updated", tc.name)
		}
	}
	if spans := rec.Ended(); len(spans) != 1 || spans[0].Name() != tracing.SpanChanged {
		t.Fatalf("recorded %d spans, want one dependency.changed", len(spans))
	}
}
