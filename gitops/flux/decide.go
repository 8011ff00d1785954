package flux

import (
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/gitops"
)

// Condition types of the Flux status convention (kstatus). They are plain
// strings upstream as well; spelling them here keeps fluxcd/pkg out of the
// package's direct imports.
const (
	condReady       = "Ready"
	condReconciling = "Reconciling"
	condStalled     = "Stalled"
	// reasonProgressingWithRetry on Reconciling=True: the last attempt
	// failed and the controller will try again.
	reasonProgressingWithRetry = "ProgressingWithRetry"
)

// view is what a gate decision reads of a Kustomization or HelmRelease,
// independent of the two Go types.
type view struct {
	ref        ownerRef
	apiVersion string
	generation int64
	deleting   bool
	suspended  bool
	// observedGeneration is status.observedGeneration.
	observedGeneration int64
	conditions         []metav1.Condition
	// inventory is nil when the object reports no inventory at all (an old
	// controller, or not reconciled yet); otherwise it holds the entry ids.
	inventory []string
	// hasInventory tells an empty inventory from a missing one.
	hasInventory bool
}

func (v view) owner() *kickv1alpha1.GitOpsOwner {
	return &kickv1alpha1.GitOpsOwner{
		Provider:   kickv1alpha1.ProviderFlux,
		APIVersion: v.apiVersion,
		Kind:       v.ref.Kind,
		Namespace:  v.ref.Namespace,
		Name:       v.ref.Name,
	}
}

// lists reports whether the owner's inventory confirms it applied the
// object with the given inventory id. An owner without an inventory
// cannot contradict its labels and is taken at its word.
func (v view) lists(id string) bool {
	return !v.hasInventory || slices.Contains(v.inventory, id)
}

// decide is the gate for a workload whose owner has been resolved and
// confirmed. Suspension always gates: a suspended owner means someone froze
// the application on purpose, and a restart would change it behind their
// back. Readiness gates only when requireReconciled holds (the default);
// with requireReconciled: false ownership and suspension are the whole gate.
func decide(v view, requireReconciled bool) gitops.Decision {
	d := gitops.Decision{Provider: kickv1alpha1.ProviderFlux, Owner: v.owner()}
	switch {
	case v.suspended:
		d.Reason = kickv1alpha1.GateOwnerSuspended
		d.Message = fmt.Sprintf("%s is suspended (spec.suspend: true); KICK waits until it is resumed", v.ref)
		return d
	case v.deleting:
		d.Reason = kickv1alpha1.GateOwnerReconciling
		d.Message = fmt.Sprintf("%s is being deleted", v.ref)
		return d
	case !requireReconciled:
		d.Reason = kickv1alpha1.GateAllowed
		d.Message = fmt.Sprintf("%s owns the workload and is not suspended; requireReconciled is false, so its readiness is not checked", v.ref)
		return d
	}
	d.Reason, d.Message = readiness(v)
	return d
}

// readiness maps the owner's status conditions to a gate reason, in this
// order: Stalled=True is out of sync (Flux gave up until something
// changes); Reconciling=True with reason ProgressingWithRetry next to a
// current Ready=False is out of sync (an attempt failed, Flux retries);
// other Reconciling=True, a missing or Unknown Ready condition, or a
// Ready condition for an older generation mean Flux is still at work;
// Ready=False is out of sync; Ready=True for the current generation allows.
func readiness(v view) (kickv1alpha1.GateReason, string) {
	if len(v.conditions) == 0 {
		return kickv1alpha1.GateOwnerReconciling, fmt.Sprintf("%s has not reported readiness yet (it has no status conditions); KICK waits until Flux has reconciled it", v.ref)
	}
	ready := find(v.conditions, condReady)
	if c := find(v.conditions, condStalled); c != nil && c.Status == metav1.ConditionTrue {
		return kickv1alpha1.GateOwnerOutOfSync, fmt.Sprintf("%s is stalled: %s%s", v.ref, describe(c), stalledCause(c, ready))
	}
	if c := find(v.conditions, condReconciling); c != nil && c.Status == metav1.ConditionTrue {
		// A failed attempt that Flux will retry: kustomize-controller
		// keeps Reconciling=True (ProgressingWithRetry) next to the
		// Ready=False that says what failed, until an attempt succeeds.
		// The failure is the news; the retry is a footnote.
		if c.Reason == reasonProgressingWithRetry && ready != nil && ready.Status == metav1.ConditionFalse {
			if stale, _ := staleGeneration(v, ready); !stale {
				return kickv1alpha1.GateOwnerOutOfSync, fmt.Sprintf("%s is not ready: %s (Flux retries: %s)", v.ref, describe(ready), c.Message)
			}
		}
		return kickv1alpha1.GateOwnerReconciling, fmt.Sprintf("%s is reconciling: %s", v.ref, describe(c))
	}
	if ready == nil {
		return kickv1alpha1.GateOwnerReconciling, fmt.Sprintf("%s has not reported readiness yet (no Ready condition); KICK waits until Flux has reconciled it", v.ref)
	}
	if ready.Status != metav1.ConditionTrue && ready.Status != metav1.ConditionFalse {
		return kickv1alpha1.GateOwnerReconciling, fmt.Sprintf("%s is not ready yet (Ready=%s): %s", v.ref, ready.Status, describe(ready))
	}
	if stale, why := staleGeneration(v, ready); stale {
		return kickv1alpha1.GateOwnerReconciling, fmt.Sprintf("%s has not reconciled its current spec yet: %s", v.ref, why)
	}
	if ready.Status == metav1.ConditionFalse {
		return kickv1alpha1.GateOwnerOutOfSync, fmt.Sprintf("%s is not ready: %s", v.ref, describe(ready))
	}
	return kickv1alpha1.GateAllowed, fmt.Sprintf("%s is ready at generation %d", v.ref, v.generation)
}

// stalledCause is the failure behind a Stalled condition, when Ready
// says more than Stalled: helm-controller writes a bare Stalled=True
// (RetriesExceeded: "Failed to upgrade after 1 attempt(s)") and keeps the
// error itself on Ready=False (UpgradeFailed: the Helm error);
// kustomize-controller writes the same message on both, so nothing is
// repeated.
func stalledCause(stalled, ready *metav1.Condition) string {
	if ready == nil || ready.Status != metav1.ConditionFalse || ready.Message == stalled.Message {
		return ""
	}
	return " (Ready=False: " + describe(ready) + ")"
}

// staleGeneration reports whether the Ready condition may describe an
// older spec than metadata.generation. It uses both the condition's
// observedGeneration and status.observedGeneration when they are set; when
// neither is, nothing says which spec the condition is about.
func staleGeneration(v view, ready *metav1.Condition) (bool, string) {
	if ready.ObservedGeneration == 0 && v.observedGeneration == 0 {
		return true, fmt.Sprintf("Ready=%s does not say which generation it describes (no observedGeneration), the spec is at generation %d", ready.Status, v.generation)
	}
	for _, g := range []struct {
		what string
		gen  int64
	}{{"the Ready condition", ready.ObservedGeneration}, {"status", v.observedGeneration}} {
		if g.gen != 0 && g.gen != v.generation {
			return true, fmt.Sprintf("%s observed generation %d, the spec is at generation %d (last Ready=%s: %s)", g.what, g.gen, v.generation, ready.Status, describe(ready))
		}
	}
	return false, ""
}

func find(conds []metav1.Condition, t string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

func describe(c *metav1.Condition) string {
	switch {
	case c.Reason != "" && c.Message != "":
		return c.Reason + ": " + c.Message
	case c.Message != "":
		return c.Message
	case c.Reason != "":
		return c.Reason
	}
	return "no reason given"
}
