package request

import (
	"context"
	"fmt"
	"sync"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/assess"
	"github.com/kick-operator/kick/restart/discovery"
	"github.com/kick-operator/kick/restart/freshness"
	"github.com/kick-operator/kick/restart/workload"
)

// A restart KICK made that fails its rollout halts its fan-out: the other
// restarts that would bring in the same change of the same source are held
// (gate stage Halt) until the source changes again or a person releases the
// halt. The halt is the failed KickRequest itself, durable and readable
// with kubectl; HaltIndex finds it.

// HaltIndex indexes the failed requests that halt a fan-out.
const HaltIndex = "kick.corewire.io/halt"

// halting reports whether a request halts the fan-out of the change it
// answered (see KickRequest.HaltsFanOut).
func halting(kr *kickv1alpha1.KickRequest) bool { return kr.HaltsFanOut() }

func registerHaltIndex(ctx context.Context, indexer client.FieldIndexer) error {
	return indexer.IndexField(ctx, &kickv1alpha1.KickRequest{}, HaltIndex, func(obj client.Object) []string {
		if kr, ok := obj.(*kickv1alpha1.KickRequest); ok && halting(kr) {
			return []string{"true"}
		}
		return nil
	})
}

// halts lists the halts of a namespace, for the assessment.
func halts(ctx context.Context, c client.Reader, namespace string) ([]assess.Halt, error) {
	requests, err := haltingRequests(ctx, c, namespace)
	if err != nil {
		return nil, err
	}
	return assess.HaltsOf(requests), nil
}

// haltChanged passes a request event that starts or ends a halt, so the
// requests it holds are looked at again.
func haltChanged() predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(e event.CreateEvent) bool { return isHalt(e.Object) },
		DeleteFunc:  func(e event.DeleteEvent) bool { return isHalt(e.Object) },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return isHalt(e.ObjectOld) != isHalt(e.ObjectNew)
		},
	}
}

func isHalt(obj client.Object) bool {
	kr, ok := obj.(*kickv1alpha1.KickRequest)
	return ok && halting(kr)
}

// restartedFor is the newest source change a restart at by brings in (zero:
// now); nil when no Secret or ConfigMap change is recorded (a person's
// request).
func restartedFor(a *assess.Assessment, by time.Time) *kickv1alpha1.SourceChange {
	d, ok := a.NewestSourceChange(by)
	if !ok {
		return nil
	}
	return &kickv1alpha1.SourceChange{Kind: kickv1alpha1.SourceKind(d.Kind), Name: d.Name, ChangedAt: kickv1alpha1.NewNanoTime(d.Change.Latest)}
}

// haltHeld counts the other consumers of the halted source whose running
// pods do not carry the halted change: the restarts the halt holds.
func haltHeld(ctx context.Context, c client.Reader, kinds *workload.Registry, kr *kickv1alpha1.KickRequest) int {
	src := kr.Status.RestartedFor
	kind, name := string(src.Kind), src.Name
	change := freshness.At(src.ChangedAt.Time)
	held := 0
	for _, list := range kinds.Lists() {
		if err := c.List(ctx, list, client.InNamespace(kr.Namespace),
			client.MatchingFields{discovery.SourceIndex: discovery.IndexKey(kind, name)}); err != nil {
			continue
		}
		for _, w := range workload.Items(list) {
			if workload.KindOf(w) == kr.Spec.TargetRef.Kind && w.GetName() == kr.Spec.TargetRef.Name {
				continue
			}
			r, err := kinds.Inspect(ctx, c, w)
			if err != nil || freshness.Newer(change, r.Since) {
				held++
			}
		}
	}
	return held
}

// failRollout ends the request because the rollout of its restart at
// stamp failed, and says what that halts: the newest source change the
// restart brought in, read now that the records surely show it (when the
// restart was decided, the cache may have had the change only from the
// request's annotation).
func (s *step) failRollout(ctx context.Context, stamp time.Time, reason, message string) ctrl.Result {
	s.r.Metrics.restart(s.kr.Status.Provider, "failed")
	if src := restartedFor(&s.a, stamp); src != nil {
		s.kr.Status.RestartedFor = src
	}
	res := s.fail(reason, message)
	s.r.mem.halts.remember([]kickv1alpha1.KickRequest{*s.kr}, s.now.Add(haltMemoryTTL))
	if src := s.kr.Status.RestartedFor; src != nil {
		held := haltHeld(ctx, s.r.Client, s.r.Kinds, s.kr)
		s.notice = &eventSpec{warning: true, reason: "RolloutHalted", message: fmt.Sprintf(
			"%s: halted after %s failed its rollout; %d restarts held until %s changes again or the halt is released (kubectl annotate kickrequest %s %s=true)",
			src, s.targetRef(), held, src, s.kr.Name, kickv1alpha1.ReleaseHaltAnnotation)}
	}
	return res
}

// holdsHalt reports whether the request is a halt that still holds
// restarts: its source is still recorded with the change it failed on.
func (s *step) holdsHalt() bool {
	if !halting(s.kr) {
		return false
	}
	src := s.kr.Status.RestartedFor
	halted := src.ChangedAt.Time
	for _, d := range s.a.Dependencies {
		if d.Kind+"/"+d.Name == src.String() {
			return !d.Change.Latest.After(halted)
		}
	}
	return false
}

// haltMemory holds the halts this process decided, and those a live read
// showed when a new leader first counted its budget, until the cache
// surely shows them: a restart of the fan-out that a slot freed by the
// failure lets through must not slip past a halt the cache does not have
// yet. It only ever adds halts.
type haltMemory struct {
	mu    sync.Mutex
	halts map[string]rememberedHalt
}

type rememberedHalt struct {
	namespace string
	halt      assess.Halt
	until     time.Time
}

// haltMemoryTTL is how long a remembered halt counts: far longer than a
// cache lags behind a write it saw succeed.
const haltMemoryTTL = time.Minute

// remember notes the halts among requests, for ttl.
func (m *haltMemory) remember(requests []kickv1alpha1.KickRequest, until time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.halts == nil {
		m.halts = map[string]rememberedHalt{}
	}
	for i := range requests {
		kr := &requests[i]
		for _, h := range assess.HaltsOf(requests[i : i+1]) {
			m.halts[kr.Namespace+"/"+kr.Name] = rememberedHalt{namespace: kr.Namespace, halt: h, until: until}
		}
	}
}

// forget drops the remembered halt of a request that no longer halts
// (released, or reopened by a new change); the caller's copy must be at
// least as new as this process's own last write of it.
func (m *haltMemory) forget(key string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, held := m.halts[key]
	delete(m.halts, key)
	return held
}

// in returns the remembered halts of a namespace.
func (m *haltMemory) in(namespace string, now time.Time) []assess.Halt {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []assess.Halt
	for k, h := range m.halts {
		switch {
		case now.After(h.until):
			delete(m.halts, k)
		case h.namespace == namespace:
			out = append(out, h.halt)
		}
	}
	return out
}
