package sinks

import (
	"context"
	"sync"

	"github.com/kick-operator/kick/router"
)

// queue is one policy's bounded FIFO of pending deliveries. push never blocks: when the queue is
// full the oldest pending event makes room and push reports it.
type queue struct {
	mu      sync.Mutex
	buf     []router.PhaseChanged // ring
	head, n int
	ready   chan struct{} // capacity 1: wakes the worker
}

func newQueue(capacity int) *queue {
	return &queue{buf: make([]router.PhaseChanged, max(capacity, 1)), ready: make(chan struct{}, 1)}
}

// push appends ev, dropping the oldest pending event when full; it reports whether it dropped.
func (q *queue) push(ev router.PhaseChanged) (dropped bool) {
	q.mu.Lock()
	if q.n == len(q.buf) {
		q.buf[q.head] = router.PhaseChanged{}
		q.head = (q.head + 1) % len(q.buf)
		q.n--
		dropped = true
	}
	q.buf[(q.head+q.n)%len(q.buf)] = ev
	q.n++
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
	return dropped
}

// pop returns the oldest pending event, waiting for one; false when ctx ends first.
func (q *queue) pop(ctx context.Context) (router.PhaseChanged, bool) {
	for {
		q.mu.Lock()
		if q.n > 0 {
			ev := q.buf[q.head]
			q.buf[q.head] = router.PhaseChanged{}
			q.head = (q.head + 1) % len(q.buf)
			q.n--
			q.mu.Unlock()
			return ev, true
		}
		q.mu.Unlock()
		select {
		case <-q.ready:
		case <-ctx.Done():
			return router.PhaseChanged{}, false
		}
	}
}

// len is the number of pending events.
func (q *queue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.n
}
