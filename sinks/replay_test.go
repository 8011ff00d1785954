package sinks

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kick-operator/kick/router"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// TestWatermark: the watermark stays publishLag behind the clock, never passes the oldest
// pending event (counted per time, so two events at one time need two dones), and does not
// go back before its floor unless an event that old is pending.
func TestWatermark(t *testing.T) {
	p := pendingTimes{}
	if got := watermark(t0, time.Time{}, p); !got.Equal(t0.Add(-publishLag)) {
		t.Fatalf("nothing pending: %v, want now-publishLag", got)
	}
	if got := watermark(t0, t0.Add(-time.Second), p); !got.Equal(t0.Add(-time.Second)) {
		t.Fatalf("floor ignored: %v", got)
	}
	old := t0.Add(-time.Hour)
	p.add(old)
	p.add(old)
	p.add(t0.Add(-time.Minute / 2))
	if got := watermark(t0, t0, p); !got.Equal(old) {
		t.Fatalf("pending event at %v, watermark %v", old, got)
	}
	p.done(old)
	if got := watermark(t0, t0, p); !got.Equal(old) {
		t.Fatalf("one of two events at %v done, watermark %v", old, got)
	}
	p.done(old)
	if got := watermark(t0, time.Time{}, p); !got.Equal(t0.Add(-publishLag)) {
		t.Fatalf("an event newer than now-publishLag holds the watermark at %v", got)
	}
	p.done(t0.Add(-time.Minute / 2))
	p.done(t0) // not pending: no effect
	if len(p) != 0 {
		t.Fatalf("left pending: %v", p)
	}
}

// TestReplayFrom: a replay starts at the watermark, but no earlier than the window.
func TestReplayFrom(t *testing.T) {
	if got := replayFrom(t0.Add(-10*time.Minute), t0, time.Hour); !got.Equal(t0.Add(-10 * time.Minute)) {
		t.Errorf("recent watermark: %v", got)
	}
	if got := replayFrom(t0.Add(-3*time.Hour), t0, time.Hour); !got.Equal(t0.Add(-time.Hour)) {
		t.Errorf("old watermark: %v, want the window's start", got)
	}
}

// TestWatermarkFollowsQueue: events the policy accepted hold the watermark in the status patch
// while queued; delivered or dropped, they let it move on.
func TestWatermarkFollowsQueue(t *testing.T) {
	d, _ := testDispatcher(t, 1)
	p := policy("https://hooks.example.com/x")
	st := applyPolicy(t, d, p, mustBuild(t, p, nil), nil)
	handled := func(now time.Time) time.Time {
		t.Helper()
		st.mu.Lock()
		defer st.mu.Unlock()
		var doc struct {
			Status struct{ HandledThrough metav1.Time }
		}
		data, _ := json.Marshal(st.statusPatch(now))
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatal(err)
		}
		return doc.Status.HandledThrough.Time
	}
	now := time.Now()
	older, newer := phaseChanged("Succeeded"), phaseChanged("Failed")
	older.Time, newer.Time = now.Add(-2*time.Hour), now.Add(-time.Hour)
	newer.Request.UID = "other"
	publish(t, d, older)
	if got := handled(now); !got.Equal(older.Time.Truncate(time.Second)) {
		t.Fatalf("queued event at %v, handledThrough %v", older.Time, got)
	}
	publish(t, d, newer) // the queue holds one: older is dropped, given up
	if got := handled(now); !got.Equal(newer.Time.Truncate(time.Second)) {
		t.Fatalf("after a drop handledThrough is %v, want the queued event's %v", got, newer.Time)
	}
	ev := next(t, st) // in flight
	if got := handled(now); !got.Equal(newer.Time.Truncate(time.Second)) {
		t.Fatalf("in flight at %v, handledThrough %v", newer.Time, got)
	}
	d.finished(st, ev)
	if got := handled(now); got.Before(now.Add(-publishLag - time.Second)) {
		t.Fatalf("nothing pending, handledThrough %v stays behind", got)
	}
}

// TestCanceledDeliveryStaysPending: a delivery cut short by the manager stopping is not
// handled: the final status write keeps the watermark before it.
func TestCanceledDeliveryStaysPending(t *testing.T) {
	d, _ := testDispatcher(t, 4)
	url, got := blockingReceiver(t, make(chan struct{}))
	p := policy(url)
	st := applyPolicy(t, d, p, mustBuild(t, p, nil), nil)
	ev := phaseChanged("Succeeded")
	ev.Time = time.Now().Add(-time.Hour)
	publish(t, d, ev)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-got; cancel() }() // the manager stops while the endpoint has not answered
	d.handle(ctx, st, next(t, st))
	st.mu.Lock()
	defer st.mu.Unlock()
	if w := st.watermarkLocked(time.Now()); w.After(ev.Time) {
		t.Fatalf("a canceled delivery counts as handled: watermark %v, event %v", w, ev.Time)
	}
	if st.delivered != 0 || st.failed != 0 {
		t.Fatalf("a canceled delivery was counted: delivered %d failed %d", st.delivered, st.failed)
	}
}

// fakeReplay is a ReplaySource returning fixed events, and the since it was asked for.
type fakeReplay struct {
	evs   []router.Event
	err   error
	since time.Time
	calls int
}

func (f *fakeReplay) Events(_ context.Context, namespace string, since time.Time) ([]router.Event, error) {
	f.calls++
	f.since = since
	if namespace != testNS {
		return nil, errors.New("wrong namespace " + namespace)
	}
	return f.evs, f.err
}

// replayDispatcher is testDispatcher with src as replay source and a one-hour window.
func replayDispatcher(t *testing.T, src ReplaySource) *dispatcher {
	d, _ := testDispatcher(t, 8)
	d.opts.Replay, d.opts.ReplayWindow = src, time.Hour
	return d
}

// TestReplayFilter: a policy with a watermark replays, oldest first, the events it delivers
// that are not older than its watermark nor than the window; until it has read them its
// watermark does not move, then they hold it like queued events.
func TestReplayFilter(t *testing.T) {
	now := time.Now()
	mark := now.Add(-10 * time.Minute)
	ev := func(to string, uid string, at time.Time, labels map[string]string) router.PhaseChanged {
		e := phaseChanged(to)
		e.Request.UID, e.Time, e.TargetLabels = uid, at, labels
		return e
	}
	web := map[string]string{"app": "web"}
	late := ev("Succeeded", "late", now.Add(-time.Minute), web)
	undelivered := ev("Failed", "undelivered", mark.Add(time.Second), web)
	atMark := ev("Succeeded", "at-mark", mark, web)
	handled := ev("Succeeded", "handled", mark.Add(-time.Second), web)
	otherPhase := ev("Executing", "executing", mark.Add(time.Minute), web)
	otherWorkload := ev("Succeeded", "db", mark.Add(time.Minute), map[string]string{"app": "db"})
	gate := gateChanged(false) // the policy does not ask for gate changes
	gate.Time = mark.Add(time.Minute)
	src := &fakeReplay{evs: []router.Event{late, handled, otherPhase, undelivered, otherWorkload, gate, atMark}}
	d := replayDispatcher(t, src)

	p := policy("https://hooks.example.com/x")
	p.Spec.WorkloadSelector = &metav1.LabelSelector{MatchLabels: web}
	p.Status.HandledThrough = &metav1.Time{Time: mark}
	st := applyPolicy(t, d, p, mustBuild(t, p, nil), nil)
	st.mu.Lock()
	if w := st.watermarkLocked(now); !w.Equal(mark) {
		t.Errorf("before the replay the watermark moved to %v", w)
	}
	st.mu.Unlock()

	got := d.replay(context.Background(), st)
	if !src.since.Equal(mark) {
		t.Errorf("asked for events since %v, want the watermark %v", src.since, mark)
	}
	want := []router.PhaseChanged{atMark, undelivered, late}
	if len(got) != len(want) {
		t.Fatalf("replayed %d events, want %d: %v", len(got), len(want), got)
	}
	for i, w := range want {
		if g, ok := got[i].(router.PhaseChanged); !ok || g.TransitionID() != w.TransitionID() {
			t.Errorf("replayed event %d is %v, want %s", i, got[i], w.Request.UID)
		}
	}
	st.mu.Lock()
	if w := st.watermarkLocked(now); !w.Equal(mark) {
		t.Errorf("replayed events pending from %v, watermark %v", mark, w)
	}
	st.mu.Unlock()
	if d.replay(context.Background(), st) != nil || src.calls != 1 {
		t.Error("a policy replayed twice")
	}
	for _, ev := range got {
		d.finished(st, ev)
	}
	st.mu.Lock()
	if w := st.watermarkLocked(now); !w.Equal(now.Add(-publishLag)) {
		t.Errorf("all replayed events handled, watermark %v", w)
	}
	st.mu.Unlock()
}

// TestReplayOnlyWithWatermark: a policy without a watermark is new and replays nothing (its
// watermark starts at its first reconcile); an old watermark replays only the window; a failed
// read keeps the watermark where it was.
func TestReplayOnlyWithWatermark(t *testing.T) {
	now := time.Now()
	recent := phaseChanged("Succeeded")
	recent.Time = now.Add(-time.Minute)
	src := &fakeReplay{evs: []router.Event{recent}}
	d := replayDispatcher(t, src)
	p := policy("https://hooks.example.com/x")
	st := applyPolicy(t, d, p, mustBuild(t, p, nil), nil)
	if got := d.replay(context.Background(), st); got != nil || src.calls != 0 {
		t.Fatalf("a new policy replayed %v", got)
	}
	st.mu.Lock()
	if w := st.watermarkLocked(now); w.Before(now.Add(-time.Second)) {
		t.Errorf("a new policy's watermark is %v, want its first reconcile", w)
	}
	st.mu.Unlock()

	old := policy("https://hooks.example.com/x")
	old.Name, old.UID = "old", "uid-old"
	old.Status.HandledThrough = &metav1.Time{Time: now.Add(-5 * time.Hour)}
	src.err = errors.New("cache gone")
	st = applyPolicy(t, d, old, mustBuild(t, old, nil), nil)
	if got := d.replay(context.Background(), st); got != nil {
		t.Fatalf("replayed %v despite the error", got)
	}
	if src.since.Before(now.Add(-time.Hour - time.Second)) {
		t.Errorf("asked since %v, beyond the one-hour window", src.since)
	}
	st.mu.Lock()
	if w := st.watermarkLocked(now); !w.Equal(old.Status.HandledThrough.Time) {
		t.Errorf("after a failed replay the watermark moved to %v", w)
	}
	st.mu.Unlock()
}

// TestNoReplayWithoutSource: without a source or window nothing is replayed and the stored
// watermark is only a floor.
func TestNoReplayWithoutSource(t *testing.T) {
	d, _ := testDispatcher(t, 4)
	p := policy("https://hooks.example.com/x")
	p.Status.HandledThrough = &metav1.Time{Time: time.Now().Add(-time.Hour)}
	st := applyPolicy(t, d, p, mustBuild(t, p, nil), nil)
	if st.replaying || d.replay(context.Background(), st) != nil {
		t.Fatal("replay without a source")
	}
}
