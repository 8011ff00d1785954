package request

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/assess"
	"github.com/kick-operator/kick/restart/tracing"
)

// The restart cycle's trace: what its spans say, from the assessment and
// the request. Names only, never data, key names or fingerprints.

// changeCycle describes the cycle a change of workload k opens.
func changeCycle(k WorkloadKey, a assess.Assessment, handed handoff) tracing.Cycle {
	c := tracing.Cycle{Namespace: k.Namespace, WorkloadKind: string(k.Kind), WorkloadName: k.Name, Provider: string(a.Gate.Provider)}
	if p := a.Selection.Policy; p != nil {
		c.Policy = p.Name
	}
	c.SourceKind, c.SourceName = changeSource(a, handed)
	return c
}

// requestCycle describes the cycle kr answers, as its reconcile sees it.
func requestCycle(kr *kickv1alpha1.KickRequest, a assess.Assessment) tracing.Cycle {
	c := tracing.Cycle{
		Namespace: kr.Namespace, WorkloadKind: string(kr.Spec.TargetRef.Kind), WorkloadName: kr.Spec.TargetRef.Name,
		Request: kr.Name, Policy: kr.Status.PolicyRef, Provider: string(kr.Status.Provider),
	}
	c.SourceKind, c.SourceName = changeSource(a, handoff{})
	return c
}

// changeSource names the source of the assessment's latest change: the
// in-scope dependency whose record holds it, else the source of the router
// event that handed it; empty when neither does (a person's request).
func changeSource(a assess.Assessment, handed handoff) (kind, name string) {
	if a.Latest.IsZero() {
		return "", ""
	}
	for _, d := range a.Dependencies {
		if d.Scope == assess.ScopeIn && !d.Change.IsZero() && d.Change.Latest.Equal(a.Latest.Latest) {
			return d.Kind, d.Name
		}
	}
	if !handed.source.IsZero() && handed.change.Latest.Equal(a.Latest.Latest) {
		return handed.source.Kind, handed.source.Name
	}
	return "", ""
}

// traceRestart records the restart.executed span of the restart this
// reconcile applied from started until now, in the trace whose traceparent
// the request keeps.
func (r *Reconciler) traceRestart(ctx context.Context, kr *kickv1alpha1.KickRequest, a assess.Assessment, started time.Time) {
	if r.Tracer == nil {
		return
	}
	r.Tracer.RestartedRequest(ctx, kr, requestCycle(kr, a), started, r.Now())
}

// retrace opens the trace of a cycle this reconcile opened itself: a
// finished request reopened for a change the records show before the
// driver handed it over. The stored traceparent is the previous cycle's,
// so it is replaced by the new cycle's, or removed when tracing is off.
func (s *step) retrace(ctx context.Context) error {
	_, stale := s.kr.Annotations[kickv1alpha1.TraceparentAnnotation]
	if s.r.Tracer == nil && !stale {
		return nil
	}
	tc := s.r.Tracer.StartChange(ctx, requestCycle(s.kr, s.a), s.a.Latest.Latest)
	var value any // null removes it
	if tp := tc.Traceparent(); tp != "" {
		value = tp
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{kickv1alpha1.TraceparentAnnotation: value}}})
	if err != nil {
		return err
	}
	updated := s.kr.DeepCopy()
	if err := s.r.Client.Patch(ctx, updated, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("store the traceparent of the new cycle: %w", err)
	}
	s.kr.Annotations = updated.Annotations
	tc.Recorded(s.kr.Name, s.r.Now())
	return nil
}
