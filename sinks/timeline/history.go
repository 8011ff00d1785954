package timeline

import (
	"hash/maphash"
	"sync"
	"time"

	"github.com/kick-operator/kick/sinks/timeline/entry"
)

// History is a bounded, thread-safe memory of entries: at most Size of
// them, none older than MaxAge; the oldest go first. An entry whose ID it
// already holds is ignored, so rebuilding and live events may overlap.
type History struct {
	size   int
	maxAge time.Duration
	now    func() time.Time

	mu   sync.RWMutex
	ring []entry.Entry // insertion order, len == size once full; IDs dropped (see idOf)
	idOf []uint64      // hash of each ring entry's ID, 0 for none
	head int           // index of the oldest entry once full
	ids  map[uint64]struct{}
	seed maphash.Seed
}

// NewHistory returns a history of at most size entries no older than maxAge
// (0: no age limit).
func NewHistory(size int, maxAge time.Duration) *History {
	if size < 1 {
		size = 1
	}
	return &History{size: size, maxAge: maxAge, now: time.Now, ids: map[uint64]struct{}{}, seed: maphash.MakeSeed()}
}

// Add records entries.
func (h *History) Add(es ...entry.Entry) {
	h.mu.Lock()
	defer h.mu.Unlock()
	cutoff := h.cutoff()
	for _, e := range es {
		if !cutoff.IsZero() && e.Time.Before(cutoff) {
			continue
		}
		// Only a hash of the ID is kept: it is what the memory of a long
		// history is mostly made of otherwise.
		var idh uint64
		if e.ID != "" {
			idh = maphash.String(h.seed, e.ID) | 1
			if _, dup := h.ids[idh]; dup {
				continue
			}
			h.ids[idh] = struct{}{}
			e.ID = ""
		}
		if len(h.ring) < h.size {
			h.ring = append(h.ring, e)
			h.idOf = append(h.idOf, idh)
			continue
		}
		if old := h.idOf[h.head]; old != 0 {
			delete(h.ids, old)
		}
		h.ring[h.head], h.idOf[h.head] = e, idh
		h.head = (h.head + 1) % h.size
	}
}

func (h *History) cutoff() time.Time {
	if h.maxAge <= 0 {
		return time.Time{}
	}
	return h.now().Add(-h.maxAge)
}

// Len is the number of entries held.
func (h *History) Len() int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return len(h.ring)
}

// Select returns copies of the entries keep accepts that are younger than
// MaxAge, deduplicated and sorted by time.
func (h *History) Select(keep func(*entry.Entry) bool) []entry.Entry {
	h.mu.RLock()
	cutoff := h.cutoff()
	var out []entry.Entry
	for i := range h.ring {
		e := &h.ring[i]
		if (cutoff.IsZero() || !e.Time.Before(cutoff)) && (keep == nil || keep(e)) {
			out = append(out, *e)
		}
	}
	h.mu.RUnlock()
	return entry.Dedupe(out)
}
