package entry

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
)

var (
	t0  = time.Date(2026, 5, 4, 10, 0, 0, 123456789, time.UTC)
	web = Workload{Namespace: "shop", Kind: "Deployment", Name: "web"}
)

func micro(t time.Time) *metav1.MicroTime { m := metav1.NewMicroTime(t); return &m }
func sec(t time.Time) *metav1.Time        { m := metav1.NewTime(t.Truncate(time.Second)); return &m }

// TestRequestAndRecordTellOneCycle: a finished request and the record of
// its source give one change, one restart and one completion, narrated;
// the request's anonymous copy of the change and the live duplicates
// (same occurrences seen on the router) are dropped.
func TestRequestAndRecordTellOneCycle(t *testing.T) {
	gateAt := t0.Add(2 * time.Second)
	restartAt := t0.Add(3*time.Hour + 12*time.Minute + 800*time.Millisecond)
	doneAt := restartAt.Add(4 * time.Second)
	kr := &kickv1alpha1.KickRequest{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "deployment-web", CreationTimestamp: metav1.NewTime(t0.Add(time.Second).Truncate(time.Second))},
		Spec:       kickv1alpha1.KickRequestSpec{TargetRef: kickv1alpha1.TargetRef{Kind: "Deployment", Name: "web"}},
		Status: kickv1alpha1.KickRequestStatus{
			Phase:                          kickv1alpha1.PhaseSucceeded,
			LatestObservedDependencyChange: micro(t0),
			LastRestartTime:                micro(restartAt),
			CompletionTime:                 sec(doneAt),
			RestartCount:                   1,
			Conditions:                     []metav1.Condition{{Type: kickv1alpha1.ConditionCompleted, Status: metav1.ConditionTrue, Reason: "RestartCompleted"}},
		},
	}
	at := kickv1alpha1.NewNanoTime(t0)
	rec := &kickv1alpha1.SourceObservation{Spec: kickv1alpha1.SourceObservationSpec{
		Source:                 kickv1alpha1.ObservedSource{APIVersion: "v1", Kind: "Secret", Name: "db"},
		LastRelevantChangeTime: &at, Class: kickv1alpha1.ObservationRelevant, RelevantFingerprint: "deadbeef",
	}}
	es := append(FromRequest(kr), FromObservation(rec, []Workload{web})...)
	// The same occurrences as the router reports them.
	es = append(es,
		NewChange(web, "Secret db", "Relevant", t0, 1),
		NewGate(web, GateDecision{Request: "deployment-web", Stage: "Schedule", Reason: "OutsideSchedule", Message: "outside the window mon 13:00", At: gateAt}),
		NewRestart(web, "deployment-web", restartAt, 0),
		NewPhase(web, Phase{Request: "deployment-web", From: "WaitingForRollout", To: "Succeeded", At: doneAt, Outcome: "RestartCompleted"}),
	)
	es = Dedupe(es)
	Narrate(es)
	var types []string
	for _, e := range es {
		types = append(types, string(e.Type))
		if strings.Contains(e.Summary+e.Message+e.Note+e.Source, "deadbeef") {
			t.Fatalf("an entry carries the fingerprint: %+v", e)
		}
	}
	if got, want := strings.Join(types, ","), "change,request,gate,restart,completion"; got != want {
		t.Fatalf("types = %s, want %s", got, want)
	}
	if es[0].Source != "Secret db" {
		t.Fatalf("the change does not name its source: %+v", es[0])
	}
	if want := "restarted 3h12m after the change; waited 3h12m for outside the window mon 13:00"; es[3].Note != want {
		t.Fatalf("restart note = %q, want %q", es[3].Note, want)
	}
	// Completion times are stored to the second.
	if want := "3.1 s after the restart"; es[4].Note != want {
		t.Fatalf("completion note = %q, want %q", es[4].Note, want)
	}
	line := Line(es[3], time.UTC)
	if !strings.Contains(line, "restart") || !strings.Contains(line, "waited 3h12m") {
		t.Fatalf("line = %q", line)
	}
}

func TestDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		800 * time.Millisecond:        "0.8 s",
		42 * time.Second:              "42 s",
		3*time.Minute + 5*time.Second: "3m05s",
		3*time.Hour + 12*time.Minute:  "3h12m",
		52 * time.Hour:                "2d4h",
	} {
		if got := Duration(d); got != want {
			t.Errorf("Duration(%s) = %q, want %q", d, got, want)
		}
	}
}

func TestFromEvent(t *testing.T) {
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{UID: "u1"},
		InvolvedObject: corev1.ObjectReference{Kind: "Deployment", Name: "web"},
		Reason:         "ScalingReplicaSet", Message: "Scaled up replica set web-1 to 1",
		Type: corev1.EventTypeNormal, LastTimestamp: metav1.NewTime(t0),
	}
	e := FromEvent(ev, web)
	if e.Type != Event || e.Time != metav1.NewTime(t0).Time || !strings.Contains(e.Summary, "Scaled up") || e.Warning {
		t.Fatalf("entry = %+v", e)
	}
	ev.Message = strings.Repeat("x", 2000)
	if e := FromEvent(ev, web); len(e.Message) > maxMessage+4 {
		t.Fatalf("message not bounded: %d", len(e.Message))
	}
}

// TestCompletionInTheRestartsSecond: a completion dated to the second of
// its restart is shown after the restart, not before it.
func TestCompletionInTheRestartsSecond(t *testing.T) {
	restartAt := t0.Add(300 * time.Millisecond)
	es := Dedupe([]Entry{
		NewPhase(web, Phase{Request: "r", To: "Succeeded", At: t0.Truncate(time.Second)}),
		NewChange(web, "Secret db", "Relevant", t0, 1),
		NewRestart(web, "r", restartAt, 1),
	})
	Narrate(es)
	if es[0].Type != Change || es[1].Type != Restart || es[2].Type != Completion || es[2].Note != "within a second of the restart" {
		t.Fatalf("entries = %+v", es)
	}
}

// A reopened request still tells its earlier cycles from its history: the
// restart and the completion of each, with no Event needed.
func TestRequestHistoryTellsEarlierCycles(t *testing.T) {
	first := t0.Add(time.Minute)
	kr := &kickv1alpha1.KickRequest{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "deployment-web", CreationTimestamp: metav1.NewTime(t0.Truncate(time.Second))},
		Spec:       kickv1alpha1.KickRequestSpec{TargetRef: kickv1alpha1.TargetRef{Kind: "Deployment", Name: "web"}},
		Status: kickv1alpha1.KickRequestStatus{
			Phase: kickv1alpha1.PhasePending,
			History: []kickv1alpha1.RequestCycle{
				{RestartedAt: micro(first), CompletedAt: *sec(first.Add(2 * time.Second)), Phase: kickv1alpha1.PhaseSucceeded, Reason: "RestartCompleted"},
				{CompletedAt: *sec(t0.Add(30 * time.Second)), Phase: kickv1alpha1.PhaseNoLongerRequired, Reason: "UpToDate"},
			},
		},
	}
	es := Dedupe(FromRequest(kr))
	var types []string
	for _, e := range es {
		types = append(types, string(e.Type))
	}
	if got, want := strings.Join(types, ","), "request,finished,restart,completion"; got != want {
		t.Fatalf("types = %s, want %s", got, want)
	}
	if es[3].Reason != "RestartCompleted" || !es[2].Time.Equal(first) {
		t.Fatalf("the earlier restart and completion are %+v and %+v", es[2], es[3])
	}
}
