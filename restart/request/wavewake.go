package request

import (
	"hash/fnv"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/assess"
)

// The requests an earlier wave holds are woken when that wave may have
// moved on, not only by the wave poll:
//
//   - a request of the fan-out's policy finishing (its KickRequest
//     records the completion) may finish the earlier wave: one waiter of
//     each group waiting on that policy is woken, the group's scout;
//   - a waiter that, looking, finds itself held by something else than
//     its group (the wave finished rolling out and now bakes, or is done)
//     wakes the rest of its group once, and they regroup;
//   - a waiter held by a bake looks again exactly when the bake ends.
//
// A group is the waiters held by the same step (rolling out, or baking)
// of the same earlier wave for the same change of the same source, in one
// policy: they all judge the same members the same way, so one look
// tells for all. A completion therefore costs one look per group, and
// only a wave's end costs a look per waiter: a fan-out of N workloads
// costs O(N) looks, not O(N²).
//
// What the manager remembers here is a hint, never state: it is lost on a
// restart, and the wave poll (a safety net) and the bake's end still wake
// every waiter.

// epochBuckets is how many completion counters the namespaces share; two
// namespaces in one bucket only cost each other a look more.
const epochBuckets = 256

// maxWaveWaiters bounds the waiters remembered, and maxNamespaceWaiters
// those of one namespace, so a tenant's fan-out cannot take the others'
// places; past them, a waiter relies on the wave poll.
const (
	maxWaveWaiters      = 1 << 16
	maxNamespaceWaiters = 1 << 12
)

// completions counts, per namespace, the requests seen to finish. A look
// that read the earlier waves before a completion it cannot have seen
// looks again, and the wave cache serves only members read since the
// namespace's last completion.
type completions [epochBuckets]atomic.Uint64

func epochBucket(namespace string) int {
	h := fnv.New32a()
	h.Write([]byte(namespace))
	return int(h.Sum32() % epochBuckets)
}

// epoch is the count of completions seen in the namespace's bucket.
func (e *completions) epoch(namespace string) uint64 {
	return e[epochBucket(namespace)].Load()
}

func (e *completions) bump(namespace string) {
	e[epochBucket(namespace)].Add(1)
}

// waveGroup is what a group of waiters waits for (see assess.WaveHold).
type waveGroup struct {
	fanOut string // namespace/policy
	source string
	change time.Time
	wave   int
	baking bool
}

func groupOf(namespace, policy string, h *assess.WaveHold) waveGroup {
	return waveGroup{fanOut: namespace + "/" + policy, source: h.Source, change: h.Change.UTC(), wave: h.Wave, baking: h.Baking}
}

// waveWaiters remembers which requests wait in which group.
type waveWaiters struct {
	mu sync.Mutex
	// groups are the waiters of each group, by fan-out.
	groups map[string]map[waveGroup]map[types.NamespacedName]struct{}
	// seat is the group each waiter was last seen waiting in.
	seat map[types.NamespacedName]waveGroup
	// seated counts the waiters of each namespace.
	seated map[string]int
}

// wait records that req waits in group g. It returns the waiters to wake:
// those of the group req left, which then look again and regroup.
func (w *waveWaiters) wait(req types.NamespacedName, g waveGroup) []types.NamespacedName {
	w.mu.Lock()
	defer w.mu.Unlock()
	if old, ok := w.seat[req]; ok && old == g {
		return nil
	}
	wake := w.leaveLocked(req)
	if len(w.seat) >= maxWaveWaiters || w.seated[req.Namespace] >= maxNamespaceWaiters {
		return wake
	}
	if w.groups == nil {
		w.groups, w.seat, w.seated = map[string]map[waveGroup]map[types.NamespacedName]struct{}{}, map[types.NamespacedName]waveGroup{}, map[string]int{}
	}
	byGroup := w.groups[g.fanOut]
	if byGroup == nil {
		byGroup = map[waveGroup]map[types.NamespacedName]struct{}{}
		w.groups[g.fanOut] = byGroup
	}
	members := byGroup[g]
	if members == nil {
		members = map[types.NamespacedName]struct{}{}
		byGroup[g] = members
	}
	members[req] = struct{}{}
	w.seat[req] = g
	w.seated[req.Namespace]++
	return wake
}

// leave forgets req, which no earlier wave holds any more (or which is
// gone), and returns the rest of its group to wake: what freed req may
// have freed them.
func (w *waveWaiters) leave(req types.NamespacedName) []types.NamespacedName {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.leaveLocked(req)
}

func (w *waveWaiters) leaveLocked(req types.NamespacedName) []types.NamespacedName {
	g, ok := w.seat[req]
	if !ok {
		return nil
	}
	w.unseat(req)
	byGroup := w.groups[g.fanOut]
	members := byGroup[g]
	delete(members, req)
	if len(members) == 0 {
		return nil
	}
	// The group is dissolved: each of its waiters looks again and joins
	// the group it then waits in.
	wake := make([]types.NamespacedName, 0, len(members))
	for m := range members {
		wake = append(wake, m)
		w.unseat(m)
	}
	delete(byGroup, g)
	if len(byGroup) == 0 {
		delete(w.groups, g.fanOut)
	}
	return wake
}

func (w *waveWaiters) unseat(req types.NamespacedName) {
	delete(w.seat, req)
	if w.seated[req.Namespace]--; w.seated[req.Namespace] <= 0 {
		delete(w.seated, req.Namespace)
	}
}

// scouts returns one waiter of each group waiting on the fan-out of the
// policy in namespace: a request of it finished, which may have finished
// the wave a group waits for.
func (w *waveWaiters) scouts(namespace, policy string) []types.NamespacedName {
	w.mu.Lock()
	defer w.mu.Unlock()
	byGroup := w.groups[namespace+"/"+policy]
	out := make([]types.NamespacedName, 0, len(byGroup))
	for _, members := range byGroup {
		for m := range members {
			out = append(out, m)
			break
		}
	}
	return out
}

// waitForWave puts the request, which an earlier wave holds, in the group
// of the requests held the same way, and wakes those of the group it left.
// A request of the namespace that finished while the facts were read may
// have ended the wait: the request then looks again at once.
func (s *step) waitForWave() {
	res, ok := s.a.Gate.StageResult(assess.StageWave)
	p := s.a.Selection.Policy
	if !ok || res.Wave == nil || p == nil || s.r.mem == nil || s.r.wake == nil {
		return
	}
	s.waveHeld = true
	key := types.NamespacedName{Namespace: s.kr.Namespace, Name: s.kr.Name}
	for _, w := range s.r.mem.waiters.wait(key, groupOf(s.kr.Namespace, p.Name, res.Wave)) {
		s.r.wake(w)
	}
	if s.r.mem.waves.epoch(s.kr.Namespace) != s.waveEpoch {
		s.r.wake(key)
	}
}

// leaveWave forgets a request no earlier wave holds (any more), waking the
// rest of the group it waited in.
func (r *Reconciler) leaveWave(req types.NamespacedName) {
	if r.mem == nil || r.wake == nil {
		return
	}
	for _, w := range r.mem.waiters.leave(req) {
		r.wake(w)
	}
}

// waveCompleted is told of a request that finished: the members read of
// its namespace's earlier waves are stale, and one waiter of each group
// its policy holds looks again.
func (r *Reconciler) waveCompleted(kr *kickv1alpha1.KickRequest) []reconcile.Request {
	if r.mem == nil {
		return nil
	}
	r.mem.waves.completed(kr.Namespace)
	if kr.Status.PolicyRef == "" {
		return nil
	}
	scouts := r.mem.waiters.scouts(kr.Namespace, kr.Status.PolicyRef)
	out := make([]reconcile.Request, 0, len(scouts))
	for _, w := range scouts {
		out = append(out, reconcile.Request{NamespacedName: w})
	}
	return out
}

// finished passes a request event in which the request reaches a terminal
// phase.
func finished() predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok1 := e.ObjectOld.(*kickv1alpha1.KickRequest)
			n, ok2 := e.ObjectNew.(*kickv1alpha1.KickRequest)
			return ok1 && ok2 && n.Status.Phase.IsTerminal() && !o.Status.Phase.IsTerminal()
		},
	}
}

func (r *Reconciler) wavePoll() time.Duration {
	if r.WavePoll > 0 {
		return r.WavePoll
	}
	return DefaultWavePoll
}
