package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/assess"
	"github.com/kick-operator/kick/sinks/timeline/entry"
)

// Key-level explanations. A record names keys only by keyed hashes that
// explain cannot compute, but it keeps its entries in the order of
// kickv1alpha1.SortKeyNames. A caller who may read the Secret or ConfigMap
// (explain tries with the caller's own credentials, and only when the
// verdict depends on it) lines its key names up with the entries and gets
// the manager's key-level verdict, with the keys named. Anyone else gets
// the verdict by the whole object, told why: the record alone does not say
// which entry belongs to which name.

// keyLines is what explain learnt about the keys of one source.
type keyLines struct {
	// ids maps each key name the source holds to its entry's id; nil when
	// the keys could not be lined up (why says why).
	ids map[string]string
	why string
	// behind is set when the source changed after its record was written
	// (its resourceVersion differs from the record's last look).
	behind bool
}

// keyLevelRead is the note on a dependency judged key by key.
const keyLevelRead = "judged key by key as the manager does (its keys lined up with the record by reading it with your credentials)"

// lineUpKeys reads the key names of the source of df with the caller's
// credentials and lines them up with the record's entries. It reads only
// when the verdict can depend on it: the workload reads some keys, and
// the record keeps them in order.
func (s *session) lineUpKeys(ctx context.Context, df *depFacts) {
	if df.reads == nil || df.reads.All || df.record == nil || df.record.Spec.Keys == nil {
		return
	}
	h := df.record.Spec.Keys
	switch {
	case df.missing:
		df.keys.why = fmt.Sprintf("%s %s no longer exists, so its key names cannot be read", df.dep.Kind, df.dep.Name)
		return
	case !h.Usable():
		return // remembered as a whole: every change counts, for the manager too
	case !h.Ordered():
		df.keys.why = "the record was written by an older manager, which kept its keys in an order only it can read (the manager rewrites it at its next look)"
		return
	}
	names, rv, err := s.keyNames(ctx, df.dep.Kind, df.dep.Name)
	switch {
	case apierrors.IsForbidden(err):
		df.keys.why = fmt.Sprintf("your credentials may not read %s %s (%q on %ss), and only a caller who can read it can tell which of the record's keys it reads",
			df.dep.Kind, df.dep.Name, "get", strings.ToLower(df.dep.Kind))
		return
	case err != nil:
		df.keys.why = fmt.Sprintf("reading %s %s for its key names failed: %v", df.dep.Kind, df.dep.Name, err)
		return
	case len(names) != len(h.Entries):
		df.keys.why = fmt.Sprintf("%s %s holds %d keys and its record %d: the manager has not recorded its latest change yet",
			df.dep.Kind, df.dep.Name, len(names), len(h.Entries))
		return
	}
	kickv1alpha1.SortKeyNames(names)
	df.keys.ids = make(map[string]string, len(names))
	for i, n := range names {
		df.keys.ids[n] = h.Entries[i].ID
	}
	df.keys.behind = rv != df.record.Spec.LastSeenResourceVersion
}

// keyNames returns the key names of a Secret or ConfigMap and its
// resourceVersion. The values are read too (the API has no way to leave
// them out) and dropped here: nothing else of the object leaves.
func (s *session) keyNames(ctx context.Context, kind, name string) ([]string, string, error) {
	key := client.ObjectKey{Namespace: s.namespace, Name: name}
	var names []string
	switch kind {
	case string(kickv1alpha1.SourceSecret):
		var o corev1.Secret
		if err := s.client.Get(ctx, key, &o); err != nil {
			return nil, "", err
		}
		for k := range o.Data {
			names = append(names, k)
		}
		return names, o.ResourceVersion, nil
	case string(kickv1alpha1.SourceConfigMap):
		var o corev1.ConfigMap
		if err := s.client.Get(ctx, key, &o); err != nil {
			return nil, "", err
		}
		for k := range o.Data {
			names = append(names, k)
		}
		for k := range o.BinaryData {
			names = append(names, k)
		}
		return names, o.ResourceVersion, nil
	}
	return nil, "", fmt.Errorf("%s has no keys", kind)
}

// keyName names a key as the records of the lined-up dependencies do, for
// the assessment; "" for a key the source does not hold.
func (f *facts) keyName(_, kind, source, key string) string {
	for _, df := range f.deps {
		if df.dep.Kind == kind && df.dep.Name == source {
			return df.keys.ids[key]
		}
	}
	return ""
}

// observationEntries is the record's last change on the timeline of w,
// marked (entry.KeysUnread) when the keys are lined up and none of those w
// reads changed then, as the manager's live timeline marks it. Without the
// key names the change stays unmarked.
func observationEntries(df depFacts, w entry.Workload) []entry.Entry {
	es := entry.FromObservation(df.record, []entry.Workload{w})
	spec := &df.record.Spec
	if df.keys.ids == nil || df.reads == nil || spec.Class != kickv1alpha1.ObservationRelevant || spec.LastRelevantChangeTime == nil {
		return es
	}
	c, ok := assess.KeyChange(spec, *df.reads, func(k string) string { return df.keys.ids[k] })
	if ok && c.Latest.Before(spec.LastRelevantChangeTime.Time) {
		for i := range es {
			es[i] = entry.KeysUnread(es[i])
		}
	}
	return es
}

// keyResult is one key a workload reads, named only for a caller who could
// read the source.
type keyResult struct {
	Name string `json:"name"`
	// Changed is when the manager saw the key change, or when its history
	// began (Baseline) for a key unchanged since; absent for a key the
	// source does not hold.
	Changed  *time.Time `json:"changed,omitempty"`
	Baseline bool       `json:"baseline,omitempty"`
	Missing  bool       `json:"missing,omitempty"`
}

// describeKeys fills in how many keys of the source the workload reads and
// whether the manager judges it key by key (policy restart.keys Read and a
// record with per-key history), and whether explain could too. Keys are
// named only when explain lined them up, which needed the right to read
// the source.
func describeKeys(d *dependencyResult, df depFacts, p *kickv1alpha1.KickPolicy) {
	if df.reads == nil {
		return
	}
	d.Reads = "every key"
	if df.reads.All {
		return
	}
	n := len(df.reads.Names)
	d.KeysRead = &n
	every := p != nil && p.Spec.CountsEveryKey()
	if df.record != nil && df.record.Spec.Keys != nil {
		count := int(df.record.Spec.Keys.Count)
		d.KeyEntries = &count
		every = every || !df.record.Spec.Keys.Usable()
	}
	if every || df.record == nil || df.record.Spec.Keys == nil {
		if !every {
			d.Reads = fmt.Sprintf("changes of the %d key(s) it reads", n)
		}
		return
	}
	if df.keys.ids == nil {
		d.Reads = fmt.Sprintf("changes of the %d key(s) it reads", n)
		d.KeyLevel = "the manager counts only changes of the keys read; shown: the newest change of any key, because " + df.keys.why
		return
	}
	d.Reads = "changes of " + strings.Join(df.reads.Names, ", ")
	d.KeyLevel = keyLevelRead
	if df.keys.behind {
		d.KeyLevel += "; the source changed after its record was written, and a change of its content is judged once the manager records it"
	}
	h := df.record.Spec.Keys
	for _, name := range df.reads.Names {
		k := keyResult{Name: name}
		id, ok := df.keys.ids[name]
		switch e := entryByID(h, id); {
		case !ok || e == nil:
			k.Missing = true
		case e.Changed != nil:
			k.Changed = timePtr(e.Changed.Time)
		case h.BaselineFrom != nil:
			k.Changed, k.Baseline = timePtr(h.BaselineFrom.Time), true
		}
		d.Keys = append(d.Keys, k)
	}
}

func entryByID(h *kickv1alpha1.KeyHistory, id string) *kickv1alpha1.KeyObservation {
	for i := range h.Entries {
		if h.Entries[i].ID == id {
			return &h.Entries[i]
		}
	}
	return nil
}

// keysText lists the keys read, with their change times.
func keysText(keys []keyResult) string {
	parts := make([]string, len(keys))
	for i, k := range keys {
		switch {
		case k.Missing:
			parts[i] = k.Name + " (not in the source)"
		case k.Changed == nil:
			parts[i] = k.Name
		case k.Baseline:
			parts[i] = k.Name + " unchanged since " + formatTime(*k.Changed)
		default:
			parts[i] = k.Name + " changed at " + formatTime(*k.Changed)
		}
	}
	return "keys read: " + strings.Join(parts, ", ")
}
