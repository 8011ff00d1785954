package timeline

import (
	"container/heap"
	"hash/maphash"
	"sort"
	"sync"
	"time"

	"github.com/kick-operator/kick/sinks/timeline/entry"
)

// History is a bounded, thread-safe memory of entries: at most Size of
// them, none older than MaxAge. An entry whose ID it already holds is
// ignored, so rebuilding and live events may overlap.
//
// Namespaces share the bound fairly: when the history is full, a new entry
// pushes out the oldest entry of the namespace that holds the most (its own
// namespace's when that holds as many). So a namespace is never pushed out
// by one holding fewer entries than itself: with n namespaces writing, each
// keeps at least Size/n entries however busy the others are, and a quiet
// namespace keeps all of its history while it holds less than that.
type History struct {
	size   int
	maxAge time.Duration
	now    func() time.Time

	mu    sync.RWMutex
	lanes map[string]*nsQueue // by namespace; none empty
	big   bySize              // the same queues, the fullest first
	total int
	ids   map[uint64]struct{}
	seed  maphash.Seed
}

// nsQueue is one namespace's entries in insertion order.
type nsQueue struct {
	namespace string
	entries   []entry.Entry // IDs dropped (see idOf)
	idOf      []uint64      // hash of each entry's ID, 0 for none
	head      int           // index of the oldest entry held
	index     int           // position in History.big
}

func (q *nsQueue) len() int { return len(q.entries) - q.head }

// NewHistory returns a history of at most size entries no older than maxAge
// (0: no age limit).
func NewHistory(size int, maxAge time.Duration) *History {
	if size < 1 {
		size = 1
	}
	return &History{size: size, maxAge: maxAge, now: time.Now, lanes: map[string]*nsQueue{},
		ids: map[uint64]struct{}{}, seed: maphash.MakeSeed()}
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
		q := h.lanes[e.Namespace]
		if q == nil {
			q = &nsQueue{namespace: e.Namespace}
			h.lanes[e.Namespace] = q
			heap.Push(&h.big, q)
		}
		if h.total >= h.size {
			victim := h.big[0]
			if q.len() >= victim.len() {
				victim = q
			}
			h.dropOldest(victim)
			if victim != q && victim.len() == 0 {
				heap.Remove(&h.big, victim.index)
				delete(h.lanes, victim.namespace)
			}
		}
		q.entries = append(q.entries, e)
		q.idOf = append(q.idOf, idh)
		h.total++
		heap.Fix(&h.big, q.index)
	}
}

// dropOldest forgets q's oldest entry.
func (h *History) dropOldest(q *nsQueue) {
	if old := q.idOf[q.head]; old != 0 {
		delete(h.ids, old)
	}
	q.entries[q.head], q.idOf[q.head] = entry.Entry{}, 0
	q.head++
	h.total--
	if q.head >= 64 && q.head*2 >= len(q.entries) {
		n := copy(q.entries, q.entries[q.head:])
		copy(q.idOf, q.idOf[q.head:])
		clear(q.entries[n:])
		q.entries, q.idOf, q.head = q.entries[:n], q.idOf[:n], 0
	}
	if q.len() == 0 {
		q.entries, q.idOf, q.head = nil, nil, 0
	}
	heap.Fix(&h.big, q.index)
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
	return h.total
}

// Select returns copies of the entries keep accepts that are younger than
// MaxAge, deduplicated and sorted by time.
func (h *History) Select(keep func(*entry.Entry) bool) []entry.Entry {
	h.mu.RLock()
	cutoff := h.cutoff()
	var out []entry.Entry
	// Namespaces in a fixed order, so entries of the same time keep one
	// order from request to request.
	namespaces := make([]string, 0, len(h.lanes))
	for ns := range h.lanes {
		namespaces = append(namespaces, ns)
	}
	sort.Strings(namespaces)
	for _, ns := range namespaces {
		q := h.lanes[ns]
		for i := q.head; i < len(q.entries); i++ {
			e := &q.entries[i]
			if (cutoff.IsZero() || !e.Time.Before(cutoff)) && (keep == nil || keep(e)) {
				out = append(out, *e)
			}
		}
	}
	h.mu.RUnlock()
	return entry.Dedupe(out)
}

// bySize is a max-heap of namespace queues by the number of entries held.
type bySize []*nsQueue

func (b bySize) Len() int           { return len(b) }
func (b bySize) Less(i, j int) bool { return b[i].len() > b[j].len() }
func (b bySize) Swap(i, j int) {
	b[i], b[j] = b[j], b[i]
	b[i].index, b[j].index = i, j
}
func (b *bySize) Push(x any) {
	q := x.(*nsQueue)
	q.index = len(*b)
	*b = append(*b, q)
}
func (b *bySize) Pop() any {
	old := *b
	q := old[len(old)-1]
	old[len(old)-1] = nil
	*b = old[:len(old)-1]
	return q
}
