package timeline

import (
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
	ring []entry.Entry // insertion order, len == size once full
	head int           // index of the oldest entry once full
	ids  map[string]struct{}
}

// NewHistory returns a history of at most size entries no older than maxAge
// (0: no age limit).
func NewHistory(size int, maxAge time.Duration) *History {
	if size < 1 {
		size = 1
	}
	return &History{size: size, maxAge: maxAge, now: time.Now, ids: map[string]struct{}{}}
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
		if e.ID != "" {
			if _, dup := h.ids[e.ID]; dup {
				continue
			}
			h.ids[e.ID] = struct{}{}
		}
		if len(h.ring) < h.size {
			h.ring = append(h.ring, e)
			continue
		}
		if old := h.ring[h.head].ID; old != "" {
			delete(h.ids, old)
		}
		h.ring[h.head] = e
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
