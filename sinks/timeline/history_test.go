package timeline

import (
	"fmt"
	"testing"
	"time"

	"github.com/kick-operator/kick/sinks/timeline/entry"
)

// TestNoisyNamespaceCannotEvictOthers plays a tenant whose namespace
// produces entries without end: the quiet namespaces keep all of their
// history, the noisy one is cut to what is left of the bound, and once
// several namespaces are busy each keeps an equal share.
func TestNoisyNamespaceCannotEvictOthers(t *testing.T) {
	const size = 100
	h := NewHistory(size, 0)
	now := time.Now()
	add := func(ns string, i int) {
		w := entry.Workload{Namespace: ns, Kind: "Deployment", Name: "web"}
		h.Add(entry.NewRestart(w, fmt.Sprintf("r%d", i), now.Add(time.Duration(i)*time.Millisecond), 0))
	}
	count := func() map[string]int {
		n := map[string]int{}
		for _, e := range h.Select(nil) {
			n[e.Namespace]++
		}
		return n
	}
	for i := range 10 {
		add("quiet-1", i)
		add("quiet-2", i)
	}
	for i := range 10 * size {
		add("noisy", 1000+i)
	}
	got := count()
	if got["quiet-1"] != 10 || got["quiet-2"] != 10 || got["noisy"] != size-20 || h.Len() != size {
		t.Fatalf("after the flood: %v (%d held), want quiet-1 and quiet-2 10 each, noisy %d", got, h.Len(), size-20)
	}
	// The noisy namespace's newest entries are the ones kept.
	if es := h.Select(func(e *entry.Entry) bool { return e.Namespace == "noisy" }); !es[0].Time.Equal(now.Add(time.Duration(1000+10*size-(size-20)) * time.Millisecond)) {
		t.Fatalf("noisy's oldest entry kept: %v", es[0].Time)
	}
	// A quiet namespace that gets busy takes its share back from the
	// fullest one, down to an even split.
	for i := range 10 * size {
		add("quiet-1", 2000+i)
		add("noisy", 20000+i)
	}
	got = count()
	if got["quiet-2"] != 10 || got["quiet-1"] != 45 || got["noisy"] != 45 {
		t.Fatalf("two busy namespaces: %v, want quiet-1 45, noisy 45, quiet-2 10", got)
	}
}

// TestHistoryForgetsEmptyNamespaces: namespaces pushed out entirely are no
// longer remembered, so the bound holds for namespaces too.
func TestHistoryForgetsEmptyNamespaces(t *testing.T) {
	h := NewHistory(2, 0)
	now := time.Now()
	for i := range 50 {
		w := entry.Workload{Namespace: fmt.Sprintf("ns-%d", i), Kind: "Deployment", Name: "web"}
		h.Add(entry.NewRestart(w, "r", now.Add(time.Duration(i)*time.Second), 0))
	}
	if len(h.lanes) != 2 || len(h.big) != 2 || h.Len() != 2 {
		t.Fatalf("%d namespaces, %d in the heap, %d entries; want 2 each", len(h.lanes), len(h.big), h.Len())
	}
}
