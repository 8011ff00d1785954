package request

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/assess"
	"github.com/kick-operator/kick/restart/discovery"
	"github.com/kick-operator/kick/restart/freshness"
	"github.com/kick-operator/kick/restart/policy"
	"github.com/kick-operator/kick/restart/workload"
	"github.com/kick-operator/kick/sinks/rollup"
)

// FanOuts reads, from the cache, the KickRequests of a namespace as the
// members of fan-outs, for the summaries of NotificationPolicies with
// spec.rollUp. It implements sinks.FanOutSource. Everything it returns is
// durable state, so a manager that restarts mid-fan-out rebuilds the same
// groups.
type FanOuts struct {
	// Client reads KickRequests and their target workloads (the manager's
	// cache).
	Client client.Reader
	// Kinds are the workload kinds this manager restarts; nil means
	// workload.Builtin().
	Kinds *workload.Registry
	// KeyNames names keys as the observation records do; nil counts every
	// consumer of a changed source, whichever of its keys changed.
	KeyNames KeyNamer
}

// Members returns one member per KickRequest of namespace, with its target
// workload's labels (none when the workload is gone).
func (f *FanOuts) Members(ctx context.Context, namespace string) ([]rollup.Member, error) {
	var list kickv1alpha1.KickRequestList
	if err := f.Client.List(ctx, &list, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	if len(list.Items) == 0 {
		return nil, nil
	}
	labels := f.labels(ctx, namespace)
	policies := f.policies(ctx, namespace)
	out := make([]rollup.Member, 0, len(list.Items))
	for i := range list.Items {
		kr := &list.Items[i]
		m := memberOf(kr)
		m.Target = string(kr.Spec.TargetRef.Kind) + "/" + kr.Spec.TargetRef.Name
		m.TargetLabels = labels[string(kr.Spec.TargetRef.Kind)+"/"+kr.Spec.TargetRef.Name]
		m.Wave = waveOf(policies[kr.Status.PolicyRef], m.TargetLabels)
		out = append(out, m)
	}
	return out, nil
}

// policies maps the names of the namespace's KickPolicies to their specs.
func (f *FanOuts) policies(ctx context.Context, namespace string) map[string]*kickv1alpha1.KickPolicySpec {
	var list kickv1alpha1.KickPolicyList
	if err := f.Client.List(ctx, &list, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	out := make(map[string]*kickv1alpha1.KickPolicySpec, len(list.Items))
	for i := range list.Items {
		out[list.Items[i].Name] = &list.Items[i].Spec
	}
	return out
}

// waveOf is the restart wave of a workload with these labels under the
// policy that selects it, counted from 1 (the workloads no wave selects go
// last, in a wave of their own); 0 when the policy has no waves.
func waveOf(p *kickv1alpha1.KickPolicySpec, labels map[string]string) int {
	if len(p.RestartWaves()) == 0 {
		return 0
	}
	i, err := p.WaveOf(labels)
	if err != nil {
		return 0
	}
	return i + 1
}

// labels maps "Kind/name" to the labels of every workload of the namespace,
// read with one cached list per kind.
func (f *FanOuts) labels(ctx context.Context, namespace string) map[string]map[string]string {
	kinds := f.Kinds
	if kinds == nil {
		kinds = workload.Builtin()
	}
	out := map[string]map[string]string{}
	for _, list := range kinds.Lists() {
		if err := f.Client.List(ctx, list, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
			continue
		}
		for _, w := range workload.Items(list) {
			out[string(workload.KindOf(w))+"/"+w.GetName()] = w.GetLabels()
		}
	}
	return out
}

// memberOf says where a request stands in the fan-out of the change it
// answers.
func memberOf(kr *kickv1alpha1.KickRequest) rollup.Member {
	st := &kr.Status
	m := rollup.Member{Namespace: kr.Namespace}
	if src := st.RestartedFor; src != nil {
		m.RestartedFor = rollup.Source{Kind: string(src.Kind), Name: src.Name}
		m.RestartedAt = src.ChangedAt.Time
	}
	if c := st.LatestObservedDependencyChange; c != nil {
		m.Observed = c.Time
	}
	if c := st.CompletionTime; c != nil {
		m.Completed = c.Time
	}
	switch {
	case st.Phase == kickv1alpha1.PhaseFailed:
		m.Outcome = rollup.Failed
	case st.Phase.IsTerminal():
		m.Outcome = rollup.Succeeded
	case st.Phase == kickv1alpha1.PhaseExecuting:
		m.Outcome = rollup.InProgress
	case st.Gate != nil && (st.Gate.Stage == string(assess.StageHalt) || st.Gate.Reason == kickv1alpha1.GateRolloutHalted):
		m.Outcome = rollup.Held
	default:
		m.Outcome = rollup.Waiting
	}
	return m
}

// Consumers lists the workloads of namespace that read source and that a
// KickPolicy selects with the source in its scope (the consumers KICK
// restarts for a change of it), and whether the running pods of each carry
// the change at changedAt, as the halt counts the restarts it holds. It
// reads the cache only: the namespace's KickPolicies, one indexed list per
// workload kind, one look at each consumer's rollout and, only when a
// selecting policy has a dependencySelector, the source's metadata.
func (f *FanOuts) Consumers(ctx context.Context, namespace string, source rollup.Source, changedAt time.Time) ([]rollup.Consumer, error) {
	var policies kickv1alpha1.KickPolicyList
	if err := f.Client.List(ctx, &policies, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("list the KickPolicies of namespace %s: %w", namespace, err)
	}
	if len(policies.Items) == 0 {
		return nil, nil
	}
	kinds := f.Kinds
	if kinds == nil {
		kinds = workload.Builtin()
	}
	scope := sourceScope{c: f.Client, namespace: namespace, source: source}
	change := freshness.At(changedAt)
	keys := f.keyLevel(ctx, namespace, source)
	var out []rollup.Consumer
	for _, list := range kinds.Lists() {
		if err := f.Client.List(ctx, list, client.InNamespace(namespace),
			client.MatchingFields{discovery.SourceIndex: discovery.IndexKey(source.Kind, source.Name)}); err != nil {
			return nil, fmt.Errorf("list the consumers of %s %s/%s: %w", source.Kind, namespace, source.Name, err)
		}
		for _, w := range workload.Items(list) {
			if !w.GetDeletionTimestamp().IsZero() {
				continue
			}
			sel := selectPolicy(policies.Items, w)
			if sel.Policy == nil && sel.Reason != kickv1alpha1.GateAmbiguousPolicy {
				continue // not KICK's to restart
			}
			if sel.Policy != nil {
				in, err := scope.covers(ctx, sel.Policy)
				if err != nil {
					return nil, err
				}
				if !in || keys.untouched(w, sel.Policy, changedAt) {
					continue
				}
			}
			r, err := kinds.Inspect(ctx, f.Client, w)
			carries := err == nil && !freshness.Newer(change, r.Since)
			if carries {
				unrecorded, err := restartUnrecorded(ctx, f.Client, kinds, w, changedAt)
				if err != nil {
					return nil, err
				}
				carries = !unrecorded
			}
			out = append(out, rollup.Consumer{
				Target:  string(workload.KindOf(w)) + "/" + w.GetName(),
				Carries: carries,
				Labels:  w.GetLabels(),
			})
		}
	}
	return out, nil
}

// sourceKeys judges, key by key, which consumers of a source a change
// leaves alone, as the assessment does.
type sourceKeys struct {
	record *kickv1alpha1.SourceObservationSpec
	dep    discovery.Dependency
	nameID func(string) string
}

// keyLevel reads the source's record from the cache; the zero sourceKeys
// (every consumer touched) without a KeyNamer or a per-key history.
func (f *FanOuts) keyLevel(ctx context.Context, namespace string, source rollup.Source) sourceKeys {
	if f.KeyNames == nil {
		return sourceKeys{}
	}
	var rec kickv1alpha1.SourceObservation
	key := client.ObjectKey{Namespace: namespace, Name: kickv1alpha1.ObservationName(source.Kind, source.Name)}
	if err := f.Client.Get(ctx, key, &rec); err != nil || !rec.Spec.Keys.Usable() {
		return sourceKeys{}
	}
	names := f.KeyNames
	return sourceKeys{record: &rec.Spec,
		dep:    discovery.Dependency{APIVersion: discovery.CoreAPIVersion, Kind: source.Kind, Name: source.Name},
		nameID: func(k string) string { return names(namespace, source.Kind, source.Name, k) }}
}

// untouched reports whether w, restarted under p, reads only keys of the
// source that last changed before changedAt: the change is none of its
// restarts (assess.KeyChange), so it is neither pending nor counted.
func (s sourceKeys) untouched(w client.Object, p *kickv1alpha1.KickPolicy, changedAt time.Time) bool {
	if s.record == nil || p == nil || p.Spec.CountsEveryKey() {
		return false
	}
	t, ok := discovery.PodTemplate(w)
	if !ok {
		return false
	}
	reads, ok := discovery.KeysRead(&t.Spec)[s.dep]
	if !ok {
		return false
	}
	c, keyLevel := assess.KeyChange(s.record, reads, s.nameID)
	return keyLevel && c.Latest.Before(changedAt)
}

// sourceScope tells whether a policy's dependencySelector covers a source,
// reading the source's labels from the cache at most once.
type sourceScope struct {
	c         client.Reader
	namespace string
	source    rollup.Source
	read      bool
	labels    map[string]string
	gone      bool
}

func (s *sourceScope) covers(ctx context.Context, p *kickv1alpha1.KickPolicy) (bool, error) {
	if d := p.Spec.Discovery; d == nil || d.DependencySelector == nil ||
		(len(d.DependencySelector.MatchLabels) == 0 && len(d.DependencySelector.MatchExpressions) == 0) {
		return true, nil // every source is in scope
	}
	if !s.read {
		src := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: discovery.CoreAPIVersion, Kind: s.source.Kind}}
		err := s.c.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: s.source.Name}, src)
		switch {
		case apierrors.IsNotFound(err):
			s.gone = true
		case err != nil:
			return false, fmt.Errorf("read %s %s/%s: %w", s.source.Kind, s.namespace, s.source.Name, err)
		}
		s.read, s.labels = true, src.GetLabels()
	}
	return !s.gone && policy.DependencyInScope(p, s.labels), nil
}

// restartUnrecorded reports whether KICK restarted w for a change at or
// after changedAt and no request names that restart yet: w carries the
// stamp its restarted-for note gives, and no request of w was written for
// that stamp. The driver writes the request a moment after the restart (in
// a fan-out, up to recordMaxWait later), so until then the consumer is a
// restart of the fan-out still to be recorded, not one that started after
// the change by other means.
func restartUnrecorded(ctx context.Context, c client.Reader, kinds *workload.Registry, w client.Object, changedAt time.Time) (bool, error) {
	k, ok := kinds.KindOf(w)
	if !ok {
		return false, nil
	}
	note, _, ok := carriedNote(w, func() (time.Time, bool) { return k.Restarter.Current(w) })
	if !ok || note.Change.Before(changedAt) {
		return false, nil
	}
	requests, err := requestsOf(ctx, c, w.GetNamespace(), workload.TargetKey(k.Target, w.GetName()))
	if err != nil {
		return false, err
	}
	for _, kr := range requests {
		if kr.Annotations[kickv1alpha1.RestartAnnotation] == note.Stamp {
			return false, nil
		}
	}
	return true, nil
}
