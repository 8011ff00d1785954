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

// maxLabelSets bounds the label sets kept shared; past it, new sets are
// stored per object as before.
const maxLabelSets = 4096

var labelSets = struct {
	sync.Mutex
	byKey map[string]map[string]string
}{byKey: map[string]map[string]string{}}

// internString returns the shared copy of s.
func internString(s string) string {
	if s == "" {
		return ""
	}
	return unique.Make(s).Value()
}

// internLabels returns a shared map equal to labels.
func internLabels(labels map[string]string) map[string]string {
	if len(labels) == 0 {
		return nil
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
	if len(labelSets.byKey) >= maxLabelSets {
		return labels
	}
	shared := make(map[string]string, len(labels))
	for k, v := range labels {
		shared[internString(k)] = internString(v)
	}
	labelSets.byKey[key] = shared
	return shared
}
