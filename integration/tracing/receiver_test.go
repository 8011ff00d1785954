package tracing

import (
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/grpc"
)

// span is one received span, flattened for assertions.
type span struct {
	Name         string
	TraceID      string
	SpanID       string
	ParentSpanID string
	StartNano    uint64
	EndNano      uint64
	Attrs        map[string]string
	Events       []event
	Resource     map[string]string
}

type event struct {
	Name     string
	TimeNano uint64
	Attrs    map[string]string
}

// receiver is an OTLP/gRPC trace collector on 127.0.0.1 that keeps every span.
type receiver struct {
	collectortrace.UnimplementedTraceServiceServer
	addr  string
	mu    sync.Mutex
	spans []span
}

func newReceiver(t *testing.T) *receiver {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &receiver{addr: lis.Addr().String()}
	srv := grpc.NewServer()
	collectortrace.RegisterTraceServiceServer(srv, r)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return r
}

// Export implements the OTLP trace service.
func (r *receiver) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		res := attrs(rs.GetResource().GetAttributes())
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				out := span{
					Name: s.GetName(), TraceID: hex.EncodeToString(s.GetTraceId()), SpanID: hex.EncodeToString(s.GetSpanId()),
					ParentSpanID: hex.EncodeToString(s.GetParentSpanId()), StartNano: s.GetStartTimeUnixNano(), EndNano: s.GetEndTimeUnixNano(),
					Attrs: attrs(s.GetAttributes()), Resource: res,
				}
				for _, e := range s.GetEvents() {
					out.Events = append(out.Events, event{Name: e.GetName(), TimeNano: e.GetTimeUnixNano(), Attrs: attrs(e.GetAttributes())})
				}
				r.spans = append(r.spans, out)
			}
		}
	}
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

func attrs(kvs []*commonpb.KeyValue) map[string]string {
	out := map[string]string{}
	for _, kv := range kvs {
		out[kv.GetKey()] = kv.GetValue().GetStringValue()
	}
	return out
}

// find returns the spans named name whose attribute key has value.
func (r *receiver) find(name, key, value string) []span {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []span
	for _, s := range r.spans {
		if s.Name == name && s.Attrs[key] == value {
			out = append(out, s)
		}
	}
	return out
}

func (r *receiver) all() []span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]span(nil), r.spans...)
}

// one waits for nothing: it says whether exactly one span matches.
func one(spans []span) (span, error) {
	if len(spans) != 1 {
		return span{}, fmt.Errorf("%d matching spans", len(spans))
	}
	return spans[0], nil
}

// hooks is a webhook endpoint on loopback that keeps each delivery's traceparent header.
type hooks struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []string
}

func newHooks(t *testing.T) *hooks {
	h := &hooks{}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.got = append(h.got, r.Header.Get("traceparent"))
		h.mu.Unlock()
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hooks) traceparents() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.got...)
}
