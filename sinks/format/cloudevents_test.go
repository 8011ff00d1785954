package format

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/cloudevents/sdk-go/v2/event"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/router"
)

func ceSpec(mode kickv1alpha1.CloudEventsMode) kickv1alpha1.WebhookSpec {
	return kickv1alpha1.WebhookSpec{Format: kickv1alpha1.FormatCloudEvents, CloudEvents: &kickv1alpha1.CloudEventsSpec{Mode: mode}}
}

// parseCloudEvent reads a Message back with the SDK, as a receiver would.
func parseCloudEvent(t *testing.T, m Message) (*event.Event, binding.Encoding) {
	t.Helper()
	msg := cehttp.NewMessage(m.Header.Clone(), io.NopCloser(bytes.NewReader(m.Body)))
	enc := msg.ReadEncoding()
	e, err := binding.ToEvent(context.Background(), msg)
	if err != nil {
		t.Fatalf("parse CloudEvent: %v\nheaders %v\nbody %s", err, m.Header, m.Body)
	}
	return e, enc
}

func TestCloudEvents(t *testing.T) {
	jsonF := mustNew(t, kickv1alpha1.WebhookSpec{}, "")
	cases := []struct {
		name        string
		mode        kickv1alpha1.CloudEventsMode
		phase       kickv1alpha1.KickRequestPhase
		wantType    string
		encoding    binding.Encoding
		contentType string
	}{
		{"structured succeeded", kickv1alpha1.CloudEventsStructured, kickv1alpha1.PhaseSucceeded,
			"io.corewire.kick.request.succeeded.v1", binding.EncodingStructured, "application/cloudevents+json"},
		{"structured no longer required", kickv1alpha1.CloudEventsStructured, kickv1alpha1.PhaseNoLongerRequired,
			"io.corewire.kick.request.nolongerrequired.v1", binding.EncodingStructured, "application/cloudevents+json"},
		{"binary failed", kickv1alpha1.CloudEventsBinary, kickv1alpha1.PhaseFailed,
			"io.corewire.kick.request.failed.v1", binding.EncodingBinary, "application/json"},
		{"binary waiting", kickv1alpha1.CloudEventsBinary, kickv1alpha1.PhaseWaitingForGate,
			"io.corewire.kick.request.waitingforgate.v1", binding.EncodingBinary, "application/json"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ev := phaseChange(tc.phase, func(e *router.PhaseChanged) { e.Reason = `ticket "OPS-1" <urgent>` })
			m := mustFormat(t, mustNew(t, ceSpec(tc.mode), ""), ev)
			if ct := m.Header.Get("Content-Type"); !strings.HasPrefix(ct, tc.contentType) {
				t.Errorf("Content-Type = %q, want %q", ct, tc.contentType)
			}
			e, enc := parseCloudEvent(t, m)
			if enc != tc.encoding {
				t.Errorf("encoding = %v, want %v", enc, tc.encoding)
			}
			checks := []struct{ attr, got, want string }{
				{"specversion", e.SpecVersion(), "1.0"},
				{"id", e.ID(), ev.TransitionID()},
				{"type", e.Type(), tc.wantType},
				{"source", e.Source(), "/apis/kick.corewire.io/v1alpha1/namespaces/team-a/kickrequests/api-0f3c"},
				{"subject", e.Subject(), "Deployment/api"},
				{"datacontenttype", e.DataContentType(), "application/json"},
				{"dataschema", e.DataSchema(), ""},
			}
			for _, c := range checks {
				if c.got != c.want {
					t.Errorf("%s = %q, want %q", c.attr, c.got, c.want)
				}
			}
			if !e.Time().Equal(ev.Time) {
				t.Errorf("time = %v, want %v", e.Time(), ev.Time)
			}
			if len(e.Extensions()) != 0 {
				t.Errorf("extensions = %v, want none", e.Extensions())
			}
			if err := e.Validate(); err != nil {
				t.Errorf("Validate: %v", err)
			}
			// The data is KICK's JSON document (in structured mode the SDK re-encodes it inside
			// the event, so compare decoded values there).
			want := mustFormat(t, jsonF, ev).Body
			if !reflect.DeepEqual(decodeObject(t, e.Data()), decodeObject(t, want)) {
				t.Errorf("data = %s\nwant %s", e.Data(), want)
			}
			if tc.mode == kickv1alpha1.CloudEventsBinary {
				if !bytes.Equal(m.Body, want) {
					t.Errorf("binary body = %s, want the JSON document", m.Body)
				}
				if m.Header.Get("Ce-Id") != ev.TransitionID() || m.Header.Get("Ce-Specversion") != "1.0" {
					t.Errorf("ce-* headers = %v", m.Header)
				}
			} else {
				obj := decodeObject(t, m.Body)
				if _, ok := obj["data"].(map[string]any); !ok {
					t.Errorf("structured data is not a JSON object: %s", m.Body)
				}
				if _, ok := obj["data_base64"]; ok {
					t.Errorf("structured event uses data_base64: %s", m.Body)
				}
				if len(m.Header) != 1 {
					t.Errorf("structured headers = %v, want only Content-Type", m.Header)
				}
			}
		})
	}
}

func TestCloudEventsIDDeterministic(t *testing.T) {
	for _, mode := range []kickv1alpha1.CloudEventsMode{kickv1alpha1.CloudEventsStructured, kickv1alpha1.CloudEventsBinary} {
		f := mustNew(t, ceSpec(mode), "")
		ev := phaseChange(kickv1alpha1.PhaseSucceeded)
		first, _ := parseCloudEvent(t, mustFormat(t, f, ev))
		m1, m2 := mustFormat(t, f, ev), mustFormat(t, f, ev)
		second, _ := parseCloudEvent(t, m2)
		if first.ID() != second.ID() || !bytes.Equal(m1.Body, m2.Body) {
			t.Errorf("%s: two renderings of one transition differ: %s / %s", mode, first.ID(), second.ID())
		}
		later := ev
		later.Time = ev.Time.Add(time.Second)
		third, _ := parseCloudEvent(t, mustFormat(t, f, later))
		if third.ID() == first.ID() {
			t.Errorf("%s: a later transition reuses id %s", mode, first.ID())
		}
	}
}

func TestCloudEventsZeroTime(t *testing.T) {
	f := mustNew(t, ceSpec(kickv1alpha1.CloudEventsBinary), "")
	m := mustFormat(t, f, phaseChange(kickv1alpha1.PhaseSucceeded, func(e *router.PhaseChanged) { e.Time = time.Time{} }))
	if _, ok := m.Header[http.CanonicalHeaderKey("ce-time")]; ok {
		t.Errorf("ce-time set for an unknown time: %v", m.Header)
	}
}

// TestHTTPWriterMatchesSDK: the writer produces what the SDK's
// protocol/http WriteRequest does, in both modes.
func TestHTTPWriterMatchesSDK(t *testing.T) {
	e := event.New(event.CloudEventsVersionV1)
	e.SetID("id-1")
	e.SetType(CloudEventType(string(kickv1alpha1.PhaseSucceeded)))
	e.SetSource(CloudEventSource("ns", "req"))
	e.SetSubject("Deployment/web")
	e.SetTime(time.Date(2026, 12, 1, 23, 0, 0, 123456789, time.UTC))
	e.SetExtension(TraceparentExtension, "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	e.SetDataContentType(event.ApplicationJSON)
	e.DataEncoded = []byte(`{"phase":"Succeeded"}`)
	for name, force := range map[string]func(context.Context) context.Context{
		"structured": binding.WithForceStructured, "binary": binding.WithForceBinary,
	} {
		t.Run(name, func(t *testing.T) {
			ctx := force(context.Background())
			req := &http.Request{Header: make(http.Header)}
			if err := cehttp.WriteRequest(ctx, binding.ToMessage(&e), req); err != nil {
				t.Fatal(err)
			}
			want, err := io.ReadAll(req.Body)
			if err != nil {
				t.Fatal(err)
			}
			w := &httpWriter{header: make(http.Header)}
			if _, err := binding.Write(ctx, binding.ToMessage(&e), w, w); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(w.header, req.Header) {
				t.Errorf("headers\n got %v\nwant %v", w.header, req.Header)
			}
			if !bytes.Equal(w.body, want) {
				t.Errorf("body\n got %s\nwant %s", w.body, want)
			}
		})
	}
}
