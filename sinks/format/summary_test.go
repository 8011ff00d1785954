package format

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/binding"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
)

var changedAt = time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)

// summary is the example of the docs: 212 workloads in 3 waves, one failed, finished after
// 4m12s; mods adjust it.
func summary(mods ...func(*Summary)) Summary {
	s := Summary{
		Policy: "policy-uid", Namespace: "web", SourceKind: "Secret", SourceName: "web-tls",
		ChangedAt: changedAt, Workloads: 212, Succeeded: 211, Failed: 1, Waves: 3,
		LastCompletion: changedAt.Add(4*time.Minute + 12*time.Second).Truncate(time.Second),
	}
	s.Time = s.LastCompletion
	for _, m := range mods {
		m(&s)
	}
	return s
}

// open is the summary sent when maxWait (15m) passed with restarts still open.
func open(s *Summary) {
	s.Succeeded, s.Failed, s.Held, s.Waiting, s.InProgress, s.Waves = 170, 2, 38, 1, 1, 0
	s.Time = s.ChangedAt.Add(15 * time.Minute)
}

func TestSummaryText(t *testing.T) {
	if got, want := summary().Text(), "Secret web/web-tls changed: 212 workloads, 3 waves, finished in 4m12s, 1 failed, 0 held"; got != want {
		t.Errorf("finished:\n got %q\nwant %q", got, want)
	}
	if got, want := summary(open).Text(), "Secret web/web-tls changed: 212 workloads, 2 failed, 38 held, 40 still open after 15m0s (1 rolling out, 1 waiting)"; got != want {
		t.Errorf("open:\n got %q\nwant %q", got, want)
	}
	one := summary(func(s *Summary) { s.Workloads, s.Succeeded, s.Failed, s.Waves = 1, 1, 0, 1 })
	if got, want := one.Text(), "Secret web/web-tls changed: 1 workload, 1 wave, finished in 4m12s, 0 failed, 0 held"; got != want {
		t.Errorf("one:\n got %q\nwant %q", got, want)
	}
}

// TestSummaryID: one id per policy and change, the same however often it is computed.
func TestSummaryID(t *testing.T) {
	a := summary()
	if len(a.ID()) != 32 || a.ID() != summary(open).ID() {
		t.Fatalf("id %q changes with the counts", a.ID())
	}
	for name, other := range map[string]Summary{
		"policy": summary(func(s *Summary) { s.Policy = "other" }),
		"change": summary(func(s *Summary) { s.ChangedAt = s.ChangedAt.Add(time.Nanosecond) }),
		"source": summary(func(s *Summary) { s.SourceName = "db" }),
		"kind":   summary(func(s *Summary) { s.SourceKind = "ConfigMap" }),
	} {
		if other.ID() == a.ID() {
			t.Errorf("another %s, same id", name)
		}
	}
}

// TestSummaryJSON: the JSON document has exactly these fields; waves only with waves,
// completedAt and duration null while nothing finished.
func TestSummaryJSON(t *testing.T) {
	m, err := mustNew(t, kickv1alpha1.WebhookSpec{}, "").Summarize(summary())
	if err != nil {
		t.Fatal(err)
	}
	if ct := m.Header.Get("Content-Type"); ct != "application/json" || len(m.Header) != 1 {
		t.Errorf("headers = %v", m.Header)
	}
	want := `{"event":"FanOutSummary","namespace":"web","source":{"kind":"Secret","name":"web-tls"},` +
		`"changedAt":"2026-03-01T12:00:00.123456789Z","finished":true,"workloads":212,"succeeded":211,"failed":1,` +
		`"held":0,"waiting":0,"inProgress":0,"open":0,"waves":3,"completedAt":"2026-03-01T12:04:12Z","durationSeconds":252,` +
		`"message":"Secret web/web-tls changed: 212 workloads, 3 waves, finished in 4m12s, 1 failed, 0 held.",` +
		`"occurredAt":"2026-03-01T12:04:12Z"}`
	if string(m.Body) != want {
		t.Errorf("body:\n got %s\nwant %s", m.Body, want)
	}

	none := summary(open, func(s *Summary) { s.LastCompletion = time.Time{}; s.Succeeded, s.Failed = 0, 0; s.Waiting = 173 })
	m, err = mustNew(t, kickv1alpha1.WebhookSpec{}, "").Summarize(none)
	if err != nil {
		t.Fatal(err)
	}
	doc := decodeObject(t, m.Body)
	if _, has := doc["waves"]; has {
		t.Errorf("waves present without waves: %s", m.Body)
	}
	if doc["completedAt"] != nil || doc["durationSeconds"] != nil || doc["finished"] != false || doc["open"] != float64(212) {
		t.Errorf("open summary: %s", m.Body)
	}
}

// TestSummaryCloudEvents: a summary is a CloudEvent of its own type, about the Secret, with the
// summary's id and the JSON document as data, in both modes.
func TestSummaryCloudEvents(t *testing.T) {
	s := summary()
	jsonBody, _ := mustNew(t, kickv1alpha1.WebhookSpec{}, "").Summarize(s)
	for _, mode := range []kickv1alpha1.CloudEventsMode{kickv1alpha1.CloudEventsStructured, kickv1alpha1.CloudEventsBinary} {
		m, err := mustNew(t, ceSpec(mode), "").Summarize(s)
		if err != nil {
			t.Fatal(err)
		}
		e, enc := parseCloudEvent(t, m)
		if (mode == kickv1alpha1.CloudEventsBinary) != (enc == binding.EncodingBinary) {
			t.Errorf("%s: encoding %v", mode, enc)
		}
		checks := []struct{ attr, got, want string }{
			{"id", e.ID(), s.ID()},
			{"type", e.Type(), "io.corewire.kick.fanout.summary.v1"},
			{"source", e.Source(), "/api/v1/namespaces/web/secrets/web-tls"},
			{"subject", e.Subject(), "Secret/web-tls"},
			{"datacontenttype", e.DataContentType(), "application/json"},
		}
		for _, c := range checks {
			if c.got != c.want {
				t.Errorf("%s: %s = %q, want %q", mode, c.attr, c.got, c.want)
			}
		}
		if !e.Time().Equal(s.Time) {
			t.Errorf("%s: time = %v, want %v", mode, e.Time(), s.Time)
		}
		if !reflect.DeepEqual(decodeObject(t, e.Data()), decodeObject(t, jsonBody.Body)) {
			t.Errorf("%s: data = %s\nwant %s", mode, e.Data(), jsonBody.Body)
		}
		if mode == kickv1alpha1.CloudEventsBinary && !bytes.Equal(m.Body, jsonBody.Body) {
			t.Errorf("binary body = %s", m.Body)
		}
	}
	cm := summary(func(s *Summary) { s.SourceKind, s.SourceName = "ConfigMap", "app-config" })
	m, _ := mustNew(t, ceSpec(kickv1alpha1.CloudEventsStructured), "").Summarize(cm)
	if e, _ := parseCloudEvent(t, m); e.Source() != "/api/v1/namespaces/web/configmaps/app-config" {
		t.Errorf("ConfigMap source = %q", e.Source())
	}
}

// TestSummarySlack: the Slack message says the sentence and lists the counts as fields.
func TestSummarySlack(t *testing.T) {
	m, err := mustNew(t, kickv1alpha1.WebhookSpec{Format: kickv1alpha1.FormatSlack}, "").Summarize(summary())
	if err != nil {
		t.Fatal(err)
	}
	var msg slackMessage
	if err := json.Unmarshal(m.Body, &msg); err != nil {
		t.Fatal(err)
	}
	if msg.Text != "Secret web/web-tls changed: 212 workloads, 3 waves, finished in 4m12s, 1 failed, 0 held." || msg.UnfurlLinks || msg.UnfurlMedia {
		t.Errorf("text %q, unfurl %v/%v", msg.Text, msg.UnfurlLinks, msg.UnfurlMedia)
	}
	if len(msg.Blocks) != 2 || msg.Blocks[0].Text.Text != "Fan-out finished: Secret web/web-tls" {
		t.Fatalf("blocks = %+v", msg.Blocks)
	}
	var fields []string
	for _, f := range msg.Blocks[1].Fields {
		fields = append(fields, strings.ReplaceAll(f.Text, "\n", " "))
	}
	want := []string{"*Workloads* 212", "*Succeeded* 211", "*Failed* 1", "*Held* 0", "*Still open* 0", "*Waves* 3", "*Finished in* 4m12s"}
	if !reflect.DeepEqual(fields, want) {
		t.Errorf("fields:\n got %q\nwant %q", fields, want)
	}
	m, _ = mustNew(t, kickv1alpha1.WebhookSpec{Format: kickv1alpha1.FormatSlack}, "").Summarize(summary(open))
	_ = json.Unmarshal(m.Body, &msg)
	if msg.Blocks[0].Text.Text != "Fan-out still open: Secret web/web-tls" || !strings.Contains(msg.Text, "40 still open after 15m0s") {
		t.Errorf("open: header %q text %q", msg.Blocks[0].Text.Text, msg.Text)
	}
}

// TestSummaryPagerDuty: a summary triggers one alert per change (its own dedup key); severity
// follows the outcome: the policy's severity when a restart failed, warning while restarts are
// open, info when all succeeded.
func TestSummaryPagerDuty(t *testing.T) {
	cases := []struct {
		name, severity, class string
		spec                  *kickv1alpha1.PagerDutySpec
		s                     Summary
	}{
		{"failed", "error", "FanOutFailed", &kickv1alpha1.PagerDutySpec{}, summary()},
		{"failed, critical policy", "critical", "FanOutFailed", &kickv1alpha1.PagerDutySpec{Severity: kickv1alpha1.SeverityCritical}, summary()},
		{"clean", "info", "FanOutSucceeded", &kickv1alpha1.PagerDutySpec{}, summary(func(s *Summary) { s.Failed, s.Succeeded = 0, 212 })},
		{"still open", "warning", "FanOutOpen", &kickv1alpha1.PagerDutySpec{}, summary(open, func(s *Summary) { s.Failed, s.Succeeded = 0, 172 })},
	}
	for _, tc := range cases {
		m, err := mustNew(t, pdSpec(tc.spec), "R0UT1NGKEY").Summarize(tc.s)
		if err != nil {
			t.Fatal(err)
		}
		var ev struct {
			RoutingKey  string `json:"routing_key"`
			EventAction string `json:"event_action"`
			DedupKey    string `json:"dedup_key"`
			Payload     struct {
				Summary, Source, Severity, Timestamp, Component, Group, Class string
				CustomDetails                                                 map[string]any `json:"custom_details"`
			} `json:"payload"`
		}
		if err := json.Unmarshal(m.Body, &ev); err != nil {
			t.Fatal(err)
		}
		p := ev.Payload
		if ev.RoutingKey != "R0UT1NGKEY" || ev.EventAction != "trigger" || ev.DedupKey != "kick:fanout:web/Secret/web-tls@2026-03-01T12:00:00.123456789Z" {
			t.Errorf("%s: event %+v", tc.name, ev)
		}
		if p.Severity != tc.severity || p.Class != tc.class || p.Source != "web/Secret/web-tls" || p.Component != "Secret/web-tls" || p.Group != "web" ||
			p.Summary != tc.s.Text()+"." || p.Timestamp != tc.s.Time.UTC().Format(time.RFC3339Nano) {
			t.Errorf("%s: payload %+v", tc.name, p)
		}
		if p.CustomDetails["event"] != SummaryEventName || p.CustomDetails["workloads"] != float64(212) {
			t.Errorf("%s: custom_details %v", tc.name, p.CustomDetails)
		}
	}
	long := summary(func(s *Summary) { s.SourceName = strings.Repeat("a", 253) })
	if k := SummaryDedupKey(long); len(k) > 255 || !strings.HasPrefix(k, "kick:fanout:sha256:") {
		t.Errorf("long dedup key %q", k)
	}
}
