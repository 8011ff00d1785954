package assess

import (
	"strings"
	"time"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
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
