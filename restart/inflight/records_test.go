package inflight

import (
	"context"
	"errors"
	"testing"
	"time"
)

var db = Source{Namespace: "ns", Kind: "Secret", Name: "db"}

func TestWaitReturnsWhenTheRecordIsWritten(t *testing.T) {
	var r Records
	end := r.Begin(db, "7")
	waited := make(chan error, 1)
	go func() {
		waited <- r.Wait(context.Background(), []Source{{Namespace: "ns", Kind: "ConfigMap", Name: "db"}, db})
	}()
	select {
	case err := <-waited:
		t.Fatalf("Wait returned %v while the record was being written", err)
	case <-time.After(50 * time.Millisecond):
	}
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
	select {
	case err := <-waited:
		t.Fatalf("Wait returned %v while a newer write was in flight", err)
	case <-time.After(50 * time.Millisecond):
	}
	second(true)
	if err := <-waited; err != nil {
		t.Fatal(err)
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
	done := make(chan struct{})
	go func() {
		r.AwaitLooks(context.Background(), []string{web, api}, time.Minute)
		close(done)
	}()
	r.Looked(web)
	select {
	case <-done:
		t.Fatal("returned before api was looked at")
	case <-time.After(20 * time.Millisecond):
	}
	r.Looked(api)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("still waiting after every consumer was looked at")
	}

	r.Expect([]string{web})
	start := time.Now()
	r.AwaitLooks(context.Background(), []string{web}, 30*time.Millisecond)
	if waited := time.Since(start); waited < 30*time.Millisecond || waited > 5*time.Second {
		t.Errorf("waited %v for a workload never looked at, want the 30ms bound", waited)
	}
	r.Looked(web)
	r.Looked(web) // again: nothing expected, nothing happens
	start = time.Now()
	r.AwaitLooks(context.Background(), []string{web, api}, time.Minute)
	if time.Since(start) > 5*time.Second {
		t.Error("waited although nothing was expected")
	}
	var none *Records
	none.Expect([]string{web})
	none.Looked(web)
	none.AwaitLooks(context.Background(), []string{web}, time.Minute)
}
