package format

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"
	"time"

	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/cloudevents/sdk-go/v2/binding/format"
	"github.com/cloudevents/sdk-go/v2/binding/spec"
	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/cloudevents/sdk-go/v2/types"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/router"
)

// CloudEvents attributes of a phase change and of a gate change:
//
//	specversion      1.0
//	id               EventID(ev): stable across retries
//	type             phase change: io.corewire.kick.request.<phase in lower case>.v1, e.g. ...request.succeeded.v1
//	                 gate change:  io.corewire.kick.gate.changed.v1 (CloudEventGateType)
//	source           /apis/kick.corewire.io/v1alpha1/namespaces/<namespace>/kickrequests/<name>
//	subject          <target kind>/<target name>, e.g. Deployment/web
//	time             the transition or decision time
//	datacontenttype  application/json
//	traceparent      the restart cycle's W3C traceparent (distributed tracing extension), when it has one
//	data             the Payload or GatePayload document
//
// A fan-out summary (Summarize) has type io.corewire.kick.fanout.summary.v1
// (CloudEventSummaryType), the source API path of the Secret or ConfigMap that changed
// (/api/v1/namespaces/<namespace>/secrets/<name>), subject <Kind>/<name>, time the summary's
// time and data the SummaryPayload document.
const cloudEventTypePrefix = "io.corewire.kick.request."

// CloudEventGateType is the CloudEvents type of a gate change.
const CloudEventGateType = "io.corewire.kick.gate.changed.v1"

// CloudEventType is the CloudEvents type of a transition into phase.
func CloudEventType(phase string) string {
	return cloudEventTypePrefix + strings.ToLower(phase) + ".v1"
}

// CloudEventSource is the CloudEvents source of events about a KickRequest: its API path.
func CloudEventSource(namespace, name string) string {
	return "/apis/" + kickv1alpha1.GroupVersion.Group + "/" + kickv1alpha1.GroupVersion.Version +
		"/namespaces/" + url.PathEscape(namespace) + "/kickrequests/" + url.PathEscape(name)
}

type cloudEventsFormatter struct {
	binary bool
}

func newCloudEvents(mode kickv1alpha1.CloudEventsMode) (Formatter, error) {
	switch mode {
	case kickv1alpha1.CloudEventsStructured:
		return cloudEventsFormatter{}, nil
	case kickv1alpha1.CloudEventsBinary:
		return cloudEventsFormatter{binary: true}, nil
	}
	return nil, fmt.Errorf("unknown CloudEvents mode %q", mode)
}

func (f cloudEventsFormatter) Format(ev router.Event) (Message, error) {
	var (
		typ      string
		request  router.RequestRef
		target   router.ObjectRef
		occurred time.Time
	)
	switch x := ev.(type) {
	case router.PhaseChanged:
		typ, request, target, occurred = CloudEventType(x.To), x.Request, x.Target, x.Time
	case router.GateChanged:
		typ, request, target, occurred = CloudEventGateType, x.Request, x.Target, x.Time
	default:
		return Message{}, unsupported(ev)
	}
	doc, err := document(ev)
	if err != nil {
		return Message{}, err
	}
	data, err := marshal(doc)
	if err != nil {
		return Message{}, err
	}
	e := event.New(event.CloudEventsVersionV1)
	e.SetID(EventID(ev))
	e.SetType(typ)
	e.SetSource(CloudEventSource(request.Namespace, request.Name))
	e.SetSubject(target.Kind + "/" + target.Name)
	if !occurred.IsZero() {
		e.SetTime(occurred)
	}
	if tp := Traceparent(ev); tp != "" {
		e.SetExtension(TraceparentExtension, tp)
	}
	return f.encode(e, data)
}

// Summarize renders a fan-out summary: type CloudEventSummaryType, source the API path of the
// Secret or ConfigMap, subject "<Kind>/<name>", data the SummaryPayload.
func (f cloudEventsFormatter) Summarize(s Summary) (Message, error) {
	data, err := marshal(NewSummaryPayload(s))
	if err != nil {
		return Message{}, err
	}
	e := event.New(event.CloudEventsVersionV1)
	e.SetID(s.ID())
	e.SetType(CloudEventSummaryType)
	e.SetSource(CloudEventSummarySource(s.Namespace, s.SourceKind, s.SourceName))
	e.SetSubject(s.SourceKind + "/" + s.SourceName)
	e.SetTime(s.Time)
	return f.encode(e, data)
}

// encode sets data (JSON) on e and writes it in the formatter's content mode.
func (f cloudEventsFormatter) encode(e event.Event, data []byte) (Message, error) {
	// Set the encoded data directly: SetData would mark a []byte as base64 data.
	e.SetDataContentType(event.ApplicationJSON)
	e.DataEncoded = data
	if err := e.Validate(); err != nil {
		return Message{}, fmt.Errorf("build CloudEvent: %w", err)
	}

	ctx := binding.WithForceStructured(context.Background())
	if f.binary {
		ctx = binding.WithForceBinary(context.Background())
	}
	w := &httpWriter{header: make(http.Header)}
	if _, err := binding.Write(ctx, binding.ToMessage(&e), w, w); err != nil {
		return Message{}, fmt.Errorf("encode CloudEvent: %w", err)
	}
	return Message{Body: w.body, Header: w.header}, nil
}

// httpWriter writes a CloudEvent in the HTTP protocol binding, as the SDK's
// protocol/http WriteRequest does: structured mode as the body with the
// format's media type, binary mode as Ce-* headers (Content-Type for
// datacontenttype) and the data as the body. The SDK's protocol/http
// package is not linked: it creates a logger with a 450 KB sampler while
// it initialises.
type httpWriter struct {
	header http.Header
	body   []byte
}

func (w *httpWriter) SetStructuredEvent(_ context.Context, f format.Format, event io.Reader) error {
	w.header.Set("Content-Type", f.MediaType())
	return w.SetData(event)
}

func (w *httpWriter) Start(context.Context) error { return nil }

func (w *httpWriter) End(context.Context) error { return nil }

func (w *httpWriter) SetData(data io.Reader) (err error) {
	w.body, err = io.ReadAll(data)
	return err
}

func (w *httpWriter) SetAttribute(attribute spec.Attribute, value any) error {
	name := textproto.CanonicalMIMEHeaderKey("ce-" + attribute.Name())
	if attribute.Kind() == spec.DataContentType {
		name = "Content-Type"
	}
	return w.set(name, value)
}

func (w *httpWriter) SetExtension(name string, value any) error {
	return w.set("Ce-"+strings.ToUpper(name[:1])+name[1:], value)
}

func (w *httpWriter) set(header string, value any) error {
	if value == nil {
		delete(w.header, header)
		return nil
	}
	s, err := types.Format(value)
	if err != nil {
		return err
	}
	w.header[header] = []string{s}
	return nil
}
