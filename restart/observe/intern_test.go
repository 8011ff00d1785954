package observe

import (
	"fmt"
	"maps"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// resetLabelSets empties the shared table, for tests that measure it.
func resetLabelSets(t *testing.T) {
	t.Helper()
	labelSets.Lock()
	labelSets.byKey, labelSets.bytes = map[string]map[string]string{}, 0
	labelSets.Unlock()
	t.Cleanup(func() {
		labelSets.Lock()
		labelSets.byKey, labelSets.bytes = map[string]map[string]string{}, 0
		labelSets.Unlock()
	})
}

// bigLabels is a label set of about size bytes whose values all carry round, as a tenant's
// Secret patched with new label values would.
func bigLabels(size, round int) map[string]string {
	labels := map[string]string{}
	for i, n := 0, 0; n < size; i++ {
		k, v := fmt.Sprintf("example.com/label-%05d", i), fmt.Sprintf("r%06d-%s", round, strings.Repeat("v", 50))
		labels[k] = v
		n += len(k) + len(v)
	}
	return labels
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestInternTableStaysBoundedUnderLargeLabelSets plays a tenant that patches a consumed Secret
// with new large label sets, over and over: what the shared table keeps must not grow with
// the number of patches once the objects that used the sets are gone.
func TestInternTableStaysBoundedUnderLargeLabelSets(t *testing.T) {
	resetLabelSets(t)
	const rounds, size = 130, 256 << 10 // 130 patches of 256 KiB (the attack used 1 MB)
	before := heapInUse()
	for round := range rounds {
		labels := bigLabels(size, round)
		got := internLabels(labels)
		if !maps.Equal(got, labels) {
			t.Fatalf("round %d: interned labels differ from the object's", round)
		}
		// The object (and its labels) is replaced by the next patch: nothing else holds got.
	}
	held := int64(heapInUse()) - int64(before)
	labelSets.Lock()
	sets, bytes := len(labelSets.byKey), labelSets.bytes
	labelSets.Unlock()
	t.Logf("after %d patches of %d KiB of labels: table %d sets, %d bytes counted, heap grew by %d KiB", rounds, size>>10, sets, bytes, held>>10)
	if bytes > maxLabelTableBytes {
		t.Errorf("the table counts %d bytes, over its bound of %d", bytes, maxLabelTableBytes)
	}
	// The table's bound plus slack for the runtime; without a byte bound it held every set,
	// rounds*size*2 (key and strings), about 65 MiB.
	if limit := int64(maxLabelTableBytes + 4<<20); held > limit {
		t.Errorf("heap grew by %d KiB after the objects went, want at most %d KiB", held>>10, limit>>10)
	}
}

// TestInternTableBoundedInBytesForSmallSets: many distinct sets each under the per-set bound
// still cannot make the table hold more than its byte bound.
func TestInternTableBoundedInBytesForSmallSets(t *testing.T) {
	resetLabelSets(t)
	for round := range 20_000 {
		internLabels(bigLabels(maxLabelSetBytes-100, round))
		labelSets.Lock()
		bytes := labelSets.bytes
		labelSets.Unlock()
		if bytes > maxLabelTableBytes {
			t.Fatalf("after %d sets the table counts %d bytes, over its bound of %d", round+1, bytes, maxLabelTableBytes)
		}
	}
	// Equal small sets are still shared after the table started over.
	a := internLabels(map[string]string{"app": "web", "tier": "db"})
	b := internLabels(map[string]string{"tier": "db", "app": "web"})
	if reflect.ValueOf(a).Pointer() != reflect.ValueOf(b).Pointer() {
		t.Error("two equal small label sets are not shared")
	}
}
