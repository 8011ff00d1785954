package observe

import (
	"testing"
	"time"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
)

func record(fp, rv, keyID string, theta time.Time) *kickv1alpha1.SourceObservation {
	n := kickv1alpha1.NewNanoTime(theta)
	return &kickv1alpha1.SourceObservation{Spec: kickv1alpha1.SourceObservationSpec{
		Source:                      kickv1alpha1.ObservedSource{APIVersion: "v1", Kind: "Secret", Name: "db"},
		LastSeenResourceVersion:     rv,
		LastRelevantResourceVersion: rv,
		LastRelevantChangeTime:      &n,
		RelevantFingerprint:         fp,
		FingerprintKeyID:            keyID,
		Class:                       kickv1alpha1.ObservationBaseline,
	}}
}

func TestClassify(t *testing.T) {
	theta := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	rec := record("aa", "5", "k1", theta)
	for _, tc := range []struct {
		name          string
		rec           *kickv1alpha1.SourceObservation
		fp, rv, keyID string
		want          Class
	}{
		{"no record", nil, "aa", "5", "k1", Baseline},
		{"same", rec, "aa", "5", "k1", NoChange},
		{"metadata only", rec, "aa", "6", "k1", MetaOnly},
		{"content", rec, "bb", "6", "k1", Relevant},
		{"content, same rv", rec, "bb", "5", "k1", Relevant},
		{"new key", rec, "bb", "6", "k2", Rebaseline},
		{"new key, same rv", rec, "cc", "5", "k2", Rebaseline},
		{"record without key id", record("aa", "5", "", theta), "aa", "5", "k1", Rebaseline},
	} {
		if got := Classify(tc.rec, tc.fp, tc.rv, tc.keyID); got != tc.want {
			t.Errorf("%s: Classify = %s, want %s", tc.name, got, tc.want)
		}
	}
	for c, want := range map[Class][2]bool{
		Baseline: {true, true}, Relevant: {true, true}, Rebaseline: {true, false}, MetaOnly: {false, false}, NoChange: {false, false},
	} {
		if c.Persisted() != want[0] || c.Published() != want[1] {
			t.Errorf("%s: Persisted, Published = %v, %v; want %v", c, c.Persisted(), c.Published(), want)
		}
	}
}

func TestNext(t *testing.T) {
	lambda := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	theta := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	now := time.Date(2026, 3, 1, 11, 0, 0, 123456789, time.UTC)
	src := kickv1alpha1.ObservedSource{APIVersion: "v1", Kind: "Secret", Name: "db"}
	obs := Observed{Source: src, Fingerprint: "bb", KeyID: "k1", ResourceVersion: "9", LastWrite: lambda}

	base := Next(nil, Baseline, obs, now)
	if base.LastRelevantChangeTime == nil || !base.LastRelevantChangeTime.Equal(lambda) {
		t.Errorf("Baseline θ = %v, want λ = %v (never now)", base.LastRelevantChangeTime, lambda)
	}
	if base.Class != kickv1alpha1.ObservationBaseline || base.LastSeenResourceVersion != "9" || base.LastRelevantResourceVersion != "9" ||
		base.RelevantFingerprint != "bb" || base.FingerprintKeyID != "k1" || base.Source != src {
		t.Errorf("Baseline record = %+v", base)
	}

	prev := record("aa", "5", "k1", theta).Spec
	rel := Next(&prev, Relevant, obs, now)
	if !rel.LastRelevantChangeTime.Equal(now) || rel.LastRelevantChangeTime.Nanosecond() != 123456789 {
		t.Errorf("Relevant θ = %v, want now = %v with nanoseconds", rel.LastRelevantChangeTime, now)
	}
	if rel.Class != kickv1alpha1.ObservationRelevant || rel.LastRelevantResourceVersion != "9" || rel.RelevantFingerprint != "bb" {
		t.Errorf("Relevant record = %+v", rel)
	}
	if prev.RelevantFingerprint != "aa" || !prev.LastRelevantChangeTime.Equal(theta) {
		t.Error("Next modified the previous record")
	}

	// A manager clock behind the API server cannot date a change before its write.
	skewed := obs
	skewed.LastWrite = now.Add(2 * time.Second).Truncate(time.Second)
	if got := Next(&prev, Relevant, skewed, now); !got.LastRelevantChangeTime.Equal(skewed.LastWrite) {
		t.Errorf("Relevant θ = %v, want λ %v when now is earlier", got.LastRelevantChangeTime, skewed.LastWrite)
	}

	// Seen by the cache before the reconcile: the content is dated by the cache's receipt, so
	// a restart made between the receipt and the reconcile is not repeated for it.
	seen := obs
	seen.SeenAt = now.Add(-300 * time.Millisecond)
	if got := Next(&prev, Relevant, seen, now); !got.LastRelevantChangeTime.Equal(seen.SeenAt) {
		t.Errorf("Relevant θ = %v, want the cache's receipt %v", got.LastRelevantChangeTime, seen.SeenAt)
	}
	if got := Next(nil, Baseline, seen, now); got.BaselineObservedAt == nil || !got.BaselineObservedAt.Equal(seen.SeenAt) {
		t.Errorf("baselineObservedAt = %v, want the cache's receipt %v", got.BaselineObservedAt, seen.SeenAt)
	}
	if got := Next(nil, Baseline, obs, now); got.BaselineObservedAt == nil || !got.BaselineObservedAt.Equal(now) {
		t.Errorf("baselineObservedAt = %v, want now %v when the receipt is unknown", got.BaselineObservedAt, now)
	}
	// A receipt time after now (a clock going backwards) is not believed.
	late := obs
	late.SeenAt = now.Add(time.Hour)
	if got := Next(&prev, Relevant, late, now); !got.LastRelevantChangeTime.Equal(now) {
		t.Errorf("Relevant θ = %v, want now %v when the receipt lies in the future", got.LastRelevantChangeTime, now)
	}

	// A managedFields time in the future (whoever writes the Secret sets it)
	// is not believed: it would date the change after every later restart.
	lying := obs
	lying.LastWrite = time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)
	if got := Next(&prev, Relevant, lying, now); !got.LastRelevantChangeTime.Equal(now) {
		t.Errorf("Relevant θ = %v, want now %v for a future managedFields time", got.LastRelevantChangeTime, now)
	}
	if got := Next(nil, Baseline, lying, now); !got.LastRelevantChangeTime.Equal(now) {
		t.Errorf("Baseline θ = %v, want now %v for a future managedFields time", got.LastRelevantChangeTime, now)
	}

	rekeyed := obs
	rekeyed.KeyID = "k2"
	reb := Next(&prev, Rebaseline, rekeyed, now)
	if !reb.LastRelevantChangeTime.Equal(theta) || reb.Class != prev.Class || reb.LastRelevantResourceVersion != "5" {
		t.Errorf("Rebaseline must keep θ, class and the relevant resourceVersion: %+v", reb)
	}
	if reb.RelevantFingerprint != "bb" || reb.FingerprintKeyID != "k2" || reb.LastSeenResourceVersion != "9" {
		t.Errorf("Rebaseline must record the new fingerprint and key: %+v", reb)
	}

	for _, c := range []Class{MetaOnly, NoChange} {
		o := obs
		o.Fingerprint = "aa"
		got := Next(&prev, c, o, now)
		if !got.LastRelevantChangeTime.Equal(theta) || got.LastRelevantResourceVersion != "5" || got.Class != prev.Class {
			t.Errorf("%s must keep θ: %+v", c, got)
		}
	}
}
