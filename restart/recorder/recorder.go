// Package recorder writes the manager's Kubernetes Events
// (events.k8s.io/v1) with bounded memory, never blocking the caller.
//
// client-go's events broadcaster keeps a copy of every Event it wrote for
// six to twelve minutes, and starts one goroutine per Event that then waits
// for the (throttled) API client: a fan-out of thousands of restarts holds
// thousands of Events and goroutines at once (a budgeted fan-out of 500
// peaked 8 MB higher with it in the benchmark). Here instead:
//
//   - Events wait in a queue of fixed length and a few workers write them,
//     taking turns between namespaces: another namespace's Event waits
//     behind one of a fan-out's per worker, not behind all of them. A
//     namespace may hold at most half the queue. An Event that finds no
//     room is dropped and counted (kick_events_dropped_total): Events are
//     a best-effort report, the KickRequests are the record.
//   - A repeat of an Event (the same object, type, reason, action, note and
//     reporter) within the series window is counted into the first one's
//     series (events.k8s.io series), not written again. The Events it
//     remembers for that are a least-recently-used set of fixed size.
package recorder

import (
	"container/list"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	eventsclient "k8s.io/client-go/kubernetes/typed/events/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/reference"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// Defaults of Options.
const (
	DefaultQueueLength  = 8192
	DefaultRemembered   = 256
	DefaultSeriesWindow = 6 * time.Minute // client-go's
	DefaultWorkers      = 2
	// noteLimit is the longest note the API server accepts (1 kB).
	noteLimit = 1024
	// maxTries bounds how often one Event is tried while the API server
	// fails; a worker retrying holds its place, the queue bounds the rest.
	maxTries = 4
)

// Options configure a Broadcaster. Client is required.
type Options struct {
	// Client writes the Events; give it its own rate limit so Events never
	// compete with the restarts they report.
	Client eventsclient.EventsGetter
	Scheme *runtime.Scheme
	// QueueLength is how many Events may wait to be written.
	QueueLength int
	// PerNamespace is how many of those may be one namespace's
	// (default: half of QueueLength).
	PerNamespace int
	// Remembered is how many written Events are remembered to count
	// repeats into their series.
	Remembered int
	// SeriesWindow is how long after an Event's last occurrence a repeat
	// still counts into its series.
	SeriesWindow time.Duration
	Workers      int
	// Registerer receives kick_events_dropped_total (nil: not registered).
	Registerer prometheus.Registerer
	// Now and RetryDelay are for tests.
	Now        func() time.Time
	RetryDelay time.Duration
}

// Broadcaster queues and writes Events for the recorders it makes.
type Broadcaster struct {
	opts    Options
	dropped *prometheus.CounterVec
	// ready wakes a worker when the queue is not empty.
	ready chan struct{}
	host  string

	// lastStamp is the last Event name's time (unix nanoseconds): names
	// stay unique however coarse the clock.
	lastStamp atomic.Int64

	mu sync.Mutex
	// lanes are the queue: each namespace's Events in order, and the
	// namespaces with Events queued in the order they take turns.
	lanes  map[string]*list.List // of *occurrence
	turns  *list.List            // of namespace
	queued int
	seen   map[eventKey]*list.Element // of *occurrence
	order  *list.List                 // least recently seen first
}

// eventKey is what makes two Events the same occurrence.
type eventKey struct {
	namespace                        string
	regarding, related               corev1.ObjectReference
	eventType, reason, action, note  string
	reportingController, reportingID string
}

// occurrence is one remembered Event: the Event written first and how
// often it occurred since. Its fields are guarded by Broadcaster.mu.
type occurrence struct {
	key   eventKey
	event *eventsv1.Event
	count int32
	last  time.Time
	// inQueue: a write waits in the queue; writing: a worker is writing
	// it. A repeat meanwhile needs no write of its own: the queued write
	// takes the latest count, the worker writes again after its write.
	inQueue, writing bool
	// written: the Event exists, holding the series count sent.
	written bool
	sent    int32
}

// New returns a Broadcaster; Start runs its workers.
func New(opts Options) (*Broadcaster, error) {
	if opts.Client == nil {
		return nil, fmt.Errorf("recorder: no client")
	}
	opts.QueueLength = positiveOr(opts.QueueLength, DefaultQueueLength)
	opts.PerNamespace = positiveOr(opts.PerNamespace, max(opts.QueueLength/2, 1))
	opts.Remembered = positiveOr(opts.Remembered, DefaultRemembered)
	opts.SeriesWindow = positiveOr(opts.SeriesWindow, DefaultSeriesWindow)
	opts.Workers = positiveOr(opts.Workers, DefaultWorkers)
	opts.RetryDelay = positiveOr(opts.RetryDelay, 2*time.Second)
	if opts.Now == nil {
		opts.Now = time.Now
	}
	host, _ := os.Hostname()
	b := &Broadcaster{
		opts:  opts,
		ready: make(chan struct{}, 1),
		host:  host,
		lanes: map[string]*list.List{},
		turns: list.New(),
		seen:  map[eventKey]*list.Element{},
		order: list.New(),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kick_events_dropped_total",
			Help: "Kubernetes Events not written: the queue (or the namespace's part of it) was full, or the API server refused or kept failing.",
		}, []string{"reason"}),
	}
	if opts.Registerer != nil {
		if err := opts.Registerer.Register(b.dropped); err != nil {
			return nil, fmt.Errorf("recorder: %w", err)
		}
	}
	return b, nil
}

// Start runs the workers until ctx ends; Events still queued then are not
// written.
func (b *Broadcaster) Start(ctx context.Context) {
	for range b.opts.Workers {
		go b.work(ctx)
	}
}

// For returns a recorder that reports as the named component.
func (b *Broadcaster) For(component string) events.EventRecorder {
	return &recorder{b: b, controller: component, instance: component + "-" + b.host}
}

type recorder struct {
	b                    *Broadcaster
	controller, instance string
}

// Eventf implements events.EventRecorder. It never blocks.
func (r *recorder) Eventf(regarding, related runtime.Object, eventType, reason, action, note string, args ...any) {
	b := r.b
	ctx := context.Background()
	if eventType != corev1.EventTypeNormal && eventType != corev1.EventTypeWarning {
		log.FromContext(ctx).Error(nil, "not an Event type; the Event is not written", "type", eventType, "reason", reason)
		return
	}
	ref, err := reference.GetReference(b.opts.Scheme, regarding)
	if err != nil {
		log.FromContext(ctx).Error(err, "no reference to the Event's object; the Event is not written", "reason", reason)
		return
	}
	var relatedRef *corev1.ObjectReference
	if related != nil {
		relatedRef, _ = reference.GetReference(b.opts.Scheme, related)
	}
	now := b.opts.Now()
	ev := &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Name:      fmt.Sprintf("%s.%x", ref.Name, b.stamp(now)),
			Namespace: ref.Namespace,
		},
		EventTime:           metav1.NewMicroTime(now),
		ReportingController: r.controller,
		ReportingInstance:   r.instance,
		Action:              action,
		Reason:              reason,
		Regarding:           *ref,
		Related:             relatedRef,
		Note:                truncate(fmt.Sprintf(note, args...), noteLimit),
		Type:                eventType,
	}
	if ev.Namespace == "" {
		ev.Namespace = metav1.NamespaceDefault
	}
	b.record(ev, now)
}

// stamp is now in unix nanoseconds, after every stamp given before.
func (b *Broadcaster) stamp(now time.Time) int64 {
	for {
		last, n := b.lastStamp.Load(), now.UnixNano()
		if n <= last {
			n = last + 1
		}
		if b.lastStamp.CompareAndSwap(last, n) {
			return n
		}
	}
}

// record counts ev into the series of an Event remembered from within the
// window, or remembers it as a new one; either queues a write unless one
// is queued already.
func (b *Broadcaster) record(ev *eventsv1.Event, now time.Time) {
	k := keyOf(ev)
	b.mu.Lock()
	defer b.mu.Unlock()
	if el, ok := b.seen[k]; ok {
		o := el.Value.(*occurrence)
		if now.Sub(o.last) < b.opts.SeriesWindow {
			o.count++
			o.last = now
			b.order.MoveToBack(el)
			b.enqueue(o)
			return
		}
		b.forget(el)
	}
	o := &occurrence{key: k, event: ev, count: 1, last: now}
	b.seen[k] = b.order.PushBack(o)
	for b.order.Len() > b.opts.Remembered {
		b.forget(b.order.Front())
	}
	b.enqueue(o)
}

func (b *Broadcaster) forget(el *list.Element) {
	delete(b.seen, el.Value.(*occurrence).key)
	b.order.Remove(el)
}

// enqueue queues a write of o unless one is queued or under way; b.mu is
// held.
func (b *Broadcaster) enqueue(o *occurrence) {
	if o.inQueue || o.writing {
		return
	}
	ns := o.event.Namespace
	lane := b.lanes[ns]
	switch {
	case lane != nil && lane.Len() >= b.opts.PerNamespace:
		b.dropped.WithLabelValues("NamespaceQueueFull").Inc()
		return
	case b.queued >= b.opts.QueueLength:
		b.dropped.WithLabelValues("QueueFull").Inc()
		return
	}
	if lane == nil {
		lane = list.New()
		b.lanes[ns] = lane
		b.turns.PushBack(ns)
	}
	lane.PushBack(o)
	o.inQueue = true
	b.queued++
	b.wake()
}

// next takes the first Event of the namespace whose turn it is; nil when
// the queue is empty. b.mu is held.
func (b *Broadcaster) next() *occurrence {
	front := b.turns.Front()
	if front == nil {
		return nil
	}
	ns := front.Value.(string)
	lane := b.lanes[ns]
	o := lane.Remove(lane.Front()).(*occurrence)
	b.queued--
	if lane.Len() == 0 {
		delete(b.lanes, ns)
		b.turns.Remove(front)
	} else {
		b.turns.MoveToBack(front)
	}
	if b.queued > 0 {
		b.wake() // for another worker
	}
	return o
}

func (b *Broadcaster) wake() {
	select {
	case b.ready <- struct{}{}:
	default:
	}
}

func (b *Broadcaster) work(ctx context.Context) {
	for ctx.Err() == nil {
		b.mu.Lock()
		o := b.next()
		if o != nil {
			o.inQueue, o.writing = false, true
		}
		b.mu.Unlock()
		if o != nil {
			b.write(ctx, o)
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-b.ready:
		}
	}
}

// write creates o's Event, or patches its series count when it exists;
// repeats counted meanwhile are queued for another write.
func (b *Broadcaster) write(ctx context.Context, o *occurrence) {
	b.mu.Lock()
	ev, count, last, written := o.event, o.count, o.last, o.written
	b.mu.Unlock()

	ok := b.send(ctx, ev, count, last, written)

	b.mu.Lock()
	defer b.mu.Unlock()
	o.writing = false
	if !ok {
		return
	}
	o.written, o.sent = true, count
	if o.count > o.sent {
		b.enqueue(o)
	}
}

// send writes the Event: a patch of its series when written, else a create
// (with its series when it occurred more than once). It tries again while
// the API server fails, up to maxTries.
func (b *Broadcaster) send(ctx context.Context, ev *eventsv1.Event, count int32, last time.Time, written bool) bool {
	client := b.opts.Client.Events(ev.Namespace)
	for try := 1; ; try++ {
		var err error
		if written {
			patch := fmt.Sprintf(`{"series":{"count":%d,"lastObservedTime":%q}}`, count, last.UTC().Format(metav1.RFC3339Micro))
			_, err = client.Patch(ctx, ev.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
			if apierrors.IsNotFound(err) {
				written = false // gone meanwhile (its time to live): write it again
			}
		}
		if !written {
			create := ev.DeepCopy()
			if count > 1 {
				create.Series = &eventsv1.EventSeries{Count: count, LastObservedTime: metav1.NewMicroTime(last)}
			}
			_, err = client.Create(ctx, create, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				err = nil // an earlier try that failed on the way back
			}
		}
		if err == nil {
			return true
		}
		if apierrors.IsInvalid(err) || apierrors.IsForbidden(err) || apierrors.IsBadRequest(err) || try >= maxTries || ctx.Err() != nil {
			b.dropped.WithLabelValues("WriteFailed").Inc()
			log.FromContext(ctx).V(1).Info("an Event was not written", "reason", ev.Reason, "namespace", ev.Namespace, "error", err.Error())
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(b.opts.RetryDelay + rand.N(b.opts.RetryDelay/4+1)):
		}
	}
}

// positiveOr is v when positive, else d.
func positiveOr[T int | time.Duration](v, d T) T {
	if v > 0 {
		return v
	}
	return d
}

func keyOf(ev *eventsv1.Event) eventKey {
	k := eventKey{
		namespace: ev.Namespace, regarding: ev.Regarding,
		eventType: ev.Type, reason: ev.Reason, action: ev.Action, note: ev.Note,
		reportingController: ev.ReportingController, reportingID: ev.ReportingInstance,
	}
	if ev.Related != nil {
		k.related = *ev.Related
	}
	// The object's version at the time says nothing about the occurrence.
	k.regarding.ResourceVersion, k.related.ResourceVersion = "", ""
	return k
}

// truncate cuts s to at most n bytes, at a character boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}
