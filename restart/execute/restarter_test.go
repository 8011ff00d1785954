package execute

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestWholeSecondStampIsTheFirstWholeSecondNotBeforeChangeOrNow(t *testing.T) {
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, tc := range []struct {
		name, now, change, want string
	}{
		{"change in the past, now mid-second", "2026-05-01T12:00:10.2Z", "2026-05-01T12:00:03.7Z", "2026-05-01T12:00:11Z"},
		{"now on a whole second", "2026-05-01T12:00:10Z", "2026-05-01T12:00:03.7Z", "2026-05-01T12:00:10Z"},
		{"change ahead of the clock (skew)", "2026-05-01T12:00:10.2Z", "2026-05-01T12:00:12.000000001Z", "2026-05-01T12:00:13Z"},
		{"change on a whole second ahead of the clock", "2026-05-01T12:00:10.2Z", "2026-05-01T12:00:12Z", "2026-05-01T12:00:12Z"},
		{"change in the same second as now", "2026-05-01T12:00:10.2Z", "2026-05-01T12:00:10.9Z", "2026-05-01T12:00:11Z"},
		{"no known change", "2026-05-01T12:00:10.000000001Z", "", "2026-05-01T12:00:11Z"},
		{"other zone", "2026-05-01T14:00:10.5+02:00", "", "2026-05-01T12:00:11Z"},
	} {
		var change time.Time
		if tc.change != "" {
			change = at(tc.change)
		}
		got := WholeSecondStamp(at(tc.now), change)
		if !got.Equal(at(tc.want)) || got.Nanosecond() != 0 || got.Location() != time.UTC {
			t.Errorf("%s: WholeSecondStamp = %s, want %s", tc.name, got, tc.want)
		}
		if got.Before(change) || got.Before(at(tc.now)) {
			t.Errorf("%s: stamp %s is older than the change or now", tc.name, got)
		}
	}
}

func TestRestartAtStampValue(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 10, 200, time.UTC)
	ts, value := RestartAt{}.Stamp(now, time.Time{})
	if value != "2026-05-01T12:00:11Z" || !ts.Equal(time.Date(2026, 5, 1, 12, 0, 11, 0, time.UTC)) {
		t.Fatalf("Stamp = %s %q", ts, value)
	}
	// The value written reads back as the same time.
	mt := metav1.NewTime(ts)
	if got, ok := (RestartAt{}).Current(&holder{restartAt: &mt}); !ok || !got.Equal(ts) {
		t.Fatalf("Current = %s %v, want %s", got, ok, ts)
	}
	if _, ok := (RestartAt{}).Current(&holder{}); ok {
		t.Fatal("Current of an object without restartAt reported one")
	}
	if _, ok := (RestartAt{}).Current(&appsv1.Deployment{}); ok {
		t.Fatal("Current of a Deployment reported a restartAt")
	}
	if err := (RestartAt{}).Apply(t.Context(), nil, &holder{}, "2026-05-01T12:00:11.5Z"); err == nil {
		t.Fatal("Apply accepted a fractional restartAt")
	}
}

func TestPodTemplateRestarter(t *testing.T) {
	change := time.Date(2026, 5, 1, 12, 0, 0, 500, time.UTC)
	ts, value := PodTemplate{}.Stamp(change.Add(-time.Second), change)
	if !ts.Equal(change.Add(time.Nanosecond)) || value != "2026-05-01T12:00:00.000000501Z" {
		t.Fatalf("Stamp = %s %q", ts, value)
	}
	d := &appsv1.Deployment{}
	d.Spec.Template.Annotations = map[string]string{"kubectl.kubernetes.io/restartedAt": value}
	if got, ok := (PodTemplate{}).Current(d); !ok || !got.Equal(ts) {
		t.Fatalf("Current = %s %v", got, ok)
	}
}

type holder struct {
	appsv1.Deployment
	restartAt *metav1.Time
}

func (h *holder) RestartAt() *metav1.Time { return h.restartAt }

var _ RestartAtHolder = &holder{}
var _ client.Object = &holder{}
