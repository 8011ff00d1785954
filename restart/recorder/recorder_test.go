package recorder

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	clienttesting "k8s.io/client-go/testing"
)

// clock is a settable Now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func pod(ns, name string) *corev1.Pod {
	return &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name)}}
}

func newTest(t *testing.T, opts Options) (*Broadcaster, *fake.Clientset, *clock) {
	t.Helper()
	cs := fake.NewClientset()
	c := &clock{t: time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)}
	opts.Client, opts.Scheme, opts.Now = cs.EventsV1(), scheme.Scheme, c.Now
	if opts.RetryDelay == 0 {
		opts.RetryDelay = time.Millisecond
	}
	b, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return b, cs, c
}

func queued(b *Broadcaster) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.queued
}

func start(t *testing.T, b *Broadcaster) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	b.Start(ctx)
}

// eventually polls cond until it holds, failing after a deadline.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func eventsIn(t *testing.T, cs *fake.Clientset, ns string) []eventsv1.Event {
	t.Helper()
	l, err := cs.EventsV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return l.Items
}

func TestAnEventIsWrittenAsReported(t *testing.T) {
	b, cs, _ := newTest(t, Options{})
	start(t, b)
	long := strings.Repeat("é", noteLimit) // 2 bytes each
	b.For("kick-request").Eventf(pod("team-a", "api"), pod("team-a", "db"), corev1.EventTypeWarning, "RolloutFailed", "Restart", "%s failed: %s", "api", long)
	eventually(t, "the Event", func() bool { return len(eventsIn(t, cs, "team-a")) == 1 })
	ev := eventsIn(t, cs, "team-a")[0]
	if ev.ReportingController != "kick-request" || !strings.HasPrefix(ev.ReportingInstance, "kick-request-") {
		t.Errorf("reporter %q/%q", ev.ReportingController, ev.ReportingInstance)
	}
	if ev.Type != corev1.EventTypeWarning || ev.Reason != "RolloutFailed" || ev.Action != "Restart" {
		t.Errorf("type/reason/action %q/%q/%q", ev.Type, ev.Reason, ev.Action)
	}
	if ev.Regarding.Name != "api" || ev.Regarding.Kind != "Pod" || ev.Related == nil || ev.Related.Name != "db" {
		t.Errorf("regarding %+v related %+v", ev.Regarding, ev.Related)
	}
	if len(ev.Note) > noteLimit || !utf8.ValidString(ev.Note) || !strings.HasPrefix(ev.Note, "api failed: é") {
		t.Errorf("note of %d bytes (valid UTF-8: %v), want at most %d starting with the formatted text", len(ev.Note), utf8.ValidString(ev.Note), noteLimit)
	}
	if ev.Series != nil {
		t.Errorf("a single occurrence has a series: %+v", ev.Series)
	}
}

func TestRepeatsCountIntoOneSeries(t *testing.T) {
	b, cs, c := newTest(t, Options{})
	rec := b.For("kick-request")
	version := 0
	emit := func() {
		// The object moves on between occurrences; still the same Event.
		version++
		p := pod("ns", "api")
		p.ResourceVersion = fmt.Sprint(version)
		rec.Eventf(p, nil, corev1.EventTypeNormal, "Restarted", "Restart", "restarted for %s", "secret/tls")
	}
	emit()
	start(t, b)
	eventually(t, "the first Event", func() bool { return len(eventsIn(t, cs, "ns")) == 1 })
	for range 4 {
		c.Add(time.Minute) // each within the window of the one before
		emit()
	}
	eventually(t, "a series of 5", func() bool {
		evs := eventsIn(t, cs, "ns")
		return len(evs) == 1 && evs[0].Series != nil && evs[0].Series.Count == 5
	})
	ev := eventsIn(t, cs, "ns")[0]
	if !ev.Series.LastObservedTime.Time.Equal(c.Now()) {
		t.Errorf("series last observed %v, want the last occurrence %v", ev.Series.LastObservedTime.Time, c.Now())
	}
	// Another note is another Event.
	rec.Eventf(pod("ns", "api"), nil, corev1.EventTypeNormal, "Restarted", "Restart", "restarted for %s", "secret/db")
	eventually(t, "the other note's Event", func() bool { return len(eventsIn(t, cs, "ns")) == 2 })
	// After the window, the same note starts a new Event.
	c.Add(DefaultSeriesWindow + time.Second)
	emit()
	eventually(t, "a new Event after the window", func() bool { return len(eventsIn(t, cs, "ns")) == 3 })
}

// A fan-out's Events wait in a queue of fixed length; beyond it they are
// dropped and counted. Recording never blocks and starts no goroutine per
// Event, however slow the API server is.
func TestAFullQueueDropsWithoutBlockingOrGrowing(t *testing.T) {
	reg := prometheus.NewRegistry()
	b, cs, _ := newTest(t, Options{QueueLength: 10, PerNamespace: 1000, Workers: 1, Registerer: reg})
	release := make(chan struct{})
	var creates atomic.Int32
	var holding atomic.Bool
	cs.PrependReactor("create", "events", func(clienttesting.Action) (bool, k8sruntime.Object, error) {
		holding.Store(true)
		<-release // an API server that does not answer
		creates.Add(1)
		return false, nil, nil
	})
	start(t, b)
	rec := b.For("kick-request")
	rec.Eventf(pod("ns", "first"), nil, corev1.EventTypeNormal, "Restarted", "Restart", "first")
	eventually(t, "the worker to hold the first Event", func() bool { return queued(b) == 0 && holding.Load() })

	goroutines := runtime.NumGoroutine()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 1000 {
			rec.Eventf(pod("ns", fmt.Sprintf("app-%d", i)), nil, corev1.EventTypeNormal, "Restarted", "Restart", "restarted")
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("recording blocked on a slow API server")
	}
	if n := runtime.NumGoroutine(); n > goroutines+2 {
		t.Errorf("%d goroutines after 1000 Events, %d before: recording must not start one per Event", n, goroutines)
	}
	if got := testutil.ToFloat64(b.dropped.WithLabelValues("QueueFull")); got != 990 {
		t.Errorf("dropped %v Events for a full queue, want 990 (1000 minus the 10 that fit)", got)
	}
	close(release)
	eventually(t, "the queued Events", func() bool { return len(eventsIn(t, cs, "ns")) == 11 })
	if n := creates.Load(); n != 11 {
		t.Errorf("%d creates, want 11", n)
	}
	if err := testutil.CollectAndCompare(b.dropped, strings.NewReader(`
# HELP kick_events_dropped_total Kubernetes Events not written: the queue (or the namespace's part of it) was full, or the API server refused or kept failing.
# TYPE kick_events_dropped_total counter
kick_events_dropped_total{reason="QueueFull"} 990
`)); err != nil {
		t.Error(err)
	}
}

// A tenant whose fan-out emits hundreds of Events gets at most half the
// queue, and the workers take turns between namespaces: another
// namespace's Event is written right after the first of the fan-out's,
// not after all of them.
func TestNamespacesTakeTurnsAndHoldHalfTheQueueAtMost(t *testing.T) {
	b, cs, _ := newTest(t, Options{QueueLength: 8, Workers: 1})
	var order []string
	var mu sync.Mutex
	cs.PrependReactor("create", "events", func(a clienttesting.Action) (bool, k8sruntime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		order = append(order, a.GetNamespace())
		return false, nil, nil
	})
	rec := b.For("kick-request")
	for i := range 10 {
		rec.Eventf(pod("big", fmt.Sprintf("app-%d", i)), nil, corev1.EventTypeNormal, "Restarted", "Restart", "restarted")
	}
	rec.Eventf(pod("small", "lone"), nil, corev1.EventTypeNormal, "Restarted", "Restart", "restarted")
	if got := testutil.ToFloat64(b.dropped.WithLabelValues("NamespaceQueueFull")); got != 6 {
		t.Errorf("dropped %v of the big namespace's Events, want 6 (it may hold half of 8)", got)
	}
	start(t, b)
	eventually(t, "both namespaces' Events", func() bool {
		return len(eventsIn(t, cs, "small")) == 1 && len(eventsIn(t, cs, "big")) == 4
	})
	mu.Lock()
	defer mu.Unlock()
	if i := slices.Index(order, "small"); i != 1 {
		t.Errorf("the other namespace's Event was written as number %d of %v; taking turns, it is second", i+1, order)
	}
}

// The Events remembered for series are bounded; a repeat of one forgotten
// is written as a new Event.
func TestRememberedEventsAreBounded(t *testing.T) {
	b, cs, _ := newTest(t, Options{Remembered: 4})
	start(t, b)
	rec := b.For("kick-request")
	for i := range 20 {
		rec.Eventf(pod("ns", fmt.Sprintf("app-%d", i)), nil, corev1.EventTypeNormal, "Restarted", "Restart", "restarted")
	}
	eventually(t, "20 Events", func() bool { return len(eventsIn(t, cs, "ns")) == 20 })
	b.mu.Lock()
	seen, order := len(b.seen), b.order.Len()
	b.mu.Unlock()
	if seen != 4 || order != 4 {
		t.Errorf("remembered %d (list %d), want 4", seen, order)
	}
	rec.Eventf(pod("ns", "app-0"), nil, corev1.EventTypeNormal, "Restarted", "Restart", "restarted")
	eventually(t, "a new Event for the forgotten one", func() bool { return len(eventsIn(t, cs, "ns")) == 21 })
}

func TestWritesAreTriedAgainThenDropped(t *testing.T) {
	b, cs, _ := newTest(t, Options{})
	var fails atomic.Int32
	fails.Store(maxTries - 1)
	cs.PrependReactor("create", "events", func(a clienttesting.Action) (bool, k8sruntime.Object, error) {
		ev := a.(clienttesting.CreateAction).GetObject().(*eventsv1.Event)
		if ev.Regarding.Name == "never" || fails.Add(-1) >= 0 {
			return true, nil, apierrors.NewServiceUnavailable("etcd is away")
		}
		return false, nil, nil
	})
	start(t, b)
	rec := b.For("kick-request")
	rec.Eventf(pod("ns", "api"), nil, corev1.EventTypeNormal, "Restarted", "Restart", "restarted")
	eventually(t, "the Event after failures", func() bool { return len(eventsIn(t, cs, "ns")) == 1 })
	rec.Eventf(pod("ns", "never"), nil, corev1.EventTypeNormal, "Restarted", "Restart", "restarted")
	eventually(t, "the failing Event to be dropped", func() bool {
		return testutil.ToFloat64(b.dropped.WithLabelValues("WriteFailed")) == 1
	})
	// An Event the API server calls invalid is not tried again.
	cs.PrependReactor("create", "events", func(a clienttesting.Action) (bool, k8sruntime.Object, error) {
		return true, nil, apierrors.NewInvalid(schema.GroupKind{Group: "events.k8s.io", Kind: "Event"}, "x", nil)
	})
	before := len(cs.Actions())
	rec.Eventf(pod("ns", "bad"), nil, corev1.EventTypeNormal, "Restarted", "Restart", "restarted")
	eventually(t, "the invalid Event to be dropped", func() bool {
		return testutil.ToFloat64(b.dropped.WithLabelValues("WriteFailed")) == 2
	})
	if n := len(cs.Actions()) - before; n != 1 {
		t.Errorf("an invalid Event was tried %d times, want once", n)
	}
}

func TestAnUnknownTypeIsNotWritten(t *testing.T) {
	b, cs, _ := newTest(t, Options{})
	rec := b.For("kick-request")
	rec.Eventf(pod("ns", "api"), nil, "Critical", "Restarted", "Restart", "restarted")
	if queued(b) != 0 || len(eventsIn(t, cs, "ns")) != 0 {
		t.Error("an Event of an unknown type was queued")
	}
}
