package assess

import (
	"strings"
	"time"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/discovery"
	"github.com/kick-operator/kick/restart/freshness"
)

// RecordedChange reads the change interval of an observation record. A
// baseline recorded to the whole second lies between that second and the
// earlier of its end and the moment KICK first saw the content.
func RecordedChange(spec *kickv1alpha1.SourceObservationSpec) freshness.Change {
	if spec == nil || spec.LastRelevantChangeTime == nil {
		return freshness.Change{}
	}
	c := freshness.At(spec.LastRelevantChangeTime.Time)
	if spec.Class == kickv1alpha1.ObservationBaseline && spec.LastRelevantChangeTime.Nanosecond() == 0 {
		end := c.Earliest.Add(time.Second - time.Nanosecond)
		if seen := spec.BaselineObservedAt; seen != nil && seen.Before(end) && !seen.Before(c.Earliest) {
			end = seen.Time
		}
		c.Latest = end
	}
	return c
}

// KeyChange reads, from an observation record, the newest change of the
// keys a workload reads: a key's own change time, or the history's
// baseline for a key unchanged since it began; a key the source does not
// hold counts the last removal of a key (it may be the one removed). It
// reports false, with the change of the whole object, when the workload
// reads every key, when nameID is nil, or when the record has no usable
// per-key history (written before KICK kept one, or more keys than
// kickv1alpha1.MaxKeyEntries).
func KeyChange(spec *kickv1alpha1.SourceObservationSpec, reads discovery.Keys, nameID func(string) string) (freshness.Change, bool) {
	if spec == nil {
		return freshness.Change{}, false
	}
	h := spec.Keys
	if reads.All || nameID == nil || !h.Usable() {
		return RecordedChange(spec), false
	}
	var base freshness.Change
	if h.BaselineFrom != nil {
		base = freshness.At(h.BaselineFrom.Time)
		if h.BaselineTo != nil && h.BaselineTo.After(base.Earliest) {
			base.Latest = h.BaselineTo.Time
		}
	}
	var c freshness.Change
	for _, name := range reads.Names {
		id := nameID(name)
		found := false
		for i := range h.Entries {
			if e := &h.Entries[i]; e.ID == id {
				found = true
				if e.Changed != nil {
					c = c.Max(freshness.At(e.Changed.Time))
				} else {
					c = c.Max(base)
				}
				break
			}
		}
		if !found && h.Removed != nil {
			c = c.Max(freshness.At(h.Removed.Time))
		}
	}
	return c, true
}

// AnnotatedChange parses the request's ChangeAnnotation: "<t>" for an exact
// change, "<earliest>/<latest>" for one known only to the second. Zero when
// absent or malformed.
func AnnotatedChange(kr *kickv1alpha1.KickRequest) freshness.Change {
	if kr == nil {
		return freshness.Change{}
	}
	v, ok := kr.Annotations[kickv1alpha1.ChangeAnnotation]
	if !ok {
		return freshness.Change{}
	}
	return ParseChange(v)
}

// ParseChange parses a ChangeAnnotation value; zero when malformed.
func ParseChange(v string) freshness.Change {
	first, second, interval := strings.Cut(v, "/")
	e, err := time.Parse(time.RFC3339Nano, first)
	if err != nil {
		return freshness.Change{}
	}
	c := freshness.At(e.UTC())
	if interval {
		if l, err := time.Parse(time.RFC3339Nano, second); err == nil && l.After(e) {
			c.Latest = l.UTC()
		}
	}
	return c
}

// FormatChange renders a change as a ChangeAnnotation value.
func FormatChange(c freshness.Change) string {
	out := c.Earliest.UTC().Format(time.RFC3339Nano)
	if c.Latest.After(c.Earliest) {
		out += "/" + c.Latest.UTC().Format(time.RFC3339Nano)
	}
	return out
}

// Adds reports whether c adds anything to known (a later bound).
func Adds(c, known freshness.Change) bool {
	return c.Earliest.After(known.Earliest) || c.Latest.After(known.Latest)
}

// IsManual reports whether a person or CI created the request.
func IsManual(kr *kickv1alpha1.KickRequest) bool {
	return kr.Labels[kickv1alpha1.ManagedByLabel] != kickv1alpha1.ManagedByKick
}

// CurrentRequest picks the request that stands for the target: the open
// one (the oldest, which coalescing keeps), else the one that finished
// last. Requests being deleted are skipped; nil when none is left.
func CurrentRequest(requests []kickv1alpha1.KickRequest) *kickv1alpha1.KickRequest {
	var open, last *kickv1alpha1.KickRequest
	for i := range requests {
		kr := &requests[i]
		if kr.DeletionTimestamp != nil {
			continue
		}
		if !kr.Status.Phase.IsTerminal() {
			if open == nil || Older(kr, open) {
				open = kr
			}
			continue
		}
		if last == nil || completedAt(kr).After(completedAt(last)) {
			last = kr
		}
	}
	if open != nil {
		return open
	}
	return last
}

// Older orders requests by creation, then name: the oldest open request of
// a target is the one that survives coalescing.
func Older(a, b *kickv1alpha1.KickRequest) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name
}

func completedAt(kr *kickv1alpha1.KickRequest) time.Time {
	if kr.Status.CompletionTime != nil {
		return kr.Status.CompletionTime.Time
	}
	return kr.CreationTimestamp.Time
}
