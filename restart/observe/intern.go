package observe

import (
	"slices"
	"strconv"
	"strings"
	"sync"
	"unique"
)

// Cached source metadata repeats itself: every Secret of a namespace holds
// the same namespace string, and many share one label set (a Helm chart's,
// an operator's). The cache transform keeps one copy of each instead of one
// per object. Sharing is safe because cached objects are never modified:
// the cache hands out deep copies.
//
// The table of shared label sets is bounded in bytes, not only in sets: a
// tenant controls the labels of its Secrets, and a source's labels can take
// most of the API server's 1.5 MiB object limit. Only small sets are shared
// (the common case: a few labels a chart or an operator stamps on many
// objects); a larger set stays with its object and goes when the object
// goes. When the table is full it starts over, so sets no object uses any
// more are forgotten; the objects keep the maps they were given.

const (
	// maxLabelSets bounds the number of label sets in the table.
	maxLabelSets = 4096
	// maxLabelSetBytes is the largest label set (keys and values) that is
	// shared; a chart's or an operator's set is a few hundred bytes.
	maxLabelSetBytes = 2 << 10
	// maxLabelTableBytes bounds what the table holds, counted by labelSetCost.
	maxLabelTableBytes = 2 << 20
	// labelEntryCost approximates a map entry's overhead beyond its strings.
	labelEntryCost = 48
)

var labelSets = struct {
	sync.Mutex
	byKey map[string]map[string]string
	bytes int // sum of labelSetCost over byKey
}{byKey: map[string]map[string]string{}}

// internString returns the shared copy of s.
func internString(s string) string {
	if s == "" {
		return ""
	}
	return unique.Make(s).Value()
}

// labelBytes returns the bytes of a label set's keys and values.
func labelBytes(labels map[string]string) int {
	n := 0
	for k, v := range labels {
		n += len(k) + len(v)
	}
	return n
}

// labelSetCost is what the table holds for a set: its key, its strings and
// its map entries.
func labelSetCost(key string, labels map[string]string) int {
	return len(key) + labelBytes(labels) + labelEntryCost*len(labels)
}

// internLabels returns a shared map equal to labels, or labels itself when
// the set is too large to share.
func internLabels(labels map[string]string) map[string]string {
	if len(labels) == 0 {
		return nil
	}
	if labelBytes(labels) > maxLabelSetBytes {
		return labels
	}
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		// Lengths first, so no key or value can forge a separator.
		b.WriteString(strconv.Itoa(len(k)))
		b.WriteByte(':')
		b.WriteString(k)
		b.WriteString(strconv.Itoa(len(labels[k])))
		b.WriteByte(':')
		b.WriteString(labels[k])
	}
	key := b.String()
	labelSets.Lock()
	defer labelSets.Unlock()
	if shared, ok := labelSets.byKey[key]; ok {
		return shared
	}
	cost := labelSetCost(key, labels)
	if len(labelSets.byKey) >= maxLabelSets || labelSets.bytes+cost > maxLabelTableBytes {
		// Full: start over. The sets still in use stay with their objects.
		labelSets.byKey = map[string]map[string]string{}
		labelSets.bytes = 0
	}
	shared := make(map[string]string, len(labels))
	for k, v := range labels {
		shared[internString(k)] = internString(v)
	}
	labelSets.byKey[key] = shared
	labelSets.bytes += cost
	return shared
}
