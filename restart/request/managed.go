package request

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/policy"
)

// Managed returns the rule the source observer uses to decide which
// consumers count: a workload is managed when a KickPolicy in its namespace
// selects it (ambiguously selected workloads count too, so their requests
// can say why they wait), and a source is in scope when the selecting
// policy's dependencySelector matches it. Policies are read from the cache.
func Managed(c client.Reader) func(ctx context.Context, w client.Object) (bool, func(map[string]string) bool) {
	return func(ctx context.Context, w client.Object) (bool, func(map[string]string) bool) {
		policies, err := namespacePolicies(ctx, c, w.GetNamespace())
		if err != nil {
			return false, nil
		}
		sel := selectPolicy(policies, w)
		if sel.Policy == nil {
			return sel.Reason == kickv1alpha1.GateAmbiguousPolicy, nil
		}
		p := sel.Policy
		return true, func(labels map[string]string) bool { return policy.DependencyInScope(p, labels) }
	}
}

// selectPolicy picks the KickPolicy responsible for a workload, with
// messages that name the workload.
func selectPolicy(policies []kickv1alpha1.KickPolicy, obj client.Object) policy.Selection {
	if w, ok := policy.WorkloadOf(obj); ok {
		return policy.SelectWorkload(policies, w)
	}
	return policy.Select(policies, obj.GetLabels())
}
