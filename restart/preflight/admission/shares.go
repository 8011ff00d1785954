package admission

import "sync"

// Shares charges the reviews being answered to the namespaces they write
// in, so that one namespace's flood of writes cannot take every slot of the
// webhook. Every namespace may hold at most its fair share of the slots:
// the bound divided by one more than the namespaces being answered (itself
// included), at least one. The "one more" keeps room for a namespace that
// is not being answered yet: a namespace alone gets half the slots, two
// get a third each, and a newcomer always finds a slot while fewer than the
// bound are taken.
type Shares struct {
	mu    sync.Mutex
	max   int
	total int
	held  map[string]int
}

// NewShares bounds the reviews answered at once to slots (<= 0 means
// DefaultMaxInFlight), shared fairly between namespaces.
func NewShares(slots int) *Shares {
	if slots <= 0 {
		slots = DefaultMaxInFlight
	}
	return &Shares{max: slots, held: map[string]int{}}
}

// Take charges one review to namespace. It reports false, charging
// nothing, when the namespace holds its share or every slot is taken;
// otherwise release gives the slot back (once).
func (s *Shares) Take(namespace string) (release func(), ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	namespaces := len(s.held)
	if s.held[namespace] == 0 {
		namespaces++ // the namespace asking counts as being answered
	}
	if s.total >= s.max || s.held[namespace] >= fairShare(s.max, namespaces) {
		return nil, false
	}
	s.total++
	s.held[namespace]++
	var once sync.Once
	return func() { once.Do(func() { s.give(namespace) }) }, true
}

func (s *Shares) give(namespace string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.total--
	if s.held[namespace]--; s.held[namespace] <= 0 {
		delete(s.held, namespace)
	}
}

// fairShare is what one of n namespaces being answered may hold of
// slots, leaving room for one more namespace.
func fairShare(slots, n int) int {
	return max(1, slots/(n+1))
}
