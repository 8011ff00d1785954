package request

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/indexed"
)

// The reads below run on every decision about a workload: each change's
// look by the driver and the observer's question whether a consumer is
// managed. They read the cache's indexes directly (package indexed) instead
// of a List, which finds the informer and builds a typed list on every
// call. The items are shallow copies of the cache's objects: they share its
// maps and slices, so they are read, never modified.

// namespacePolicies returns the KickPolicies of namespace.
func namespacePolicies(ctx context.Context, c client.Reader, namespace string) ([]kickv1alpha1.KickPolicy, error) {
	ps, err := indexed.InNamespace[kickv1alpha1.KickPolicy](ctx, c, newPolicyList, namespace)
	if err != nil {
		return nil, fmt.Errorf("list the KickPolicies of namespace %s: %w", namespace, err)
	}
	return values(ps), nil
}

// namespaceHolds returns the KickHolds of namespace.
func namespaceHolds(ctx context.Context, c client.Reader, namespace string) ([]kickv1alpha1.KickHold, error) {
	hs, err := indexed.InNamespace[kickv1alpha1.KickHold](ctx, c, newHoldList, namespace)
	if err != nil {
		return nil, fmt.Errorf("list the KickHolds of namespace %s: %w", namespace, err)
	}
	return values(hs), nil
}

// haltingRequests returns the requests of namespace that halt a fan-out
// (HaltIndex).
func haltingRequests(ctx context.Context, c client.Reader, namespace string) ([]kickv1alpha1.KickRequest, error) {
	rs, err := indexed.ByField[kickv1alpha1.KickRequest](ctx, c, newRequestList, namespace, HaltIndex, "true")
	if err != nil {
		return nil, fmt.Errorf("list the failed restarts of namespace %s: %w", namespace, err)
	}
	return values(rs), nil
}

// values copies each object's struct (not its maps and slices) into a
// slice of values, the form the policy and assessment packages take.
func values[T any](ptrs []*T) []T {
	out := make([]T, len(ptrs))
	for i, p := range ptrs {
		out[i] = *p
	}
	return out
}

func newPolicyList() client.ObjectList { return &kickv1alpha1.KickPolicyList{} }
func newHoldList() client.ObjectList   { return &kickv1alpha1.KickHoldList{} }
