package sinks

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/router"
)

// eventAction is the action of the Events emitted about NotificationPolicies.
const eventAction = "Deliver"

// dispatcher is the manager runnable that delivers each NotificationPolicy's notifications:
// every policy has its own drop-oldest router subscription, filtered to the events it delivers,
// and its own worker, so a slow endpoint only ever fills its own queue. It writes the policies'
// status and runs only on the elected leader.
type dispatcher struct {
	opts     Options
	log      logr.Logger
	client   client.Client // status writes
	recorder events.EventRecorder
	guard    *guard
	metrics  *metrics
	wake     chan struct{} // asks the flusher to write urgent status now

	mu       sync.RWMutex
	policies map[types.NamespacedName]*policyState
	runCtx   context.Context // nil until Start
	stopped  bool            // Start returned: no more subscriptions
}

var (
	_ manager.Runnable               = (*dispatcher)(nil)
	_ manager.LeaderElectionRunnable = (*dispatcher)(nil)
)

func newDispatcher(opts Options, c client.Client, rec events.EventRecorder, log logr.Logger) *dispatcher {
	return &dispatcher{
		opts:     opts,
		log:      log,
		client:   c,
		recorder: rec,
		guard:    newGuard(opts.DenyCIDRs, opts.AllowCIDRs),
		metrics:  newMetrics(opts.Registerer),
		wake:     make(chan struct{}, 1),
		policies: map[types.NamespacedName]*policyState{},
	}
}

// NeedLeaderElection keeps deliveries on the leader, so replicas do not send duplicates.
func (d *dispatcher) NeedLeaderElection() bool { return true }

// Start runs the workers and the status flusher until ctx ends, then unsubscribes every policy.
func (d *dispatcher) Start(ctx context.Context) error {
	d.run(ctx)
	d.flushLoop(ctx)

	d.mu.Lock()
	d.stopped = true
	for _, st := range d.policies {
		if st.sub != nil {
			st.sub.Close()
		}
	}
	d.mu.Unlock()
	return nil
}

// run starts the worker of every policy, now and as they are added, until ctx ends.
func (d *dispatcher) run(ctx context.Context) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.runCtx = ctx
	for _, st := range d.policies {
		d.startWorkerLocked(st)
	}
}

// subscribeLocked gives st its own router subscription: a drop-oldest queue of
// Options.QueueCapacity events that only takes what st.wants (st.accept). Its drops are counted in the
// policy's status.dropped and kick_notification_dropped_total; the kick_router_* metrics
// show all policies' queues together under the subscriber label "notifications". Callers
// hold d.mu.
func (d *dispatcher) subscribeLocked(st *policyState) error {
	sub, err := d.opts.Router.Subscribe(SubscriberName+"/"+st.key.String(), router.DropOldest, d.opts.QueueCapacity, st.accept,
		router.MetricsLabel(SubscriberName), router.OnDrop(func(ev router.Event) { d.dropped(st, ev) }))
	if err != nil {
		return fmt.Errorf("subscribing NotificationPolicy %s to events: %w", st.key, err)
	}
	st.sub = sub
	return nil
}

// dropped counts an event st's full queue discarded (given up).
func (d *dispatcher) dropped(st *policyState, ev router.Event) {
	st.mu.Lock()
	st.pending.done(eventTime(ev))
	st.dropped++
	st.dirty = true
	st.mu.Unlock()
	d.metrics.dropped.Inc()
}

// blockedLocked counts an event a policy matched but cannot deliver. Callers hold st.mu.
func (d *dispatcher) blockedLocked(st *policyState) {
	st.failed++
	st.dirty = true
	switch {
	case st.problem != nil:
		st.lastError = "not sent: " + st.problem.message
	case st.gone:
		st.lastError = "not sent: " + goneMessage
	}
	d.metrics.delivered(st.key.Namespace, st.key.Name, false)
}

// apply installs what the reconciler found for policy p: matcher, config or problem. A policy
// seen for the first time (or recreated under the same name) is subscribed to the router; a
// spec change only replaces what its subscription's filter reads.
func (d *dispatcher) apply(p *kickv1alpha1.NotificationPolicy, m matcher, cfg *deliveryConfig, prob *problem) error {
	key := types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
	sel := &selection{match: m, suspended: p.Spec.Suspend}
	if r := p.Spec.RollUp; r != nil {
		sel.rollUp = &rollUpSettings{only: r.Mode == kickv1alpha1.RollUpOnly, maxWait: r.RollUpWait()}
	}
	d.mu.Lock()
	if d.stopped {
		d.mu.Unlock()
		return nil
	}
	st := d.policies[key]
	if st != nil && st.uid != p.UID {
		d.removeLocked(key)
		st = nil
	}
	if st == nil {
		st = newPolicyState(p)
		d.startFrom(st, p, time.Now())
		st.sel.Store(sel)
		if err := d.subscribeLocked(st); err != nil {
			d.mu.Unlock()
			return err
		}
		d.policies[key] = st
		d.startWorkerLocked(st)
	}
	d.mu.Unlock()

	st.mu.Lock()
	if st.generation != p.Generation {
		st.gone = false
	}
	prev := st.cfg
	if cfg != prev {
		st.refused = ""
	}
	st.generation, st.cfg, st.problem = p.Generation, cfg, prob
	st.sel.Store(sel)
	switch {
	case sel.rollUp == nil && st.ledger != nil:
		st.ledger, st.dirty = nil, true
	case sel.rollUp != nil && st.ledger == nil:
		st.ledger, st.dirty = ledgerOf(p, time.Now()), true
	}
	if st.written != st.generation {
		st.dirty, st.urgent = true, true
	}
	cond, changed := st.updateReady()
	if st.dirty {
		st.urgent = true
	}
	st.mu.Unlock()

	if prev != nil && (cfg == nil || prev.transport != cfg.transport) {
		prev.transport.CloseIdleConnections()
	}
	if changed {
		d.announce(st, cond)
	}
	select {
	case d.wake <- struct{}{}:
	default:
	}
	return nil
}

// config returns the current delivery config of the policy with this key and uid, if any.
func (d *dispatcher) config(key types.NamespacedName, uid types.UID) *deliveryConfig {
	d.mu.RLock()
	st := d.policies[key]
	d.mu.RUnlock()
	if st == nil || st.uid != uid {
		return nil
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.cfg
}

// remove forgets a deleted policy: it is unsubscribed (its queued events are discarded) and its
// worker stops.
func (d *dispatcher) remove(key types.NamespacedName) {
	d.mu.Lock()
	d.removeLocked(key)
	d.mu.Unlock()
}

func (d *dispatcher) removeLocked(key types.NamespacedName) {
	st := d.policies[key]
	if st == nil {
		return
	}
	delete(d.policies, key)
	if st.sub != nil {
		st.sub.Close()
	}
	if st.stop != nil {
		st.stop()
	}
	st.mu.Lock()
	cfg := st.cfg
	st.dirty = false // nothing left to write
	st.mu.Unlock()
	if cfg != nil {
		cfg.transport.CloseIdleConnections()
	}
	d.metrics.forget(key.Namespace, key.Name)
}

// announce emits an Event about a Ready change. Messages are already scrubbed.
func (d *dispatcher) announce(st *policyState, c metav1.Condition) {
	if d.recorder == nil {
		return
	}
	kind := corev1.EventTypeNormal
	if c.Status != metav1.ConditionTrue {
		kind = corev1.EventTypeWarning
	}
	obj := &kickv1alpha1.NotificationPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: kickv1alpha1.GroupVersion.String(), Kind: "NotificationPolicy"},
		ObjectMeta: metav1.ObjectMeta{Namespace: st.key.Namespace, Name: st.key.Name, UID: st.uid},
	}
	d.recorder.Eventf(obj, nil, kind, c.Reason, eventAction, "%s", c.Message)
}

// startFrom sets where a new state's watermark starts at now: at the stored one, from which
// its worker first replays what a previous leader may not have delivered (when replay is on);
// for a policy that has none yet, at now, so a new policy gets no history.
func (d *dispatcher) startFrom(st *policyState, p *kickv1alpha1.NotificationPolicy, now time.Time) {
	h := p.Status.HandledThrough
	if h == nil {
		st.floor = now
		return
	}
	st.floor = h.Time
	if d.opts.Replay != nil && d.opts.ReplayWindow > 0 {
		st.replaying, st.replayFrom = true, replayFrom(h.Time, now, d.opts.ReplayWindow)
	}
}
