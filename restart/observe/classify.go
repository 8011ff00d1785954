package observe

import (
	"time"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/freshness"
)

// Class is the outcome of comparing an observed source with its record (operator model §4).
type Class string

const (
	// Baseline: no record yet. The content is dated from the source's last recorded write.
	Baseline Class = "Baseline"
	// Relevant: the content fingerprint changed. The content is dated from the observation.
	Relevant Class = "Relevant"
	// Rebaseline: the record was fingerprinted with another installation key, so the
	// fingerprints cannot be compared. The new fingerprint is recorded, and nothing is
	// treated as changed.
	Rebaseline Class = "Rebaseline"
	// MetaOnly: same content, new resourceVersion (labels, annotations, ...).
	MetaOnly Class = "MetaOnly"
	// NoChange: same content, same resourceVersion.
	NoChange Class = "NoChange"
	// Upgrade: same content, but the record has no per-key history yet (it
	// was written by a version of KICK that kept none). The history is
	// added, every key dated like the record's current change, and nothing
	// is announced.
	Upgrade Class = "Upgrade"
)

// Observed is what the observer knows about one source at one moment.
type Observed struct {
	Source          kickv1alpha1.ObservedSource
	Fingerprint     string
	KeyID           string
	ResourceVersion string
	// LastWrite is λ(s); zero when the object carried no timestamps at all.
	LastWrite time.Time
	// Keys are the per-key prints; nil when the content was not read (the
	// record's own prints stand for it then).
	Keys *KeyPrints
	// SeenAt is when this manager first received the observed resourceVersion (SeenAt of the
	// cached copy); zero when unknown, for example when the read returned a newer version than
	// the cache holds. The content was written no later than this.
	SeenAt time.Time
}

// firstSeen is the earliest moment KICK knows the observed content existed: when its cache
// received it, else now.
func (o Observed) firstSeen(now time.Time) time.Time {
	if !o.SeenAt.IsZero() && o.SeenAt.Before(now) {
		return o.SeenAt
	}
	return now
}

// Classify compares the observed fingerprint and resourceVersion of a source with its record
// (nil: there is none). keyID identifies the key that produced fingerprint.
func Classify(rec *kickv1alpha1.SourceObservation, fingerprint, resourceVersion, keyID string) Class {
	switch {
	case rec == nil:
		return Baseline
	case rec.Spec.FingerprintKeyID != keyID:
		return Rebaseline
	case rec.Spec.RelevantFingerprint != fingerprint:
		return Relevant
	case rec.Spec.LastSeenResourceVersion != resourceVersion:
		return MetaOnly
	}
	return NoChange
}

// Persisted reports whether an observation of this class changes the record in a way that must
// be written: the relevant fields change only for Baseline, Relevant and Rebaseline. MetaOnly
// would only advance lastSeenResourceVersion, which is not worth a write.
func (c Class) Persisted() bool {
	return c == Baseline || c == Relevant || c == Rebaseline || c == Upgrade
}

// Published reports whether an observation of this class is announced to consumers.
func (c Class) Published() bool { return c == Baseline || c == Relevant }

// Next returns the record spec after an observation o classified as class at time now, starting
// from prev (nil when there is no record).
//
// The change time θ is λ(s) for Baseline (never the observation time: adopting a workload must
// not make its sources look newer than they are), the moment KICK first saw the new content for
// Relevant, and unchanged otherwise. "First saw" is when the cache received that resourceVersion
// (o.SeenAt) when known, else now: a restart KICK made after that moment certainly carries the
// content, so dating the change by the later reconcile would repeat such a restart for nothing.
// The same moment bounds a baseline from above (baselineObservedAt).
// For Relevant θ is max(seen, λ(s)): λ is a whole second the API server recorded at or before
// the write, so this only matters when the manager's clock runs behind the API server's, and then
// it keeps the change from being dated before a rollout that it actually follows.
func Next(prev *kickv1alpha1.SourceObservationSpec, class Class, o Observed, now time.Time) kickv1alpha1.SourceObservationSpec {
	// Whoever can write the source controls its managedFields times: a time
	// after the manager's clock is not believed (freshness.MaxClockSkew).
	o.LastWrite, _ = freshness.NotAfter(o.LastWrite, now)
	var spec kickv1alpha1.SourceObservationSpec
	if prev != nil && class != Baseline {
		spec = *prev.DeepCopy()
	}
	spec.Source = o.Source
	spec.LastSeenResourceVersion = o.ResourceVersion
	switch class {
	case Baseline:
		spec.Class = kickv1alpha1.ObservationBaseline
		spec.LastRelevantResourceVersion = o.ResourceVersion
		spec.LastRelevantChangeTime = nanoPtr(o.LastWrite)
		spec.BaselineObservedAt = nanoPtr(o.firstSeen(now))
	case Relevant:
		spec.BaselineObservedAt = nil
		spec.Class = kickv1alpha1.ObservationRelevant
		spec.LastRelevantResourceVersion = o.ResourceVersion
		theta := o.firstSeen(now)
		if o.LastWrite.After(theta) {
			theta = o.LastWrite
		}
		spec.LastRelevantChangeTime = nanoPtr(theta)
	case Rebaseline:
		if spec.LastRelevantChangeTime == nil || spec.LastRelevantChangeTime.IsZero() {
			// A record without a change time has nothing to keep; date it like a baseline.
			spec.LastRelevantChangeTime = nanoPtr(o.LastWrite)
			spec.BaselineObservedAt = nanoPtr(o.firstSeen(now))
			spec.Class = kickv1alpha1.ObservationBaseline
		}
		if spec.LastRelevantResourceVersion == "" {
			spec.LastRelevantResourceVersion = o.ResourceVersion
		}
	}
	spec.RelevantFingerprint = o.Fingerprint
	spec.FingerprintKeyID = o.KeyID
	if o.Keys != nil {
		spec.Keys = nextKeys(prev, class, o.Keys, &spec)
	}
	return spec
}

func nanoPtr(t time.Time) *kickv1alpha1.NanoTime {
	if t.IsZero() {
		return nil
	}
	n := kickv1alpha1.NewNanoTime(t.Round(0).UTC())
	return &n
}
