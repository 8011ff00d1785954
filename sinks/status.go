package sinks

import (
	"context"
	"encoding/json"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
)

// finalFlushTimeout bounds the status write made when the dispatcher stops.
const finalFlushTimeout = 3 * time.Second

// flushLoop writes policies' status: deliveries only update counters in memory, and a policy's
// status is patched at most once per StatusInterval when something changed; changes from the
// reconciler (spec, Secrets) are written at once. One writer, merge patches: no conflicts.
func (d *dispatcher) flushLoop(ctx context.Context) {
	tick := time.NewTicker(min(max(d.opts.StatusInterval/4, 50*time.Millisecond), time.Second))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			final, cancel := context.WithTimeout(context.WithoutCancel(ctx), finalFlushTimeout)
			d.flush(final, true)
			cancel()
			return
		case <-tick.C:
		case <-d.wake:
		}
		d.flush(ctx, false)
	}
}

// flush patches the status of every policy whose write is due (every changed one when all).
func (d *dispatcher) flush(ctx context.Context, all bool) {
	d.mu.RLock()
	states := make([]*policyState, 0, len(d.policies))
	for _, st := range d.policies {
		states = append(states, st)
	}
	d.mu.RUnlock()
	now := time.Now()
	for _, st := range states {
		st.mu.Lock()
		due := st.dirty && (all || st.urgent || now.Sub(st.lastFlush) >= d.opts.StatusInterval)
		if !due {
			st.mu.Unlock()
			continue
		}
		patch := st.statusPatch(now)
		gen := st.generation
		st.dirty, st.urgent, st.lastFlush = false, false, now
		st.mu.Unlock()

		err := d.patchStatus(ctx, st.key, patch)
		st.mu.Lock()
		switch {
		case err == nil:
			st.written = max(st.written, gen)
		case apierrors.IsNotFound(err) || apierrors.IsInvalid(err) || apierrors.IsConflict(err):
			// Deleted, or replaced by a new policy of the same name (the uid no longer matches):
			// the reconciler hears of it and forgets this state.
		default:
			st.dirty = true // try again at the next interval
			d.log.Error(err, "writing NotificationPolicy status", "namespace", st.key.Namespace, "policy", st.key.Name)
		}
		st.mu.Unlock()
		if ctx.Err() != nil && !all {
			return
		}
	}
}

func (d *dispatcher) patchStatus(ctx context.Context, key types.NamespacedName, patch map[string]any) error {
	data, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	obj := &kickv1alpha1.NotificationPolicy{}
	obj.Namespace, obj.Name = key.Namespace, key.Name
	return d.client.Status().Patch(ctx, obj, client.RawPatch(types.MergePatchType, data))
}
