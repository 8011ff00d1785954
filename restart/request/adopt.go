package request

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/workload"
)

// adopter evaluates the workloads a KickPolicy selects when the policy
// appears or its spec changes. A workload that only now became managed may
// run pods older than changes already recorded for its sources; it gets a
// request when it is stale, and nothing at all when it is fresh. Sources
// that have no record yet are handed to the observer for their baseline.
type adopter struct {
	client         client.Client
	driver         *Driver
	enqueueSources func(ctx context.Context, workloads ...client.Object) error
}

func (a *adopter) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var p kickv1alpha1.KickPolicy
	if err := a.client.Get(ctx, req.NamespacedName, &p); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	var policies kickv1alpha1.KickPolicyList
	if err := a.client.List(ctx, &policies, client.InNamespace(p.Namespace)); err != nil {
		return ctrl.Result{}, err
	}
	var selected []client.Object
	for _, list := range a.driver.Kinds.Lists() {
		if err := a.client.List(ctx, list, client.InNamespace(p.Namespace)); err != nil {
			return ctrl.Result{}, err
		}
		for _, obj := range workload.Items(list) {
			if sel := selectPolicy(policies.Items, obj); sel.Policy != nil && sel.Policy.UID == p.UID {
				selected = append(selected, obj)
			}
		}
	}
	if a.enqueueSources != nil && len(selected) > 0 {
		if err := a.enqueueSources(ctx, selected...); err != nil {
			return ctrl.Result{}, err
		}
	}
	for _, obj := range selected {
		k := WorkloadKey{Kind: workload.KindOf(obj), Namespace: obj.GetNamespace(), Name: obj.GetName()}
		if err := a.driver.ensureNow(ctx, k); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{}, nil
}
