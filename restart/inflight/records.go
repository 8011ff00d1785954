package inflight

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Source names a Secret or ConfigMap (the kind as in its record's name).
type Source struct {
	Namespace string
	Kind      string
	Name      string
}

func (s Source) String() string { return s.Kind + " " + s.Namespace + "/" + s.Name }

// ErrNotRecorded says that the last write of a source's record failed: a
// restart for its change must wait until the observer writes it again.
var ErrNotRecorded = errors.New("the record of the change is not written yet")

// Records is the set of record writes in flight. The zero value is ready;
// a nil *Records tracks nothing (Begin returns a no-op, Wait returns nil).
type Records struct {
	mu sync.Mutex
	m  map[Source]*write
	// looks are the workloads the restarter is expected to look at, each
	// with a channel closed when it did; see Expect.
	looks map[string]chan struct{}
}

// write is one record write: done closes when it ends; failed says it
// ended without the record.
type write struct {
	resourceVersion string
	done            chan struct{}
	failed          bool
}

// Begin marks a write of s's record for the content at resourceVersion as
// started (replacing the failed state of an earlier one). The returned end
// must be called once, with whether the record was written. The observer
// reconciles one source at a time, so writes of one source never overlap.
func (r *Records) Begin(s Source, resourceVersion string) (end func(written bool)) {
	if r == nil {
		return func(bool) {}
	}
	w := &write{resourceVersion: resourceVersion, done: make(chan struct{})}
	r.mu.Lock()
	if r.m == nil {
		r.m = map[Source]*write{}
	}
	r.m[s] = w
	r.mu.Unlock()
	return func(written bool) {
		r.mu.Lock()
		if written && r.m[s] == w {
			delete(r.m, s)
		}
		w.failed = !written
		r.mu.Unlock()
		close(w.done)
	}
}

// Forget drops what is known of s: the observer has nothing to write for it
// any more (the source is gone).
func (r *Records) Forget(s Source) {
	if r == nil {
		return
	}
	r.mu.Lock()
	delete(r.m, s)
	r.mu.Unlock()
}

// Wait returns once no record of sources is being written: nil when all
// are durable (or were never written by this process), ErrNotRecorded
// (wrapped, naming the source) when a write failed and was not yet
// repeated, or the context's error.
func (r *Records) Wait(ctx context.Context, sources []Source) error {
	if r == nil {
		return nil
	}
	for _, s := range sources {
		for {
			r.mu.Lock()
			w := r.m[s]
			r.mu.Unlock()
			if w == nil {
				break
			}
			select {
			case <-w.done:
			case <-ctx.Done():
				return fmt.Errorf("waiting for the record of %s: %w", s, ctx.Err())
			}
			r.mu.Lock()
			failed := w.failed && r.m[s] == w
			r.mu.Unlock()
			if failed {
				return fmt.Errorf("%s: %w", s, ErrNotRecorded)
			}
			// Written, or a newer write began meanwhile: look again.
		}
	}
	return nil
}

// Pending is a source whose record is being written (or failed to be) for
// the content at ResourceVersion.
type Pending struct {
	Source
	ResourceVersion string
}

// Pending returns those of sources whose records are not durable yet: a
// restart applied now answers their content at these versions, and says so
// on the workload (package evidence) instead of waiting for the records.
func (r *Records) Pending(sources []Source) []Pending {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Pending
	for _, s := range sources {
		if w := r.m[s]; w != nil {
			out = append(out, Pending{Source: s, ResourceVersion: w.resourceVersion})
		}
	}
	return out
}

// WorkloadKey names a workload for Expect, Looked and AwaitLooks.
func WorkloadKey(kind, namespace, name string) string { return namespace + "/" + kind + "/" + name }

// Expect marks that the restarter will look at these workloads (keys as the
// restarter names them) for a change whose record is about to be written;
// Looked ends that for one workload. The observer writes the record only
// once every consumer was looked at (AwaitLooks, bounded): on a small API
// server the record's write would otherwise slow the restart it overlaps,
// and a restart does not need it (it names the version in its note).
func (r *Records) Expect(workloads []string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.looks == nil {
		r.looks = map[string]chan struct{}{}
	}
	for _, w := range workloads {
		if r.looks[w] == nil {
			r.looks[w] = make(chan struct{})
		}
	}
}

// Looked says the restarter looked at the workload (and restarted it, if it
// restarts it at once): every expectation of it so far is met.
func (r *Records) Looked(workload string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if c := r.looks[workload]; c != nil {
		delete(r.looks, workload)
		close(c)
	}
}

// AwaitLooks returns once the restarter looked at every one of workloads
// expected so far, or after max, or when ctx ends: the bookkeeping of a
// change waits for the restarts it could slow down, never for long. It
// reports whether every look came (false: max or ctx ended the wait).
func (r *Records) AwaitLooks(ctx context.Context, workloads []string, max time.Duration) bool {
	if r == nil {
		return true
	}
	t := time.NewTimer(max)
	defer t.Stop()
	for _, w := range workloads {
		r.mu.Lock()
		c := r.looks[w]
		r.mu.Unlock()
		if c == nil {
			continue
		}
		select {
		case <-c:
		case <-t.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// Len is the number of sources with a write in flight or failed.
func (r *Records) Len() int {
	if r == nil {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.m)
}
