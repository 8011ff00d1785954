package request

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/assess"
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
