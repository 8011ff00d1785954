package inflight

import (
	"context"
	"errors"
	"testing"
	"time"
)

var db = Source{Namespace: "ns", Kind: "Secret", Name: "db"}

// stillWaiting runs Wait with a context it then cancels: a Wait that was
// (or would have been) still waiting returns the context's error, one that
// returned on its own returns nil or ErrNotRecorded. The outcome does not
// depend on how soon the goroutine runs, so no pause stands in for "Wait
// did not return".
func stillWaiting(t *testing.T, r *Records, sources []Source) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	waited := make(chan error, 1)
	go func() { waited <- r.Wait(ctx, sources) }()
	cancel()
	if err := <-waited; !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait returned %v on its own while the record was being written", err)
	}
}

func TestWaitReturnsWhenTheRecordIsWritten(t *testing.T) {
	var r Records
	end := r.Begin(db, "7")
	sources := []Source{{Namespace: "ns", Kind: "ConfigMap", Name: "db"}, db}
	stillWaiting(t, &r, sources)
	waited := make(chan error, 1)
	go func() { waited <- r.Wait(context.Background(), sources) }()
	end(true)
	if err := <-waited; err != nil {
		t.Fatal(err)
	}
	if r.Len() != 0 {
		t.Fatalf("a written record is still tracked: %d", r.Len())
	}
}

func TestAFailedWriteHoldsUntilWrittenAgainOrForgotten(t *testing.T) {
	var r Records
	r.Begin(db, "7")(false)
	if err := r.Wait(context.Background(), []Source{db}); !errors.Is(err, ErrNotRecorded) {
		t.Fatalf("after a failed write: %v", err)
	}
	r.Begin(db, "7")(true)
	if err := r.Wait(context.Background(), []Source{db}); err != nil {
		t.Fatalf("after the write was repeated: %v", err)
	}
	r.Begin(db, "7")(false)
	r.Forget(db)
	if err := r.Wait(context.Background(), []Source{db}); err != nil {
		t.Fatalf("after the source was forgotten: %v", err)
	}
}

func TestWaitFollowsANewerWrite(t *testing.T) {
	var r Records
	first := r.Begin(db, "7")
	waited := make(chan error, 1)
	go func() { waited <- r.Wait(context.Background(), []Source{db}) }()
	// A newer change of the source begins its write before the first ends
	// (the first ended in failure; the newer one is what counts).
	second := r.Begin(db, "7")
	first(false)
	stillWaiting(t, &r, []Source{db})
	second(true)
	if err := <-waited; err != nil {
		t.Fatalf("the waiter that began before the newer write: %v", err)
	}
}

func TestWaitEndsWithItsContext(t *testing.T) {
	var r Records
	r.Begin(db, "7")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := r.Wait(ctx, []Source{db}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait: %v", err)
	}
}

func TestNilRecordsTrackNothing(t *testing.T) {
	var r *Records
	r.Begin(db, "7")(false)
	r.Forget(db)
	if err := r.Wait(context.Background(), []Source{db}); err != nil || r.Len() != 0 {
		t.Fatal(err)
	}
}

// TestPendingNamesTheVersionsInFlight: the sources whose records are not
// durable, each with the version being recorded; a written record drops
// out, a failed one stays until written again.
func TestPendingNamesTheVersionsInFlight(t *testing.T) {
	var r Records
	db := Source{Namespace: "shop", Kind: "Secret", Name: "db"}
	cfg := Source{Namespace: "shop", Kind: "ConfigMap", Name: "settings"}
	other := Source{Namespace: "shop", Kind: "Secret", Name: "other"}
	endDB := r.Begin(db, "812")
	endCfg := r.Begin(cfg, "9")
	r.Begin(other, "1")
	got := r.Pending([]Source{db, cfg})
	if len(got) != 2 || got[0] != (Pending{db, "812"}) || got[1] != (Pending{cfg, "9"}) {
		t.Fatalf("Pending = %+v", got)
	}
	endDB(true)
	endCfg(false)
	if got := r.Pending([]Source{db, cfg}); len(got) != 1 || got[0] != (Pending{cfg, "9"}) {
		t.Fatalf("after one written and one failed: %+v", got)
	}
	var none *Records
	if none.Pending([]Source{db}) != nil {
		t.Fatal("a nil Records has something pending")
	}
}

// TestAwaitLooksWaitsForTheRestarterNotLonger: the record of a change
// waits until the restarter looked at every consumer expected, and no
// longer than its bound when one is never looked at.
func TestAwaitLooksWaitsForTheRestarterNotLonger(t *testing.T) {
	var r Records
	web, api := WorkloadKey("Deployment", "shop", "web"), WorkloadKey("Deployment", "shop", "api")
	r.Expect([]string{web, api})
	r.Looked(web)
	// api is never looked at here: AwaitLooks waits out its bound. A timer
	// never fires early, so this lower bound does not depend on the load.
	start := time.Now()
	if r.AwaitLooks(context.Background(), []string{web, api}, 30*time.Millisecond) {
		t.Error("a wait its bound ended reports every look")
	}
	if waited := time.Since(start); waited < 30*time.Millisecond {
		t.Fatalf("returned after %v, before api was looked at", waited)
	}
	done := make(chan struct{})
	go func() {
		if !r.AwaitLooks(context.Background(), []string{web, api}, time.Hour) {
			t.Error("a wait every look ended reports the bound")
		}
		close(done)
	}()
	r.Looked(api)
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("still waiting after every consumer was looked at")
	}

	r.Looked(web)
	r.Looked(web) // again: nothing expected, nothing happens
	// Nothing expected: it returns at once, long before its bound.
	returned := make(chan struct{})
	go func() {
		r.AwaitLooks(context.Background(), []string{web, api}, time.Hour)
		close(returned)
	}()
	select {
	case <-returned:
	case <-time.After(time.Minute):
		t.Error("waited although nothing was expected")
	}
	var none *Records
	none.Expect([]string{web})
	none.Looked(web)
	none.AwaitLooks(context.Background(), []string{web}, time.Minute)
}
