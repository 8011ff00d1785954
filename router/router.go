package router

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// QueuePolicy says what Publish does when a subscriber's queue is full.
type QueuePolicy int

const (
	// Block makes Publish wait for room (back-pressure): no event is ever dropped. For the restart driver.
	Block QueuePolicy = iota + 1
	// DropOldest discards the oldest queued event and counts it; Publish never waits. For sinks and the timeline.
	DropOldest
)

func (p QueuePolicy) String() string {
	switch p {
	case Block:
		return "Block"
	case DropOldest:
		return "DropOldest"
	}
	return fmt.Sprintf("QueuePolicy(%d)", int(p))
}

// ErrClosed is returned by Publish and Subscribe after Router.Close, and by Subscription.Next after
// the subscription (or its router) was closed.
var ErrClosed = errors.New("router: closed")

// Publisher is what observers and GitOps providers depend on; *Router implements it.
type Publisher interface {
	Publish(ctx context.Context, ev Event) error
}

// Subscriber is what event consumers depend on; *Subscription implements it.
type Subscriber interface {
	Next(ctx context.Context) (Event, error)
	Len() int
	Close()
}

var (
	_ Publisher  = (*Router)(nil)
	_ Subscriber = (*Subscription)(nil)
)

// Options configure a Router.
type Options struct {
	// Registerer receives the kick_router_* metrics (controller-runtime's metrics.Registry in the
	// manager, a fresh prometheus.NewRegistry() in tests). Nil: metrics are kept but not exported.
	Registerer prometheus.Registerer
	// Log, if set, is told when a subscriber's queue becomes congested (a drop-oldest queue starts
	// dropping, or a publisher starts waiting on a block queue); once until that queue drains.
	// Its signature matches logr.Logger.Info.
	Log func(msg string, keysAndValues ...any)
}

// Router fans each published event out to the queues of the subscribers whose filter accepts it.
// It starts no goroutines; each subscription is consumed by its owner's goroutine.
type Router struct {
	m      *metrics
	log    func(msg string, keysAndValues ...any)
	onWait func(subscriber string) // test hook: a publisher is about to wait for room

	mu     sync.Mutex                      // serialises Subscribe, unsubscribe and Close
	subs   atomic.Pointer[[]*Subscription] // copy-on-write snapshot read by Publish
	closed atomic.Bool
}

// New returns a router. It panics if the metrics cannot be registered (as prometheus.MustRegister
// does), except that collectors already registered by another router are shared.
func New(opts Options) *Router {
	r := &Router{m: newMetrics(opts.Registerer), log: opts.Log}
	r.subs.Store(&[]*Subscription{})
	return r
}

// Subscribe adds a subscriber with its own FIFO queue of the given capacity. filter selects the
// events it receives (nil: all); it runs on the publisher's goroutine, so it must be fast,
// non-blocking and safe for concurrent use. Names must be unique among open subscriptions.
func (r *Router) Subscribe(name string, policy QueuePolicy, capacity int, filter func(Event) bool, opts ...SubscribeOption) (*Subscription, error) {
	switch {
	case name == "":
		return nil, errors.New("router: subscriber name is empty")
	case policy != Block && policy != DropOldest:
		return nil, fmt.Errorf("router: subscriber %q: unknown queue policy %v", name, policy)
	case capacity < 1:
		return nil, fmt.Errorf("router: subscriber %q: capacity %d, must be at least 1", name, capacity)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed.Load() {
		return nil, ErrClosed
	}
	old := *r.subs.Load()
	for _, s := range old {
		if s.name == name {
			return nil, fmt.Errorf("router: subscriber %q already exists", name)
		}
	}
	var cfg subscribeConfig
	for _, o := range opts {
		o(&cfg)
	}
	s := newSubscription(r, name, policy, capacity, filter, cfg)
	next := make([]*Subscription, len(old), len(old)+1)
	copy(next, old)
	next = append(next, s)
	r.subs.Store(&next)
	return s, nil
}

func (r *Router) unsubscribe(s *Subscription) {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := *r.subs.Load()
	next := make([]*Subscription, 0, len(old))
	for _, o := range old {
		if o != s {
			next = append(next, o)
		}
	}
	r.subs.Store(&next)
}

// Close closes every subscription (unblocking waiting publishers and consumers); later Publish and
// Subscribe calls return ErrClosed. It is idempotent.
func (r *Router) Close() {
	r.mu.Lock()
	r.closed.Store(true)
	subs := *r.subs.Load()
	r.subs.Store(&[]*Subscription{})
	r.mu.Unlock()
	for _, s := range subs {
		s.Close()
	}
}

// Publish enqueues ev for every open subscriber whose filter accepts it. Drop-oldest subscribers
// and block subscribers with room get it at once; only then does Publish wait, in subscription
// order, for block subscribers whose queues are full. If ctx ends while it waits, it returns a
// *PublishError that wraps ctx.Err() and names the subscribers that did not get the event.
// A subscription closed while Publish waits on it is skipped.
func (r *Router) Publish(ctx context.Context, ev Event) error {
	if ev == nil {
		return errors.New("router: publish of a nil event")
	}
	if r.closed.Load() {
		return ErrClosed
	}
	r.m.published[ev.Kind()].Inc()
	var buf [8]*Subscription
	pending := buf[:0]
	for _, s := range *r.subs.Load() {
		if s.filter != nil && !s.filter(ev) {
			continue
		}
		if ok, _ := s.push(ev, false); !ok {
			pending = append(pending, s)
		}
	}
	if len(pending) == 0 {
		return nil
	}
	return r.waitPush(ctx, ev, pending)
}

func (r *Router) waitPush(ctx context.Context, ev Event, pending []*Subscription) error {
	start := time.Now()
	defer func() { r.m.wait.Observe(time.Since(start).Seconds()) }()
	for i, s := range pending {
		if err := s.pushWait(ctx, ev); err != nil {
			names := []string{s.name}
			for _, rest := range pending[i+1:] {
				if ok, _ := rest.push(ev, false); !ok {
					names = append(names, rest.name)
				}
			}
			return &PublishError{Event: ev.Kind(), Key: ev.Key(), Subscribers: names, Err: err}
		}
	}
	return nil
}

func (r *Router) info(msg string, keysAndValues ...any) {
	if r.log != nil {
		r.log(msg, keysAndValues...)
	}
}

// PublishError reports an event that some block subscribers did not get because the publisher's
// context ended while it waited for room. Subscribers[0] is the one Publish was waiting on.
type PublishError struct {
	Event       EventKind
	Key         string
	Subscribers []string
	Err         error // the context's error
}

func (e *PublishError) Error() string {
	return fmt.Sprintf("router: %s %q not delivered: waiting for subscriber %s: %v",
		e.Event, e.Key, strings.Join(e.Subscribers, ", "), e.Err)
}

func (e *PublishError) Unwrap() error { return e.Err }
