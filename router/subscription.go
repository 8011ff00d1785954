package router

import (
	"context"
	"errors"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Subscription is one subscriber's bounded FIFO queue. One goroutine (or several) consumes it with
// Next or Run; Close unsubscribes.
type Subscription struct {
	r      *Router
	name   string
	policy QueuePolicy
	filter func(Event) bool
	onDrop func(Event) // nil, or told of every event the queue discards

	delivered, dropped prometheus.Counter
	depth              prometheus.Gauge

	ready     chan struct{} // capacity 1: wakes a consumer waiting in Next
	done      chan struct{} // closed by Close
	closeOnce sync.Once

	mu        sync.Mutex
	buf       []Event // ring of len capacity
	head, n   int
	closed    bool
	space     chan struct{} // created when a publisher waits for room; closed (broadcast) on dequeue
	congested bool          // congestion was logged and the queue has not drained since
}

// SubscribeOption tunes one subscription; see MetricsLabel and OnDrop.
type SubscribeOption func(*subscribeConfig)

type subscribeConfig struct {
	label  string
	onDrop func(Event)
}

// MetricsLabel reports the subscription in the kick_router_* metrics under this "subscriber"
// label value instead of its name. Subscriptions that share a label share the series: their
// counters add up and the depth gauge is the sum of their queues. It keeps the label set small
// for a family of subscriptions whose number is not fixed, such as one per NotificationPolicy.
func MetricsLabel(label string) SubscribeOption {
	return func(c *subscribeConfig) { c.label = label }
}

// OnDrop has fn told of every event the (drop-oldest) queue discards, after it was counted. fn
// runs on the publisher's goroutine with no router lock held; it must be fast, must not block
// and must not publish.
func OnDrop(fn func(Event)) SubscribeOption {
	return func(c *subscribeConfig) { c.onDrop = fn }
}

func newSubscription(r *Router, name string, policy QueuePolicy, capacity int, filter func(Event) bool, cfg subscribeConfig) *Subscription {
	label := name
	if cfg.label != "" {
		label = cfg.label
	}
	s := &Subscription{
		r: r, name: name, policy: policy, filter: filter, onDrop: cfg.onDrop,
		delivered: r.m.delivered.WithLabelValues(label),
		dropped:   r.m.dropped.WithLabelValues(label),
		depth:     r.m.depth.WithLabelValues(label),
		ready:     make(chan struct{}, 1),
		done:      make(chan struct{}),
		buf:       make([]Event, capacity),
	}
	s.depth.Add(0) // the series exists from the start
	return s
}

// Name is the subscriber name given to Subscribe.
func (s *Subscription) Name() string { return s.name }

// Len is the number of queued events.
func (s *Subscription) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// push enqueues ev. It reports false only when a block queue is full; then, if wait is set, the
// returned channel is closed when room may have appeared. Pushing to a closed subscription is a no-op.
func (s *Subscription) push(ev Event, wait bool) (bool, <-chan struct{}) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return true, nil
	}
	full := s.n == len(s.buf)
	if full && s.policy == Block {
		var ch chan struct{}
		logIt := false
		if wait {
			if s.space == nil {
				s.space = make(chan struct{})
			}
			ch = s.space
			logIt, s.congested = !s.congested, true
		}
		s.mu.Unlock()
		if logIt {
			s.r.info("router: subscriber queue full, publisher waiting", "subscriber", s.name, "capacity", len(s.buf))
		}
		return false, ch
	}
	logIt := false
	var lost Event
	if full { // DropOldest
		lost = s.buf[s.head]
		s.buf[s.head] = nil
		s.head = (s.head + 1) % len(s.buf)
		s.n--
		s.dropped.Inc()
		logIt, s.congested = !s.congested, true
	} else {
		s.depth.Inc()
	}
	s.buf[(s.head+s.n)%len(s.buf)] = ev
	s.n++
	s.delivered.Inc()
	s.mu.Unlock()
	select {
	case s.ready <- struct{}{}:
	default:
	}
	if logIt {
		s.r.info("router: subscriber queue full, dropping oldest events", "subscriber", s.name, "capacity", len(s.buf))
	}
	if lost != nil && s.onDrop != nil {
		s.onDrop(lost)
	}
	return true, nil
}

// pushWait enqueues ev, waiting for room. It returns ctx.Err() if ctx ends first; a subscription
// closed meanwhile counts as done.
func (s *Subscription) pushWait(ctx context.Context, ev Event) error {
	for {
		ok, room := s.push(ev, true)
		if ok {
			return nil
		}
		if s.r.onWait != nil {
			s.r.onWait(s.name)
		}
		select {
		case <-room:
		case <-s.done:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Next returns the oldest queued event, waiting for one if the queue is empty. It returns
// ctx.Err() if ctx ends while waiting, and ErrClosed once the subscription is closed (events still
// queued at Close are discarded).
func (s *Subscription) Next(ctx context.Context) (Event, error) {
	for {
		s.mu.Lock()
		if s.n > 0 {
			ev := s.buf[s.head]
			s.buf[s.head] = nil
			s.head = (s.head + 1) % len(s.buf)
			s.n--
			s.depth.Dec()
			if s.n == 0 {
				s.congested = false
			}
			if s.space != nil {
				close(s.space)
				s.space = nil
			}
			more := s.n > 0
			s.mu.Unlock()
			if more { // pass the wake-up on to another consumer, if any
				select {
				case s.ready <- struct{}{}:
				default:
				}
			}
			return ev, nil
		}
		closed := s.closed
		s.mu.Unlock()
		if closed {
			return nil, ErrClosed
		}
		select {
		case <-s.ready:
		case <-s.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Run calls handler for each event, in order, until ctx ends (it returns ctx.Err()) or the
// subscription is closed (it returns nil).
func (s *Subscription) Run(ctx context.Context, handler func(context.Context, Event)) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		ev, err := s.Next(ctx)
		if errors.Is(err, ErrClosed) {
			return nil
		}
		if err != nil {
			return err
		}
		handler(ctx, ev)
	}
}

// Close unsubscribes: queued events are discarded, later publishes skip this subscriber, and
// publishers waiting for room in its queue and consumers waiting in Next return. Idempotent.
func (s *Subscription) Close() {
	s.closeOnce.Do(func() {
		s.r.unsubscribe(s)
		s.mu.Lock()
		s.closed = true
		clear(s.buf)
		s.depth.Sub(float64(s.n))
		s.head, s.n = 0, 0
		if s.space != nil {
			close(s.space)
			s.space = nil
		}
		s.mu.Unlock()
		close(s.done)
	})
}
