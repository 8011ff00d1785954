package sinks

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kick-operator/kick/router"
)

// startWorkerLocked starts st's worker when the dispatcher runs. Callers hold d.mu.
func (d *dispatcher) startWorkerLocked(st *policyState) {
	if d.runCtx == nil || st.stop != nil || st.sub == nil {
		return
	}
	ctx, cancel := context.WithCancel(d.runCtx)
	st.stop = cancel
	go d.work(ctx, st)
	if d.opts.FanOuts != nil {
		go d.rollUps(ctx, st, newRollState())
	}
}

// work delivers the events of st's subscription one after the other until ctx ends or the
// policy is unsubscribed, after those it replays (see dispatcher.replay).
func (d *dispatcher) work(ctx context.Context, st *policyState) {
	backlog := d.replay(ctx, st)
	for {
		var ev router.Event
		if len(backlog) > 0 {
			ev, backlog = backlog[0], backlog[1:]
		} else {
			var err error
			if ev, err = st.sub.Next(ctx); err != nil {
				return
			}
		}
		d.handle(ctx, st, ev)
	}
}

// handle delivers one event st accepted.
func (d *dispatcher) handle(ctx context.Context, st *policyState, ev router.Event) {
	if sel := st.selection(); sel.suspended || !sel.match.matches(ev) { // the spec changed while it waited
		d.finished(st, ev)
		return
	}
	st.mu.Lock()
	cfg, gen := st.cfg, st.generation
	if st.problem != nil || st.gone || cfg == nil {
		st.pending.done(eventTime(ev))
		d.blockedLocked(st)
		st.mu.Unlock()
		return
	}
	st.mu.Unlock()
	out := cfg.deliver(ctx, ev)
	if out.kind == outcomeCanceled {
		return // still pending: the next leader replays it
	}
	d.finished(st, ev)
	d.record(st, cfg, gen, out)
}

// finished takes ev off st's pending events: delivered or given up.
func (d *dispatcher) finished(st *policyState, ev router.Event) {
	st.mu.Lock()
	st.pending.done(eventTime(ev))
	st.mu.Unlock()
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
