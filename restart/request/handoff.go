package request

import (
	"sync"
	"time"

	"github.com/kick-operator/kick/restart/freshness"
	"github.com/kick-operator/kick/router"
)

// handedChanges keeps, per workload, the newest change a router event
// announced until a reconcile of that workload has answered it: the cache
// may not show the record yet when the event arrives.
type handedChanges struct {
	mu sync.Mutex
	m  map[WorkloadKey]handoff
	// lastLook is when the driver last finished a look at any workload: a
	// driver that keeps finishing looks is working through its queue.
	lastLook time.Time
}

// handoff is a change a router event announced and the source that changed
// (the newest one's, for the trace), and since when the driver holds a
// change of the workload it has not answered.
type handoff struct {
	change freshness.Change
	// unread is a change of keys the workload does not read (see
	// assess.Facts.HandedUnread).
	unread freshness.Change
	source router.ObjectRef
	since  time.Time
}

func (h *handedChanges) add(k WorkloadKey, c freshness.Change, source router.ObjectRef, at time.Time, unread bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil {
		h.m = map[WorkloadKey]handoff{}
	}
	prev, held := h.m[k]
	next := handoff{change: prev.change, unread: prev.unread, source: prev.source, since: prev.since}
	if unread {
		next.unread = next.unread.Max(c)
	} else {
		next.change = next.change.Max(c)
	}
	if !held {
		next.since = at
	}
	if prev.source.IsZero() || c.Latest.After(prev.change.Latest) {
		next.source = source
	}
	h.m[k] = next
}

func (h *handedChanges) get(k WorkloadKey) handoff {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.m[k]
}

// pending reports whether the driver holds a change of the workload that
// it has not answered and its look, which restarts at once where the gates
// allow, is still coming: the change was handed to it, or the driver
// finished a look at some workload, less than driverLookWait before now
// (a busy driver works through a burst one workload after another), and
// it was handed less than driverLookMax before now.
func (h *handedChanges) pending(k WorkloadKey, now time.Time) bool {
	if h == nil {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	c, held := h.m[k]
	if !held || now.Sub(c.since) >= driverLookMax {
		return false
	}
	progress := c.since
	if h.lastLook.After(progress) {
		progress = h.lastLook
	}
	return now.Sub(progress) < driverLookWait
}

// looked notes that the driver finished a look at some workload.
func (h *handedChanges) looked(at time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if at.After(h.lastLook) {
		h.lastLook = at
	}
}

// How long a request leaves a restart to the driver that was handed the
// change (see pending): driverLookWait without the driver finishing any
// look, so a stuck driver delays the request's own restart by seconds
// only, and driverLookMax in all, longer than a burst of thousands of
// workloads keeps one in the driver's queue.
const (
	driverLookWait = 5 * time.Second
	driverLookMax  = 2 * time.Minute
	driverLookPoll = 200 * time.Millisecond
)

// answered forgets c unless a newer change arrived meanwhile (that one
// re-queued the workload).
func (h *handedChanges) answered(k WorkloadKey, c handoff) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m[k] == c {
		delete(h.m, k)
	}
}
