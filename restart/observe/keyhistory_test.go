package observe

import (
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/discovery"
)

func keySecret(data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db", UID: "u1"}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

// observe runs the observer's pure steps on a Secret's content: classify
// against prev, then the next record spec.
func observeSecret(f *Fingerprinter, prev *kickv1alpha1.SourceObservationSpec, s *corev1.Secret, rv string, now time.Time) (Class, kickv1alpha1.SourceObservationSpec) {
	keys := f.SecretKeys(s)
	o := Observed{Source: kickv1alpha1.ObservedSource{APIVersion: "v1", Kind: "Secret", Name: s.Name}, Fingerprint: f.Secret(s),
		KeyID: f.KeyID(), ResourceVersion: rv, LastWrite: now.Add(-time.Minute).Truncate(time.Second), Keys: &keys}
	var rec *kickv1alpha1.SourceObservation
	if prev != nil {
		rec = &kickv1alpha1.SourceObservation{Spec: *prev}
	}
	c := WithKeys(Classify(rec, o.Fingerprint, rv, o.KeyID), rec, o)
	if !c.Persisted() {
		return c, *prev
	}
	return c, Next(prev, c, o, now)
}

func entryOf(t *testing.T, f *Fingerprinter, spec kickv1alpha1.SourceObservationSpec, key string) kickv1alpha1.KeyObservation {
	t.Helper()
	id := f.KeyName("shop", "Secret", "db", key)
	for _, e := range spec.Keys.Entries {
		if e.ID == id {
			return e
		}
	}
	t.Fatalf("no entry for key %q", key)
	return kickv1alpha1.KeyObservation{}
}

func TestNextKeys(t *testing.T) {
	f := NewFingerprinter(testKey)
	t0 := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	_, base := observeSecret(f, nil, keySecret(map[string]string{"a": "1", "b": "2"}), "1", t0)
	if base.Keys == nil || base.Keys.Count != 2 || len(base.Keys.Entries) != 2 || base.Keys.BaselineFrom == nil {
		t.Fatalf("baseline keys = %+v", base.Keys)
	}
	for _, e := range base.Keys.Entries {
		if e.Changed != nil {
			t.Fatalf("a baseline entry carries a change time: %+v", e)
		}
	}

	t1 := t0.Add(time.Hour)
	c, rel := observeSecret(f, &base, keySecret(map[string]string{"a": "1", "b": "3", "c": "4"}), "2", t1)
	if c != Relevant {
		t.Fatalf("class %s", c)
	}
	if e := entryOf(t, f, rel, "a"); e.Changed != nil {
		t.Errorf("unchanged key a dated %v", e.Changed)
	}
	for _, k := range []string{"b", "c"} {
		if e := entryOf(t, f, rel, k); e.Changed == nil || !e.Changed.Equal(t1) {
			t.Errorf("key %s: changed %v, want %v", k, e.Changed, t1)
		}
	}
	if rel.Keys.Removed != nil {
		t.Errorf("removed %v, nothing was removed", rel.Keys.Removed)
	}

	t2 := t1.Add(time.Hour)
	_, gone := observeSecret(f, &rel, keySecret(map[string]string{"a": "1", "b": "3"}), "3", t2)
	if gone.Keys.Removed == nil || !gone.Keys.Removed.Equal(t2) {
		t.Errorf("removed %v, want %v", gone.Keys.Removed, t2)
	}
	if e := entryOf(t, f, gone, "b"); !e.Changed.Equal(t1) {
		t.Errorf("key b keeps its change time: %v, want %v", e.Changed, t1)
	}

	// KeysUnread: a reader of a alone is untouched by the change of b.
	reads := []discovery.Keys{{Names: []string{"a"}}, {Names: []string{"b"}}, {All: true}, {Names: []string{"c"}}, {Names: []string{"zz"}}}
	id := func(k string) string { return f.KeyName("shop", "Secret", "db", k) }
	got := KeysUnread(&base, &rel, reads, id)
	if want := []bool{true, false, false, false, true}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("KeysUnread(change of b, c added) = %v, want %v", got, want)
	}
	if got := KeysUnread(&rel, &gone, reads, id); fmt.Sprint(got) != fmt.Sprint([]bool{true, true, false, false, true}) {
		t.Errorf("KeysUnread(c removed) = %v: only the reader of c and the whole reader are touched", got)
	}
}

// A record written before KICK kept keys is upgraded quietly: same
// content gives class Upgrade (written, never announced), and every key is
// dated like the record's change, so nothing looks newer than before.
func TestUpgradeFromRecordWithoutKeys(t *testing.T) {
	f := NewFingerprinter(testKey)
	s := keySecret(map[string]string{"a": "1", "b": "2"})
	theta := kickv1alpha1.NewNanoTime(time.Date(2026, 11, 1, 8, 0, 0, 123, time.UTC))
	old := kickv1alpha1.SourceObservationSpec{ // the previous release's shape: no keys
		Source:                      kickv1alpha1.ObservedSource{APIVersion: "v1", Kind: "Secret", Name: "db"},
		LastSeenResourceVersion:     "7",
		LastRelevantResourceVersion: "5",
		LastRelevantChangeTime:      &theta,
		RelevantFingerprint:         f.Secret(s),
		FingerprintKeyID:            f.KeyID(),
		Class:                       kickv1alpha1.ObservationRelevant,
	}
	now := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	c, up := observeSecret(f, &old, s, "7", now)
	if c != Upgrade || c.Published() || !c.Persisted() {
		t.Fatalf("class %s (published %v, persisted %v), want a quiet Upgrade", c, c.Published(), c.Persisted())
	}
	if !up.LastRelevantChangeTime.Equal(theta.Time) || up.LastRelevantResourceVersion != "5" || up.Class != kickv1alpha1.ObservationRelevant {
		t.Fatalf("the upgrade moved the record's change: %+v", up)
	}
	if up.Keys == nil || !up.Keys.BaselineFrom.Equal(theta.Time) || up.Keys.BaselineTo != nil || len(up.Keys.Entries) != 2 {
		t.Fatalf("keys = %+v, want a baseline at %v", up.Keys, theta)
	}
	// The same observation again changes nothing.
	if c, _ := observeSecret(f, &up, s, "7", now); c != NoChange {
		t.Fatalf("second look: %s", c)
	}
	// The first key-level change after the upgrade is judged per key.
	s2 := keySecret(map[string]string{"a": "1", "b": "changed"})
	later := now.Add(time.Minute)
	c, rel := observeSecret(f, &up, s2, "8", later)
	if c != Relevant || entryOf(t, f, rel, "a").Changed != nil || !entryOf(t, f, rel, "b").Changed.Equal(later) {
		t.Fatalf("first change after the upgrade: class %s keys %+v", c, rel.Keys)
	}

	// A change made while the new version was being installed, over a record
	// without keys, cannot be told apart key by key: every key is dated
	// like the change (every reader restarts, as before the upgrade).
	c, both := observeSecret(f, &old, s2, "8", later)
	if c != Relevant || !both.Keys.BaselineFrom.Equal(later) || entryOf(t, f, both, "a").Changed != nil {
		t.Fatalf("change over an old record: class %s keys %+v", c, both.Keys)
	}
	if got := KeysUnread(&old, &both, []discovery.Keys{{Names: []string{"a"}}}, nil); got[0] {
		t.Fatal("a reader of an unchanged key counted as untouched without a history to compare")
	}
}

func TestKeysBeyondTheBound(t *testing.T) {
	f := NewFingerprinter(testKey)
	data := map[string]string{}
	for i := range 10000 {
		data[fmt.Sprintf("key-%05d", i)] = "v"
	}
	_, spec := observeSecret(f, nil, keySecret(data), "1", time.Now())
	if spec.Keys == nil || spec.Keys.Count != 10000 || spec.Keys.Entries != nil || spec.Keys.Usable() {
		t.Fatalf("keys of a 10,000-key Secret: count %d, %d entries", spec.Keys.Count, len(spec.Keys.Entries))
	}
	b, _ := json.Marshal(spec)
	if len(b) > 1024 {
		t.Fatalf("record of a 10,000-key Secret is %d bytes", len(b))
	}
}

// The record of a Secret with 20 keys, each changed once: what a record
// costs per key (reported, and bounded so a regression shows).
func TestRecordSizePerKey(t *testing.T) {
	f := NewFingerprinter(testKey)
	data := map[string]string{}
	for i := range 20 {
		data[fmt.Sprintf("SOME_SETTING_%02d", i)] = "value"
	}
	now := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	c0, base := observeSecret(f, nil, keySecret(data), "1", now)
	for k := range data {
		data[k] = "new"
	}
	_, changed := observeSecret(f, &base, keySecret(data), "2", now.Add(time.Second))
	noKeys := changed
	noKeys.Keys = nil
	whole, _ := json.Marshal(noKeys)
	baseJSON, _ := json.Marshal(base)
	full, _ := json.Marshal(changed)
	perKeyBaseline := float64(len(baseJSON)-len(whole)) / 20
	perKeyChanged := float64(len(full)-len(whole)) / 20
	t.Logf("%s record without keys %d bytes; 20 keys add %.1f bytes each as a baseline, %.1f bytes each once changed", c0, len(whole), perKeyBaseline, perKeyChanged)
	if perKeyChanged > 105 {
		t.Fatalf("%.1f bytes per key", perKeyChanged)
	}
	if strings.Contains(string(full), "SOME_SETTING") || strings.Contains(string(full), "value") {
		t.Fatal("a key name or value reached the record")
	}
}

// BenchmarkKeyRecords observes Secrets of 20 keys (a baseline, then a
// change of one key) the way the observer does, and reports the record's
// size and what 10,000 such records take in etcd (JSON, spec only).
func BenchmarkKeyRecords(b *testing.B) {
	f := NewFingerprinter(testKey)
	const secrets, keys = 10000, 20
	data := map[string]string{}
	for k := range keys {
		data[fmt.Sprintf("APP_SETTING_%02d", k)] = strings.Repeat("v", 32)
	}
	now := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	var size, whole int
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		s := keySecret(data)
		s.Name, s.UID = fmt.Sprintf("db-%05d", i%secrets), "u"
		_, base := observeSecret(f, nil, s, "1", now)
		s.Data["APP_SETTING_07"] = []byte(fmt.Sprint(i))
		_, changed := observeSecret(f, &base, s, "2", now.Add(time.Second))
		out, _ := json.Marshal(changed)
		changed.Keys = nil
		w, _ := json.Marshal(changed)
		size, whole = len(out), len(w)
		i++
	}
	b.ReportMetric(float64(size), "record-bytes")
	b.ReportMetric(float64(size-whole)/keys, "bytes/key")
	b.ReportMetric(float64(size)*secrets/1e6, "MB/10k-secrets")
}

// BenchmarkKeyRecordsInCache measures what the manager holds for 10,000
// Secrets of 20 keys each: their records as its informer keeps them
// (decoded from the API server's JSON, one of the 20 keys changed), in
// heap bytes per record and per key and in MB for all 10,000, next to
// the same records without spec.keys. The Secrets themselves are cached
// as metadata only (their keys cost the manager nothing there).
func BenchmarkKeyRecordsInCache(b *testing.B) {
	f := NewFingerprinter(testKey)
	const secrets, keys = 10000, 20
	data := map[string]string{}
	for k := range keys {
		data[fmt.Sprintf("APP_SETTING_%02d", k)] = strings.Repeat("v", 32)
	}
	now := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	s := keySecret(data)
	_, base := observeSecret(f, nil, s, "1", now)
	s.Data["APP_SETTING_07"] = []byte("changed")
	_, spec := observeSecret(f, &base, s, "2", now.Add(time.Second))
	rec := kickv1alpha1.SourceObservation{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "secret-db", UID: "0b5c7a4e-9d1f-4c51-8f0e-3f0d2c1b6a77",
		ResourceVersion: "123456", CreationTimestamp: metav1.NewTime(now),
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Secret", Name: "db", UID: "u1"}}}, Spec: spec}
	withKeys, _ := json.Marshal(rec)
	rec.Spec.Keys = nil
	without, _ := json.Marshal(rec)
	heap := func(raw []byte) float64 {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		cache := make([]*kickv1alpha1.SourceObservation, secrets)
		for i := range cache {
			cache[i] = &kickv1alpha1.SourceObservation{}
			if err := json.Unmarshal(raw, cache[i]); err != nil {
				b.Fatal(err)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(cache)
		return float64(after.HeapAlloc-before.HeapAlloc) / secrets
	}
	var perRecord, perRecordWithout float64
	for b.Loop() {
		perRecord, perRecordWithout = heap(withKeys), heap(without)
	}
	b.ReportMetric(float64(len(withKeys)), "json-bytes/record")
	b.ReportMetric(perRecord, "heap-bytes/record")
	b.ReportMetric((perRecord-perRecordWithout)/keys, "heap-bytes/key")
	b.ReportMetric(perRecord*secrets/1e6, "heap-MB/10k-secrets")
}

// The preflight's preview dates exactly the keys the write changes against
// the object it replaces, whatever prints the stored record holds: a dry
// run must not tell whether a guessed value is the stored one.
func TestPreviewPrevComparesWithTheReplacedObject(t *testing.T) {
	f := NewFingerprinter(testKey)
	t0 := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	_, stored := observeSecret(f, nil, keySecret(map[string]string{"a": "stored", "b": "stored"}), "1", t0)
	old := keySecret(map[string]string{"a": "guess", "b": "old"})
	written := keySecret(map[string]string{"a": "guess", "b": "new"})
	oldPrints := f.SecretKeys(old)
	prev := f.PreviewPrev(&stored, &oldPrints)
	k, _ := Prints(f, written)
	o := Observed{Source: stored.Source, KeyID: f.KeyID(), ResourceVersion: "2", Keys: &k}
	now := t0.Add(time.Hour)
	next := Next(prev, Relevant, o, now)
	if e := entryOf(t, f, next, "a"); e.Changed != nil {
		t.Errorf("key a, equal in the write and the replaced object, dated %v: the stored print was consulted", e.Changed)
	}
	if e := entryOf(t, f, next, "b"); e.Changed == nil || !e.Changed.Equal(now) {
		t.Errorf("key b changed by the write: dated %v, want %v", e.Changed, now)
	}
	if stored.Keys.Entries[0].Fingerprint == prev.Keys.Entries[0].Fingerprint && stored.Keys.Entries[1].Fingerprint == prev.Keys.Entries[1].Fingerprint {
		t.Error("PreviewPrev kept the stored prints")
	}
	if f.PreviewPrev(&stored, nil) != &stored {
		t.Error("a create (no replaced object) changed the stored record")
	}
}

// Entries are in the order of kickv1alpha1.SortKeyNames, so whoever reads
// the Secret can find a key's entry; a record of the first key-level
// manager (entries in the order of their ids, no order named) is put in
// that order quietly, each key keeping its change time.
func TestEntriesInNameDigestOrder(t *testing.T) {
	f := NewFingerprinter(testKey)
	t0 := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	data := map[string]string{}
	for i := range 12 {
		data[fmt.Sprintf("KEY_%02d", i)] = "v"
	}
	_, base := observeSecret(f, nil, keySecret(data), "1", t0)
	data["KEY_03"] = "changed"
	_, rel := observeSecret(f, &base, keySecret(data), "2", t0.Add(time.Hour))
	names := make([]string, 0, len(data))
	for k := range data {
		names = append(names, k)
	}
	kickv1alpha1.SortKeyNames(names)
	if rel.Keys.Order != kickv1alpha1.KeyOrderNameSHA256 || !rel.Keys.Ordered() {
		t.Fatalf("order %q", rel.Keys.Order)
	}
	for i, name := range names {
		if got, want := rel.Keys.Entries[i].ID, f.KeyName("shop", "Secret", "db", name); got != want {
			t.Fatalf("entry %d is not key %s", i, name)
		}
	}

	// The first key-level manager's shape: entries by id, no order.
	old := rel.DeepCopy()
	old.Keys.Order = ""
	slices.SortFunc(old.Keys.Entries, func(a, b kickv1alpha1.KeyObservation) int { return strings.Compare(a.ID, b.ID) })
	c, up := observeSecret(f, old, keySecret(data), "2", t0.Add(2*time.Hour))
	if c != Upgrade || c.Published() {
		t.Fatalf("class %s, want a quiet Upgrade", c)
	}
	if !up.Keys.Ordered() || !up.LastRelevantChangeTime.Equal(rel.LastRelevantChangeTime.Time) {
		t.Fatalf("upgraded keys %+v", up.Keys)
	}
	for i, name := range names {
		if up.Keys.Entries[i].ID != rel.Keys.Entries[i].ID {
			t.Fatalf("entry %d is not key %s after the upgrade", i, name)
		}
		if fmt.Sprint(up.Keys.Entries[i].Changed) != fmt.Sprint(rel.Keys.Entries[i].Changed) {
			t.Errorf("key %s: changed %v after the upgrade, was %v", name, up.Keys.Entries[i].Changed, rel.Keys.Entries[i].Changed)
		}
	}
	if c, _ := observeSecret(f, &up, keySecret(data), "2", t0.Add(3*time.Hour)); c != NoChange {
		t.Errorf("an ordered record observed again: %s, want NoChange", c)
	}
}
