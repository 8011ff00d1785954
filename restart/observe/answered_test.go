package observe

import (
	"testing"
	"time"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/evidence"
	"github.com/kick-operator/kick/restart/freshness"
)

// TestAChangeAnsweredBeforeItsRecordIsDatedByThatRestart: a manager
// restarted web for db's new content and stopped before the record was
// written. The next manager sees the content only now, but web's note
// shows the restart answered exactly that version: the change is dated to
// the restart, so web is not restarted again. Every note that does not
// prove it (another version, a stamp the workload no longer carries, a
// stamp before the content was written or after now, a malformed note) is
// ignored, and the change is dated to when it was seen, as always.
func TestAChangeAnsweredBeforeItsRecordIsDatedByThatRestart(t *testing.T) {
	restart := time.Date(2026, 5, 1, 11, 59, 59, 700000000, time.UTC)
	for _, tc := range []struct {
		name     string
		template time.Time                  // the stamp web carries
		note     func(rv string) string     // web's note, given db's current resourceVersion
		want     func(f *fixture) time.Time // θ of the new content
	}{
		{"the restart answered this version", restart, func(rv string) string {
			return evidence.Note{Stamp: freshness.FormatStamp(restart), Change: restart.Add(-time.Millisecond), Sources: []evidence.Source{{Kind: "Secret", Name: "db", ResourceVersion: rv}}}.String()
		}, func(*fixture) time.Time { return restart }},
		{"another version", restart, func(string) string {
			return evidence.Note{Stamp: freshness.FormatStamp(restart), Sources: []evidence.Source{{Kind: "Secret", Name: "db", ResourceVersion: "1"}}}.String()
		}, seenNow},
		{"a stamp web no longer carries", restart.Add(time.Second), func(rv string) string {
			return evidence.Note{Stamp: freshness.FormatStamp(restart), Sources: []evidence.Source{{Kind: "Secret", Name: "db", ResourceVersion: rv}}}.String()
		}, seenNow},
		{"a stamp before the content was written", created.Add(-time.Hour), func(rv string) string {
			return evidence.Note{Stamp: freshness.FormatStamp(created.Add(-time.Hour)), Sources: []evidence.Source{{Kind: "Secret", Name: "db", ResourceVersion: rv}}}.String()
		}, seenNow},
		{"a stamp after now", restart.Add(time.Hour), func(rv string) string {
			return evidence.Note{Stamp: freshness.FormatStamp(restart.Add(time.Hour)), Sources: []evidence.Source{{Kind: "Secret", Name: "db", ResourceVersion: rv}}}.String()
		}, seenNow},
		{"a malformed note", restart, func(rv string) string { return "Secret/db@" + rv }, seenNow},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := testSecret("db", "v1")
			web := deployment("web", "db")
			f := newFixture(t, testKey, s, web)
			if out := f.reconcile("Secret", "db"); out.class != Baseline {
				t.Fatalf("baseline: %+v", out)
			}
			f.update(s, func() { s.Data["password"] = []byte("v2") })
			rv := f.rv(s)
			f.update(web, func() {
				web.Annotations = map[string]string{kickv1alpha1.RestartedForAnnotation: tc.note(rv)}
				web.Spec.Template.Annotations = map[string]string{freshness.RestartedAtAnnotation: freshness.FormatStamp(tc.template)}
			})
			f.pub.take()
			out := f.reconcile("Secret", "db")
			if out.class != Relevant || !out.theta.Equal(tc.want(f)) {
				t.Fatalf("new content: %+v, want θ %v", out, tc.want(f))
			}
		})
	}
}

func seenNow(f *fixture) time.Time { return f.now }
