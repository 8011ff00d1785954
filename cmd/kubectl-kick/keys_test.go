package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/assess"
	"github.com/kick-operator/kick/restart/discovery"
	"github.com/kick-operator/kick/sinks/timeline/entry"
)

// keyedRecord is a record of Secret db holding the keys of changed, each
// dated by its value (zero: unchanged since the baseline at base), with
// its entries in the order of SortKeyNames and made-up ids.
func keyedRecord(base time.Time, changed map[string]time.Time) (*kickv1alpha1.SourceObservation, map[string]string) {
	rec := record("Secret", "db", kickv1alpha1.ObservationRelevant, base, time.Time{})
	names := make([]string, 0, len(changed))
	for k := range changed {
		names = append(names, k)
	}
	kickv1alpha1.SortKeyNames(names)
	from := kickv1alpha1.NewNanoTime(base)
	h := &kickv1alpha1.KeyHistory{Count: int32(len(names)), Order: kickv1alpha1.KeyOrderNameSHA256, BaselineFrom: &from}
	ids := map[string]string{}
	for i, k := range names {
		e := kickv1alpha1.KeyObservation{ID: "00000000000000a" + string(rune('0'+i)), Fingerprint: "0000000000000001"}
		if at := changed[k]; !at.IsZero() {
			c := kickv1alpha1.NewNanoTime(at)
			e.Changed = &c
			if at.After(rec.Spec.LastRelevantChangeTime.Time) {
				rec.Spec.LastRelevantChangeTime = &c
			}
		}
		h.Entries = append(h.Entries, e)
		ids[k] = e.ID
	}
	rec.Spec.Keys = h
	return rec, ids
}

func TestDescribeKeys(t *testing.T) {
	rec, ids := keyedRecord(t0, map[string]time.Time{"DB_PASSWORD": {}, "SMTP_PASSWORD": t0.Add(time.Hour)})
	reads := &discovery.Keys{Names: []string{"DB_PASSWORD"}}
	all := &kickv1alpha1.KickPolicy{Spec: kickv1alpha1.KickPolicySpec{Restart: &kickv1alpha1.RestartSpec{Keys: kickv1alpha1.KeysAll}}}

	// A caller who cannot read the Secret: counts only, and why.
	var d dependencyResult
	why := "your credentials may not read Secret db"
	describeKeys(&d, depFacts{reads: reads, record: rec, keys: keyLines{why: why}}, &kickv1alpha1.KickPolicy{})
	if d.KeysRead == nil || *d.KeysRead != 1 || d.KeyEntries == nil || *d.KeyEntries != 2 || !strings.Contains(d.KeyLevel, why) || d.Keys != nil {
		t.Fatalf("key-level dependency, keys not lined up: %+v", d)
	}
	d.Record = "Relevant"
	text := recordText(d)
	out, _ := json.Marshal(d)
	if !strings.Contains(text, "reads 1 of 2 keys") || strings.Contains(text+string(out), "PASSWORD") {
		t.Fatalf("text %q, json %s: want a count and no key name", text, out)
	}
	if d.Reads != "changes of the 1 key(s) it reads" {
		t.Fatalf("reads %q", d.Reads)
	}

	// A caller who could: the keys read, named, with their change times.
	d = dependencyResult{Record: "Relevant"}
	describeKeys(&d, depFacts{reads: reads, record: rec, keys: keyLines{ids: ids}}, nil)
	if d.KeyLevel != keyLevelRead || d.Reads != "changes of DB_PASSWORD" || len(d.Keys) != 1 || !d.Keys[0].Baseline || !d.Keys[0].Changed.Equal(t0) {
		t.Fatalf("lined up: %+v", d)
	}
	if text := recordText(d); !strings.Contains(text, "keys read: DB_PASSWORD unchanged since 2026-05-01T10:00:00Z") || strings.Contains(text, "SMTP") {
		t.Fatalf("text %q", text)
	}

	d = dependencyResult{}
	describeKeys(&d, depFacts{reads: reads, record: rec, keys: keyLines{ids: ids}}, all)
	if d.KeyLevel != "" || d.Reads != "every key" || d.Keys != nil {
		t.Fatalf("restart.keys All: %+v", d)
	}
	d = dependencyResult{}
	describeKeys(&d, depFacts{reads: &discovery.Keys{All: true}, record: rec}, nil)
	if d.KeysRead != nil || d.KeyLevel != "" {
		t.Fatalf("every key read: %+v", d)
	}
	d = dependencyResult{}
	describeKeys(&d, depFacts{reads: reads, record: &kickv1alpha1.SourceObservation{}}, nil)
	if d.KeysRead == nil || d.KeyLevel != "" {
		t.Fatalf("a record without keys: %+v", d)
	}
}

// explain agrees with the manager once it can line the keys up: a change
// of a key the workload does not read, after its rollout, leaves it fresh;
// without the key names it is judged by the whole object, and says why.
func TestExplainJudgesKeyByKey(t *testing.T) {
	s := newScene()
	s.deploy.Spec.Template.Spec.Containers[0].EnvFrom = nil
	s.deploy.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "P", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "DB_PASSWORD"}}}}
	rec, ids := keyedRecord(t0.Add(-time.Hour), map[string]time.Time{"DB_PASSWORD": {}, "SMTP_PASSWORD": t0.Add(5 * time.Minute)})
	s.deps[0].record, s.deps[0].reads = rec, &discovery.Keys{Names: []string{"DB_PASSWORD"}}
	s.deps[0].fields = []string{"containers[app].env[P]"}

	s.deps[0].keys = keyLines{why: "your credentials may not read Secret db"}
	e := analyze(s.facts())
	if e.Verdict != string(assess.Stale) {
		t.Fatalf("by the whole object: verdict %q, want stale", e.Verdict)
	}
	if out := explainText(t, e); !strings.Contains(out, "shown: the newest change of any key, because your credentials may not read Secret db") {
		t.Fatalf("the whole-object verdict does not say why:\n%s", out)
	}

	// The manager's reasoning: DB_PASSWORD has not changed since the
	// baseline, an hour before the rollout.
	c, ok := assess.KeyChange(&rec.Spec, *s.deps[0].reads, func(k string) string { return ids[k] })
	if !ok || !c.Latest.Before(t0) {
		t.Fatalf("the manager's change %v %v", c, ok)
	}
	s.deps[0].keys = keyLines{ids: ids}
	e = analyze(s.facts())
	out := explainText(t, e)
	if e.Verdict != string(assess.Fresh) {
		t.Fatalf("lined up: verdict %q, want fresh (the manager's):\n%s", e.Verdict, out)
	}
	if !strings.Contains(out, "keys read: DB_PASSWORD unchanged since") || strings.Contains(out, "SMTP_PASSWORD") {
		t.Fatalf("output:\n%s", out)
	}
}

// kubectl kick timeline marks the record's last change on a workload that
// reads only keys it left alone, once the keys are lined up; unmarked
// without the key names, and for the reader of the changed key.
func TestTimelineMarksUnreadKeys(t *testing.T) {
	rec, ids := keyedRecord(t0, map[string]time.Time{"DB_PASSWORD": {}, "SMTP_PASSWORD": t0.Add(time.Hour)})
	w := entry.Workload{Namespace: "shop", Kind: "Deployment", Name: "web"}
	df := depFacts{record: rec, reads: &discovery.Keys{Names: []string{"DB_PASSWORD"}}, keys: keyLines{ids: ids}}
	if es := observationEntries(df, w); len(es) != 1 || !es[0].KeysUnread {
		t.Errorf("reader of an unchanged key: %+v", es)
	}
	df.reads = &discovery.Keys{Names: []string{"SMTP_PASSWORD"}}
	if es := observationEntries(df, w); len(es) != 1 || es[0].KeysUnread {
		t.Errorf("reader of the changed key: %+v", es)
	}
	df.reads, df.keys = &discovery.Keys{Names: []string{"DB_PASSWORD"}}, keyLines{why: "forbidden"}
	if es := observationEntries(df, w); len(es) != 1 || es[0].KeysUnread {
		t.Errorf("keys not lined up: %+v", es)
	}
}
