package format

import (
	"errors"
	"testing"
	"time"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/router"
)

func TestNew(t *testing.T) {
	cases := []struct {
		name       string
		spec       kickv1alpha1.WebhookSpec
		routingKey string
		want       Formatter // nil: New must fail
	}{
		{"default is json", kickv1alpha1.WebhookSpec{}, "", traced{jsonFormatter{}}},
		{"json", kickv1alpha1.WebhookSpec{Format: kickv1alpha1.FormatJSON}, "", traced{jsonFormatter{}}},
		{"cloudevents default structured", kickv1alpha1.WebhookSpec{Format: kickv1alpha1.FormatCloudEvents}, "", cloudEventsFormatter{}},
		{"cloudevents empty mode", kickv1alpha1.WebhookSpec{Format: kickv1alpha1.FormatCloudEvents,
			CloudEvents: &kickv1alpha1.CloudEventsSpec{}}, "", cloudEventsFormatter{}},
		{"cloudevents binary", kickv1alpha1.WebhookSpec{Format: kickv1alpha1.FormatCloudEvents,
			CloudEvents: &kickv1alpha1.CloudEventsSpec{Mode: kickv1alpha1.CloudEventsBinary}}, "", cloudEventsFormatter{binary: true}},
		{"cloudevents unknown mode", kickv1alpha1.WebhookSpec{Format: kickv1alpha1.FormatCloudEvents,
			CloudEvents: &kickv1alpha1.CloudEventsSpec{Mode: "batched"}}, "", nil},
		{"slack", kickv1alpha1.WebhookSpec{Format: kickv1alpha1.FormatSlack}, "", traced{slackFormatter{}}},
		{"pagerduty default severity", kickv1alpha1.WebhookSpec{Format: kickv1alpha1.FormatPagerDuty,
			PagerDuty: &kickv1alpha1.PagerDutySpec{}}, "rk", traced{pagerDutyFormatter{routingKey: "rk", severity: kickv1alpha1.SeverityError}}},
		{"pagerduty without spec", kickv1alpha1.WebhookSpec{Format: kickv1alpha1.FormatPagerDuty}, "rk",
			traced{pagerDutyFormatter{routingKey: "rk", severity: kickv1alpha1.SeverityError}}},
		{"pagerduty settings", kickv1alpha1.WebhookSpec{Format: kickv1alpha1.FormatPagerDuty,
			PagerDuty: &kickv1alpha1.PagerDutySpec{Severity: kickv1alpha1.SeverityWarning, Source: "prod-eu"}}, "rk",
			traced{pagerDutyFormatter{routingKey: "rk", severity: kickv1alpha1.SeverityWarning, source: "prod-eu"}}},
		{"pagerduty without routing key", kickv1alpha1.WebhookSpec{Format: kickv1alpha1.FormatPagerDuty,
			PagerDuty: &kickv1alpha1.PagerDutySpec{}}, "", nil},
		{"pagerduty unknown severity", kickv1alpha1.WebhookSpec{Format: kickv1alpha1.FormatPagerDuty,
			PagerDuty: &kickv1alpha1.PagerDutySpec{Severity: "fatal"}}, "rk", nil},
		{"unknown format", kickv1alpha1.WebhookSpec{Format: "xml"}, "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := New(tc.spec, tc.routingKey)
			if tc.want == nil {
				if err == nil {
					t.Fatalf("New = %#v, want an error", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			if got != tc.want {
				t.Errorf("New = %#v, want %#v", got, tc.want)
			}
		})
	}
}

func TestEventID(t *testing.T) {
	ev := phaseChange(kickv1alpha1.PhaseSucceeded)
	id := EventID(ev)
	if len(id) != 32 {
		t.Errorf("EventID = %q, want 32 hex characters", id)
	}
	// The same transition, seen again (a retry, or recomputed after a restart from the
	// persisted time in another zone), has the same id.
	again := ev
	again.Time = ev.Time.UTC()
	again.Reason = "different free text does not matter"
	if EventID(again) != id {
		t.Errorf("EventID changed for the same transition")
	}
	for name, other := range map[string]router.PhaseChanged{
		"other phase":   phaseChange(kickv1alpha1.PhaseFailed),
		"other time":    phaseChange(kickv1alpha1.PhaseSucceeded, func(e *router.PhaseChanged) { e.Time = e.Time.Add(time.Nanosecond) }),
		"other request": phaseChange(kickv1alpha1.PhaseSucceeded, func(e *router.PhaseChanged) { e.Request.UID = "another-uid" }),
	} {
		if EventID(other) == id {
			t.Errorf("%s: EventID equal to the original transition's", name)
		}
	}
}

// Every formatter is safe for concurrent use: the dispatcher may format from several workers.
func TestFormattersConcurrent(t *testing.T) {
	specs := []kickv1alpha1.WebhookSpec{
		{Format: kickv1alpha1.FormatJSON},
		{Format: kickv1alpha1.FormatCloudEvents},
		{Format: kickv1alpha1.FormatCloudEvents, CloudEvents: &kickv1alpha1.CloudEventsSpec{Mode: kickv1alpha1.CloudEventsBinary}},
		{Format: kickv1alpha1.FormatSlack},
		{Format: kickv1alpha1.FormatPagerDuty},
	}
	done := make(chan error)
	for _, spec := range specs {
		f := mustNew(t, spec, "rk")
		events := []router.Event{gateChange(), gateChange(allowed)}
		for _, phase := range kickv1alpha1.AllPhases() {
			events = append(events, phaseChange(phase))
		}
		for _, ev := range events {
			go func() {
				_, err := f.Format(ev)
				if errors.Is(err, ErrSkip) {
					err = nil
				}
				done <- err
			}()
		}
	}
	for range len(specs) * (2 + len(kickv1alpha1.AllPhases())) {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}
