package sinks

import (
	"context"
	"sort"
	"sync"
	"sync/atomic"

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

// dispatcher is the manager runnable that reads PhaseChanged events from the router, offers each
// to the policies of its namespace, runs one worker per policy and writes the policies' status.
// It runs only on the elected leader.
type dispatcher struct {
	opts     Options
	log      logr.Logger
	client   client.Client // status writes
	recorder events.EventRecorder
	guard    *guard
	metrics  *metrics
	sub      *router.Subscription
	wake     chan struct{} // asks the flusher to write urgent status now

	mu       sync.RWMutex
	policies map[types.NamespacedName]*policyState
	byNS     map[string][]*policyState // sorted by name; replaced, never modified in place
	runCtx   context.Context           // nil until Start
	nsSet    atomic.Pointer[map[string]bool]
}

var (
	_ manager.Runnable               = (*dispatcher)(nil)
	_ manager.LeaderElectionRunnable = (*dispatcher)(nil)
)

func newDispatcher(opts Options, c client.Client, rec events.EventRecorder, log logr.Logger) *dispatcher {
	d := &dispatcher{
		opts:     opts,
		log:      log,
		client:   c,
		recorder: rec,
		guard:    newGuard(opts.DenyCIDRs, opts.AllowCIDRs),
		metrics:  newMetrics(opts.Registerer),
		wake:     make(chan struct{}, 1),
		policies: map[types.NamespacedName]*policyState{},
		byNS:     map[string][]*policyState{},
	}
	d.nsSet.Store(&map[string]bool{})
	return d
}

// NeedLeaderElection keeps deliveries on the leader, so replicas do not send duplicates.
func (d *dispatcher) NeedLeaderElection() bool { return true }

// wants is the router filter: phase changes in namespaces that have a policy. It runs on the
// publisher's goroutine and only reads an immutable map.
func (d *dispatcher) wants(ev router.Event) bool {
	pc, ok := ev.(router.PhaseChanged)
	return ok && (*d.nsSet.Load())[pc.Request.Namespace]
}

// Start runs the workers and the status flusher and routes events until ctx ends.
func (d *dispatcher) Start(ctx context.Context) error {
	d.mu.Lock()
	d.runCtx = ctx
	for _, st := range d.policies {
		d.startWorkerLocked(st)
	}
	d.mu.Unlock()

	flushed := make(chan struct{})
	go func() {
		defer close(flushed)
		d.flushLoop(ctx)
	}()
	_ = d.sub.Run(ctx, func(_ context.Context, ev router.Event) {
		if pc, ok := ev.(router.PhaseChanged); ok {
			d.route(pc)
		}
	})
	d.sub.Close()
	<-flushed
	return nil
}

// route offers ev to every policy of its namespace. It never blocks on a policy.
func (d *dispatcher) route(ev router.PhaseChanged) {
	d.mu.RLock()
	list := d.byNS[ev.Request.Namespace]
	d.mu.RUnlock()
	for _, st := range list {
		d.offer(st, ev)
	}
}

// offer queues ev for st when st delivers it. A policy that cannot deliver (a problem, or 410
// Gone) counts it as failed at once.
func (d *dispatcher) offer(st *policyState, ev router.PhaseChanged) {
	st.mu.Lock()
	if st.suspended || !st.match.matches(ev) {
		st.mu.Unlock()
		return
	}
	if st.problem != nil || st.gone || st.cfg == nil {
		d.blockedLocked(st)
		st.mu.Unlock()
		return
	}
	st.mu.Unlock()
	if st.q.push(ev) {
		st.mu.Lock()
		st.dropped++
		st.dirty = true
		st.mu.Unlock()
		d.metrics.dropped.Inc()
	}
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

// apply installs what the reconciler found for policy p: matcher, config or problem.
func (d *dispatcher) apply(p *kickv1alpha1.NotificationPolicy, m matcher, cfg *deliveryConfig, prob *problem) {
	key := types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
	d.mu.Lock()
	st := d.policies[key]
	if st != nil && st.uid != p.UID {
		d.removeLocked(key)
		st = nil
	}
	if st == nil {
		st = newPolicyState(p, d.opts.QueueCapacity)
		d.policies[key] = st
		d.reindexLocked()
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
	st.generation, st.suspended, st.match, st.cfg, st.problem = p.Generation, p.Spec.Suspend, m, cfg, prob
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

// remove forgets a deleted policy: its worker stops and its queue is discarded.
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
	d.reindexLocked()
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

// reindexLocked rebuilds the per-namespace lists and the router filter's namespace set.
// Callers hold d.mu.
func (d *dispatcher) reindexLocked() {
	byNS := make(map[string][]*policyState, len(d.byNS))
	ns := make(map[string]bool, len(d.byNS))
	for key, st := range d.policies {
		byNS[key.Namespace] = append(byNS[key.Namespace], st)
		ns[key.Namespace] = true
	}
	for _, list := range byNS {
		sort.Slice(list, func(i, j int) bool { return list[i].key.Name < list[j].key.Name })
	}
	d.byNS = byNS
	d.nsSet.Store(&ns)
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
