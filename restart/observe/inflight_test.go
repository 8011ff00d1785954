package observe

import (
	"context"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/inflight"
	"github.com/kick-operator/kick/router"
)

// TestChangeIsAnnouncedWhileItsRecordIsWritten: with Records, a content
// change reaches its consumers before its record is written, and the record
// is in flight until the write ends, so a restarter can overlap its own
// writes with the record's and still wait for it before patching.
func TestChangeIsAnnouncedWhileItsRecordIsWritten(t *testing.T) {
	s := testSecret("db", "v1")
	f := newFixture(t, testKey, s, deployment("web", "db"))
	records := &inflight.Records{}
	f.r.Records = records
	f.pub.check = nil
	f.reconcile("Secret", "db") // baseline
	f.pub.take()
	baseline := f.record("Secret", "db").ResourceVersion

	src := []inflight.Source{{Namespace: "ns", Kind: "Secret", Name: "db"}}
	var announced bool
	f.pub.check = func(ev router.SourceChanged) {
		announced = true
		if rec := f.record("Secret", "db"); rec.ResourceVersion != baseline {
			t.Errorf("the change of %s was announced after its record was written", ev.Key())
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		if err := records.Wait(ctx, src); err == nil {
			t.Error("the record was not in flight when the change was announced")
		}
	}
	f.now = f.now.Add(time.Minute)
	f.update(s, func() { s.Data["password"] = []byte("v2") })
	if out := f.reconcile("Secret", "db"); out.class != Relevant || !out.written || !out.published {
		t.Fatalf("data change: %+v", out)
	}
	if !announced {
		t.Fatal("the change was not announced")
	}
	if err := records.Wait(context.Background(), src); err != nil || records.Len() != 0 {
		t.Fatalf("after the write the record is still in flight: %v (%d)", err, records.Len())
	}
	if evs := f.pub.take(); len(evs) != 1 || !evs[0].ChangeTime.Equal(f.record("Secret", "db").Spec.LastRelevantChangeTime.Time) {
		t.Fatalf("the announced change time is not the recorded one: %+v", evs)
	}
}

// staleRecords is a cache that has not yet received the observer's own
// record writes: it serves SourceObservations as they were when frozen.
type staleRecords struct {
	client.Client
	frozen map[client.ObjectKey]*kickv1alpha1.SourceObservation
}

func (c staleRecords) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if rec, ok := obj.(*kickv1alpha1.SourceObservation); ok {
		if old, ok := c.frozen[key]; ok {
			old.DeepCopyInto(rec)
			return nil
		}
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

// TestOwnWriteCountsBeforeTheCacheShowsIt: right after a change was
// recorded, a label-only edit arrives while the cache still holds the record
// from before the change. The observer classifies against its own write: no
// second change is announced (it would restart the workload again), and no
// write is attempted only to be refused as a conflict.
func TestOwnWriteCountsBeforeTheCacheShowsIt(t *testing.T) {
	s := testSecret("db", "v1")
	f := newFixture(t, testKey, s, deployment("web", "db"))
	f.reconcile("Secret", "db") // baseline
	f.pub.take()
	key := client.ObjectKey{Namespace: "ns", Name: kickv1alpha1.ObservationName("Secret", "db")}
	stale := staleRecords{Client: f.r.Client, frozen: map[client.ObjectKey]*kickv1alpha1.SourceObservation{key: f.record("Secret", "db")}}
	f.r.Client = stale

	f.update(s, func() { s.Data["password"] = []byte("v2") })
	if out := f.reconcile("Secret", "db"); out.class != Relevant || !out.written {
		t.Fatalf("data change: %+v", out)
	}
	f.pub.take()
	f.now = f.now.Add(time.Second)
	f.update(s, func() { s.Labels = map[string]string{"team": "a"} })
	if out := f.reconcile("Secret", "db"); out.class != MetaOnly || out.written || out.published {
		t.Fatalf("a label edit after the change, with the cache behind: %+v", out)
	}
	if evs := f.pub.take(); len(evs) != 0 {
		t.Fatalf("announced again: %+v", evs)
	}
	// Once the cache shows the write, the memory of it is gone.
	delete(stale.frozen, key)
	f.r.own.cacheSaw(f.record("Secret", "db"))
	if n := f.r.own.len(); n != 0 {
		t.Fatalf("%d own writes remembered after the cache caught up", n)
	}
}
