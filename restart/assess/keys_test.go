package assess

import (
	"strings"
	"testing"
	"time"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/discovery"
	"github.com/kick-operator/kick/restart/freshness"
)

// keyRecord: Secret db with keys a (unchanged since the baseline at
// t0-1h), b (changed at t0+1m) and c (changed at t0-1m); a key was removed
// at removed (zero: never). Ids are the names upper-cased: a stand-in for
// the keyed hash.
func keyRecord(removed time.Time) *kickv1alpha1.SourceObservationSpec {
	at := func(t time.Time) *kickv1alpha1.NanoTime { n := kickv1alpha1.NewNanoTime(t); return &n }
	spec := relevant(t0.Add(time.Minute))
	spec.Keys = &kickv1alpha1.KeyHistory{Count: 3, BaselineFrom: at(t0.Add(-time.Hour)), Entries: []kickv1alpha1.KeyObservation{
		{ID: "A", Fingerprint: "0000000000000001"},
		{ID: "B", Fingerprint: "0000000000000002", Changed: at(t0.Add(time.Minute))},
		{ID: "C", Fingerprint: "0000000000000003", Changed: at(t0.Add(-time.Minute))},
	}}
	if !removed.IsZero() {
		spec.Keys.Removed = at(removed)
	}
	return spec
}

func upper(k string) string {
	b := []byte(k)
	for i := range b {
		b[i] -= 'a' - 'A'
	}
	return string(b)
}

func TestKeyChange(t *testing.T) {
	rec := keyRecord(time.Time{})
	for _, tc := range []struct {
		name  string
		rec   *kickv1alpha1.SourceObservationSpec
		reads discovery.Keys
		id    func(string) string
		want  freshness.Change
		keyed bool
	}{
		{"an unchanged key counts the baseline", rec, discovery.Keys{Names: []string{"a"}}, upper, freshness.At(t0.Add(-time.Hour)), true},
		{"the newest of the keys read", rec, discovery.Keys{Names: []string{"a", "b", "c"}}, upper, freshness.At(t0.Add(time.Minute)), true},
		{"a key not in the source counts nothing", rec, discovery.Keys{Names: []string{"zz"}}, upper, freshness.Change{}, true},
		{"a key not in the source counts the last removal", keyRecord(t0.Add(2 * time.Minute)), discovery.Keys{Names: []string{"zz"}}, upper, freshness.At(t0.Add(2 * time.Minute)), true},
		{"every key: the whole object", rec, discovery.Keys{All: true}, upper, freshness.At(t0.Add(time.Minute)), false},
		{"no key names (no installation key): the whole object", rec, discovery.Keys{Names: []string{"a"}}, nil, freshness.At(t0.Add(time.Minute)), false},
		{"a record without keys: the whole object", relevant(t0.Add(time.Minute)), discovery.Keys{Names: []string{"a"}}, upper, freshness.At(t0.Add(time.Minute)), false},
		{"a record beyond the bound: the whole object", func() *kickv1alpha1.SourceObservationSpec {
			r := relevant(t0.Add(time.Minute))
			r.Keys = &kickv1alpha1.KeyHistory{Count: kickv1alpha1.MaxKeyEntries + 1}
			return r
		}(), discovery.Keys{Names: []string{"a"}}, upper, freshness.At(t0.Add(time.Minute)), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, keyed := KeyChange(tc.rec, tc.reads, tc.id)
			if got != tc.want || keyed != tc.keyed {
				t.Fatalf("KeyChange = %v, %v; want %v, %v", got, keyed, tc.want, tc.keyed)
			}
		})
	}
}

// A rollout at t0 carries every key but b (changed at t0+1m): a reader of
// a is fresh, a reader of b stale, and with restart.keys All both are.
func TestAssessKeyLevel(t *testing.T) {
	facts := func(reads []string, keysAll bool) Facts {
		f := baseFacts()
		f.Dependencies[0].Record = keyRecord(time.Time{})
		f.Dependencies[0].Reads = &discovery.Keys{Names: reads}
		f.KeyNames = func(_, _, _, key string) string { return upper(key) }
		if keysAll {
			f.Policies[0].Spec.Restart = &kickv1alpha1.RestartSpec{Keys: kickv1alpha1.KeysAll}
		}
		return f
	}
	a := Assess(facts([]string{"a", "c"}, false))
	if a.Verdict != Fresh || !a.Dependencies[0].KeyLevel || !a.OnlyUnreadKeysChanged("Secret") {
		t.Fatalf("reader of a and c: %s (%s), key level %v", a.Verdict, a.VerdictMessage, a.Dependencies[0].KeyLevel)
	}
	if a := Assess(facts([]string{"b"}, false)); a.Verdict != Stale || a.OnlyUnreadKeysChanged("Secret") {
		t.Fatalf("reader of b: %s (%s)", a.Verdict, a.VerdictMessage)
	}
	if a := Assess(facts([]string{"a"}, true)); a.Verdict != Stale || a.Dependencies[0].KeyLevel {
		t.Fatalf("restart.keys All, reader of a: %s (%s)", a.Verdict, a.VerdictMessage)
	}

	// A change handed by the event that the workload does not read counts
	// only under restart.keys All.
	f := facts([]string{"a"}, false)
	f.Dependencies[0].Record = nil
	f.HandedUnread = freshness.At(t0.Add(time.Minute))
	if a := Assess(f); a.Verdict != Fresh {
		t.Fatalf("handed unread change, keys Read: %s", a.Verdict)
	}
	f.Policies[0].Spec.Restart = &kickv1alpha1.RestartSpec{Keys: kickv1alpha1.KeysAll}
	if a := Assess(f); a.Verdict != Stale {
		t.Fatalf("handed unread change, keys All: %s", a.Verdict)
	}
}

// An earlier wave's member that reads only keys a change left alone never
// restarts for it, so it does not hold the later waves; one that reads the
// changed key does, until it carries it.
func TestWaveMemberReadsOtherKeys(t *testing.T) {
	f := baseFacts()
	waved(&f, 0)
	f.Dependencies[0].Record = keyRecord(time.Time{})
	f.Dependencies[0].Reads = &discovery.Keys{Names: []string{"b"}} // changed at t0+1m
	f.KeyNames = func(_, _, _, key string) string { return upper(key) }
	f.Waves.Earlier["Secret/db"] = []WaveMember{{Workload: "Deployment shop/a", Since: t0, Complete: true,
		Reads: &discovery.Keys{Names: []string{"a"}}}} // unchanged since the baseline at t0-1h
	if a := Assess(f); a.Gate.Stage == StageWave && !a.Gate.Allowed && strings.Contains(a.Gate.Message, "have not restarted") {
		t.Fatalf("a member that does not read the changed key holds the wave: %s", a.Gate.Message)
	}
	f.Waves.Earlier["Secret/db"][0].Reads = &discovery.Keys{Names: []string{"b"}}
	if a := Assess(f); !strings.Contains(a.Gate.Message, "1 of 1 workloads have not restarted yet (Deployment shop/a)") {
		t.Fatalf("a member that reads the changed key: %s", a.Gate.Message)
	}
}
