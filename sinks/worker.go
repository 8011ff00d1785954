package sinks

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// startWorkerLocked starts st's worker when the dispatcher runs. Callers hold d.mu.
func (d *dispatcher) startWorkerLocked(st *policyState) {
	if d.runCtx == nil || st.stop != nil || st.sub == nil {
		return
	}
	ctx, cancel := context.WithCancel(d.runCtx)
	st.stop = cancel
	go d.work(ctx, st)
}

// work delivers the events of st's subscription one after the other until ctx ends or the
// policy is unsubscribed.
func (d *dispatcher) work(ctx context.Context, st *policyState) {
	for {
		ev, err := st.sub.Next(ctx)
		if err != nil {
			return
		}
		if sel := st.selection(); sel.suspended || !sel.match.matches(ev) { // the spec changed while it waited
			continue
		}
		st.mu.Lock()
		cfg, gen := st.cfg, st.generation
		if st.problem != nil || st.gone || cfg == nil {
			d.blockedLocked(st)
			st.mu.Unlock()
			continue
		}
		st.mu.Unlock()
		d.record(st, cfg, gen, cfg.deliver(ctx, ev))
	}
}

// record accounts for one delivery made with cfg at generation gen.
func (d *dispatcher) record(st *policyState, cfg *deliveryConfig, gen int64, out outcome) {
	if out.kind == outcomeSkipped || out.kind == outcomeCanceled {
		return
	}
	log := d.log.WithValues("namespace", st.key.Namespace, "policy", st.key.Name, "host", cfg.host)
	st.mu.Lock()
	current := st.cfg == cfg && st.generation == gen // the outcome still describes the policy
	st.dirty = true
	if out.kind == outcomeSuccess {
		st.delivered++
		st.lastDelivery = &metav1.Time{Time: time.Now()}
		st.lastError = ""
		if current {
			st.refused = ""
		}
	} else {
		st.failed++
		st.lastError = out.message
		if current && out.kind == outcomeRefused {
			st.refused = out.message
		}
		if current && out.kind == outcomeGone {
			st.gone = true
		}
	}
	cond, changed := st.updateReady()
	st.mu.Unlock()

	d.metrics.delivered(st.key.Namespace, st.key.Name, out.kind == outcomeSuccess)
	if out.kind == outcomeSuccess {
		log.V(1).Info("notification delivered", "attempts", out.attempts)
	} else {
		log.Info("notification not delivered", "attempts", out.attempts, "status", out.status, "error", out.message)
	}
	if changed {
		d.announce(st, cond)
	}
}
