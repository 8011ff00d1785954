package budget

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/freshness"
	"github.com/kick-operator/kick/restart/workload"
)

// InProgressIndex indexes the KickRequests that record a restart whose
// rollout they have not judged yet (open, with status.currentRollout):
// the candidates for "in progress", so a count lists only those.
const InProgressIndex = "kick.corewire.io/restart-in-progress"

// RegisterIndexes registers InProgressIndex on KickRequests.
func RegisterIndexes(ctx context.Context, indexer client.FieldIndexer) error {
	return indexer.IndexField(ctx, &kickv1alpha1.KickRequest{}, InProgressIndex, func(obj client.Object) []string {
		if kr, ok := obj.(*kickv1alpha1.KickRequest); ok && recordsRestart(kr) {
			return []string{"true"}
		}
		return nil
	})
}

func recordsRestart(kr *kickv1alpha1.KickRequest) bool {
	return !kr.Status.Phase.IsTerminal() && kr.Status.CurrentRollout != nil && kr.DeletionTimestamp.IsZero()
}

// How long a request that asked for a slot stays in the queue without
// asking again (it asks again at least every WaitPoll), and how long the
// restarts a new leader found in a live read count before its cache is
// trusted to show them.
const (
	WaitPoll  = 30 * time.Second
	waiterTTL = 3 * WaitPoll
	seedTTL   = 30 * time.Second
)

// Budget hands out restart slots. The request reconciler asks for a slot
// (Acquire) right before it records a restart, and reports every request
// it has looked at (Observe), which frees slots and wakes the requests
// whose turn it is.
//
// What is in progress is read from durable state each time: the
// KickRequests that record a restart (written before the patch, so a
// crash cannot hide one) and the workloads' own rollout status. Memory only
// ever adds to that count: the restarts this process recorded that its
// cache does not show yet, and, for a new leader, the ones a live read
// found when it first counted. A crash, a failover or a lagging cache can
// therefore delay a restart, never exceed a cap. Grants are serialised
// within the process; only the leader restarts.
type Budget struct {
	// Client reads the cache; APIReader reads past it, once per leadership.
	Client    client.Reader
	APIReader client.Reader
	Kinds     *workload.Registry
	// ClusterLimit is --max-concurrent-restarts; 0 means no cluster cap.
	ClusterLimit int
	// RolloutTimeout is --rollout-timeout: a restart older than that is
	// failed by its request, not in progress.
	RolloutTimeout time.Duration
	Now            func() time.Time
	// Wake asks the reconciler to look at a request again; it must not
	// block.
	Wake func(types.NamespacedName)
	// Seen, when set, is handed the requests the live read at a new
	// leader's first count returned (the halts among them count too).
	Seen func([]kickv1alpha1.KickRequest)

	mu        sync.Mutex
	seeded    bool
	claims    map[string]claim
	completed map[types.UID]string
	waiting   map[string]waiter
	lastGrant map[string]time.Time
}

// claim is a restart this process counts that its cache may not show.
type claim struct {
	namespace, policy, stamp string
	expires                  time.Time
}

type waiter struct {
	Waiter
	seen time.Time
}

// Applies reports whether restarts of the policy's workloads need a slot.
func (b *Budget) Applies(p *kickv1alpha1.KickPolicy) bool {
	if b == nil || p == nil {
		return false
	}
	_, capped := p.Spec.MaxConcurrentRestarts(0)
	return capped || b.ClusterLimit > 0
}

// Ask is a request asking for a slot.
type Ask struct {
	Request *kickv1alpha1.KickRequest
	Policy  *kickv1alpha1.KickPolicy
	// Change is the change the restart answers.
	Change time.Time
	// Stamp is the restart value the request is about to record.
	Stamp string
}

// Acquire answers whether the request may restart now. A granted slot is
// held for the request until Observe sees it no longer in progress.
func (b *Budget) Acquire(ctx context.Context, a Ask) (Verdict, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.Now()
	if err := b.seed(ctx, now); err != nil {
		return Verdict{}, err
	}
	key := requestKey(a.Request)
	limit, _ := a.Policy.Spec.MaxConcurrentRestarts(int(a.Policy.Status.MatchedWorkloads))
	ask := Waiter{Key: key, Namespace: a.Request.Namespace, Policy: a.Policy.Name, PolicyLimit: limit, Change: a.Change}
	used, err := b.usage(ctx, now, key)
	if err != nil {
		return Verdict{}, err
	}
	b.expireWaiters(now)
	if b.waiting == nil {
		b.waiting = map[string]waiter{}
	}
	b.waiting[key] = waiter{Waiter: ask, seen: now}
	v := Decide(b.state(used), ask)
	if !v.Granted {
		return v, nil
	}
	delete(b.waiting, key)
	if b.lastGrant == nil {
		b.lastGrant = map[string]time.Time{}
	}
	b.lastGrant[ask.Namespace] = now
	if b.claims == nil {
		b.claims = map[string]claim{}
	}
	b.claims[key] = claim{namespace: ask.Namespace, policy: ask.Policy, stamp: a.Stamp, expires: now.Add(b.RolloutTimeout + time.Minute)}
	return v, nil
}

// Release gives up a slot granted to a request whose restart was not
// recorded after all.
func (b *Budget) Release(req types.NamespacedName) {
	b.Observe(context.Background(), req, false, false, false)
}

// Observe notes what a look at a request left: whether it records a
// restart in progress now, whether it did before the look, and whether
// it waits for a slot. A restart that ended frees its slot and wakes the
// requests whose turn it is; a request that no longer waits leaves the
// queue.
func (b *Budget) Observe(ctx context.Context, req types.NamespacedName, wasInProgress, inProgress, waiting bool) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	key := req.String()
	if !waiting {
		delete(b.waiting, key)
	}
	if inProgress {
		return
	}
	_, claimed := b.claims[key]
	delete(b.claims, key)
	if claimed || wasInProgress {
		b.wakeNext(ctx)
	}
}

// wakeNext wakes the waiting requests that would be granted a slot now.
func (b *Budget) wakeNext(ctx context.Context) {
	if b.Wake == nil || len(b.waiting) == 0 {
		return
	}
	now := b.Now()
	b.expireWaiters(now)
	used, err := b.usage(ctx, now, "")
	if err != nil {
		return // every waiter asks again within WaitPoll
	}
	s := b.state(used)
	for _, w := range Heads(s) {
		ns, name, _ := cutKey(w)
		b.Wake(types.NamespacedName{Namespace: ns, Name: name})
	}
}

func (b *Budget) state(used Usage) State {
	ws := make([]Waiter, 0, len(b.waiting))
	for _, w := range b.waiting {
		ws = append(ws, w.Waiter)
	}
	slices.SortFunc(ws, byChange)
	return State{ClusterLimit: b.ClusterLimit, Usage: used, Waiting: ws, LastGrant: maps.Clone(b.lastGrant)}
}

func (b *Budget) expireWaiters(now time.Time) {
	for k, w := range b.waiting {
		if now.Sub(w.seen) > waiterTTL {
			delete(b.waiting, k)
		}
	}
}

// seed counts, once per process (a new leader), the restarts a live read
// shows in progress, for as long as its cache may lag behind that read.
func (b *Budget) seed(ctx context.Context, now time.Time) error {
	if b.seeded || b.APIReader == nil {
		return nil
	}
	var list kickv1alpha1.KickRequestList
	if err := b.APIReader.List(ctx, &list); err != nil {
		return fmt.Errorf("read the restarts in progress: %w", err)
	}
	if b.claims == nil {
		b.claims = map[string]claim{}
	}
	if b.Seen != nil {
		b.Seen(list.Items)
	}
	for i := range list.Items {
		kr := &list.Items[i]
		if !recordsRestart(kr) {
			continue
		}
		if _, ok := b.claims[requestKey(kr)]; !ok {
			b.claims[requestKey(kr)] = claim{namespace: kr.Namespace, policy: kr.Status.PolicyRef,
				stamp: kr.Status.CurrentRollout.RestartedAt, expires: now.Add(seedTTL)}
		}
	}
	b.seeded = true
	return nil
}

// usage counts the restarts in progress, leaving out the request asking.
func (b *Budget) usage(ctx context.Context, now time.Time, asking string) (Usage, error) {
	u := Usage{ByNamespace: map[string]int{}, ByPolicy: map[string]int{}}
	add := func(namespace, policy string) {
		u.Total++
		u.ByNamespace[namespace]++
		u.ByPolicy[namespace+"/"+policy]++
	}
	var list kickv1alpha1.KickRequestList
	if err := b.Client.List(ctx, &list, client.MatchingFields{InProgressIndex: "true"}, client.UnsafeDisableDeepCopy); err != nil {
		return u, fmt.Errorf("list the restarts in progress: %w", err)
	}
	seen := make(map[string]bool, len(list.Items))
	uids := make(map[types.UID]bool, len(list.Items))
	for i := range list.Items {
		kr := &list.Items[i]
		key := requestKey(kr)
		uids[kr.UID] = true
		if c, ok := b.claims[key]; ok && c.stamp == kr.Status.CurrentRollout.RestartedAt {
			delete(b.claims, key) // the cache shows what the claim stood for
		}
		if key == asking {
			continue
		}
		seen[key] = true
		if b.inProgress(ctx, kr, now) {
			add(kr.Namespace, kr.Status.PolicyRef)
		}
	}
	for uid := range b.completed {
		if !uids[uid] {
			delete(b.completed, uid)
		}
	}
	for key, c := range b.claims {
		switch {
		case now.After(c.expires):
			delete(b.claims, key)
		case !seen[key] && key != asking:
			add(c.namespace, c.policy)
		}
	}
	return u, nil
}

// inProgress judges a request that records a restart: in progress until
// the workload shows that restart rolled out, or the rollout timeout has
// passed (the request then fails it). Whatever cannot be read counts.
func (b *Budget) inProgress(ctx context.Context, kr *kickv1alpha1.KickRequest, now time.Time) bool {
	m := kr.Status.CurrentRollout
	if m.StartedAt != nil && now.Sub(m.StartedAt.Time) >= b.RolloutTimeout {
		return false
	}
	if b.completed[kr.UID] == m.RestartedAt {
		return false
	}
	obj, err := b.Kinds.New(kr.Spec.TargetRef.Kind)
	if err != nil {
		return false // a kind this manager cannot restart
	}
	if err := b.Client.Get(ctx, client.ObjectKey{Namespace: kr.Namespace, Name: kr.Spec.TargetRef.Name}, obj); err != nil {
		return !apierrors.IsNotFound(err)
	}
	h, err := b.Kinds.Follow(ctx, b.Client, obj, m.RestartedAt)
	if err != nil {
		return true
	}
	mine, ok := freshness.ParseStamp(m.RestartedAt)
	current, carried := h.Current()
	if !ok || !carried || current.Before(mine) {
		return true // the patch is not applied, or not visible yet
	}
	r, err := h.Inspect(ctx, b.Client)
	if err != nil || !r.Complete {
		return true
	}
	if b.completed == nil {
		b.completed = map[types.UID]string{}
	}
	b.completed[kr.UID] = m.RestartedAt
	return false
}

func requestKey(kr *kickv1alpha1.KickRequest) string {
	return kr.Namespace + "/" + kr.Name
}

func cutKey(key string) (namespace, name string, ok bool) {
	for i := 0; i < len(key); i++ {
		if key[i] == '/' {
			return key[:i], key[i+1:], true
		}
	}
	return "", key, false
}
