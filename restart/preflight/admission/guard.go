package admission

import (
	"net/http"
	"time"
)

// Bounds of the webhook's intake.
const (
	// MaxBody bounds a review's body. The API server keeps objects of at
	// most about 1.5 MiB and a review of an update carries two; in JSON,
	// with a Secret's bytes in base64, they take up to about 4 MiB. A
	// larger body is refused unread (413) and the write goes ahead
	// unassessed.
	MaxBody = 4 << 20
	// DefaultMaxInFlight is how many reviews are read and answered at
	// once; beyond it a review is refused at once (429).
	DefaultMaxInFlight = 8
	// readTimeout bounds the reading of one body, so a slow sender cannot
	// hold a slot; the API server gives up after one second anyway.
	readTimeout = 2 * time.Second
)

// Guard bounds what reaches the webhook handler: bodies of at most MaxBody
// bytes, read within a deadline, and at most MaxInFlight reviews at once.
// A review over a bound is refused straight away without being read: the
// API server counts it as a failed call and, the webhook failing open
// (failurePolicy Ignore), lets the write through without warnings.
type Guard struct {
	next  http.Handler
	slots chan struct{}
}

// NewGuard guards next; maxInFlight <= 0 means DefaultMaxInFlight.
func NewGuard(next http.Handler, maxInFlight int) *Guard {
	if maxInFlight <= 0 {
		maxInFlight = DefaultMaxInFlight
	}
	return &Guard{next: next, slots: make(chan struct{}, maxInFlight)}
}

// ServeHTTP implements http.Handler.
func (g *Guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	select {
	case g.slots <- struct{}{}:
		defer func() { <-g.slots }()
	default:
		http.Error(w, "kick preflight: too many reviews at once", http.StatusTooManyRequests)
		return
	}
	if r.ContentLength > MaxBody {
		http.Error(w, "kick preflight: review body too large", http.StatusRequestEntityTooLarge)
		return
	}
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(readTimeout))
	r.Body = http.MaxBytesReader(w, r.Body, MaxBody)
	g.next.ServeHTTP(w, r)
}
