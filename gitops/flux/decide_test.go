package flux

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
)

func cond(t string, s metav1.ConditionStatus, gen int64, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: t, Status: s, ObservedGeneration: gen, Reason: reason, Message: msg}
}

func TestDecide(t *testing.T) {
	const (
		T = metav1.ConditionTrue
		F = metav1.ConditionFalse
		U = metav1.ConditionUnknown
	)
	base := view{ref: ownerRef{"Kustomization", "flux-system", "apps"}, apiVersion: "kustomize.toolkit.fluxcd.io/v1", generation: 3, observedGeneration: 3}
	with := func(mod func(*view)) view {
		v := base
		mod(&v)
		return v
	}
	ready := cond(condReady, T, 3, "ReconciliationSucceeded", "Applied revision: main@sha1:abc")
	cases := []struct {
		name    string
		v       view
		relaxed bool // requireReconciled: false
		reason  kickv1alpha1.GateReason
		message string
		absent  string // the message must not contain it
	}{
		{name: "ready for the current generation", v: with(func(v *view) { v.conditions = []metav1.Condition{ready} }),
			reason: kickv1alpha1.GateAllowed, message: "ready at generation 3"},
		{name: "ready, generation only on the condition", v: with(func(v *view) { v.observedGeneration = 0; v.conditions = []metav1.Condition{ready} }),
			reason: kickv1alpha1.GateAllowed},
		{name: "ready, generation only in status", v: with(func(v *view) { v.conditions = []metav1.Condition{cond(condReady, T, 0, "", "")} }),
			reason: kickv1alpha1.GateAllowed},
		{name: "ready without any observed generation", v: with(func(v *view) {
			v.observedGeneration = 0
			v.conditions = []metav1.Condition{cond(condReady, T, 0, "", "")}
		}),
			reason: kickv1alpha1.GateOwnerReconciling, message: "does not say which generation"},
		{name: "ready for an older generation (condition)", v: with(func(v *view) { v.conditions = []metav1.Condition{cond(condReady, T, 2, "", "")} }),
			reason: kickv1alpha1.GateOwnerReconciling, message: "observed generation 2, the spec is at generation 3"},
		{name: "ready for an older generation (status)", v: with(func(v *view) { v.observedGeneration = 2; v.conditions = []metav1.Condition{ready} }),
			reason: kickv1alpha1.GateOwnerReconciling, message: "status observed generation 2"},
		{name: "not ready for an older generation is still reconciling", v: with(func(v *view) {
			v.observedGeneration = 2
			v.conditions = []metav1.Condition{cond(condReady, F, 2, "BuildFailed", "x")}
		}),
			reason: kickv1alpha1.GateOwnerReconciling},
		{name: "not ready", v: with(func(v *view) {
			v.conditions = []metav1.Condition{cond(condReady, F, 3, "HealthCheckFailed", "web not ready")}
		}),
			reason: kickv1alpha1.GateOwnerOutOfSync, message: "HealthCheckFailed: web not ready"},
		{name: "ready unknown", v: with(func(v *view) {
			v.conditions = []metav1.Condition{cond(condReady, U, 3, "Progressing", "Reconciliation in progress")}
		}),
			reason: kickv1alpha1.GateOwnerReconciling, message: "Ready=Unknown"},
		{name: "reconciling", v: with(func(v *view) {
			v.conditions = []metav1.Condition{ready, cond(condReconciling, T, 3, "Progressing", "applying")}
		}), reason: kickv1alpha1.GateOwnerReconciling, message: "is reconciling: Progressing: applying"},
		{name: "failed and retrying, as kustomize-controller writes it", v: with(func(v *view) {
			v.conditions = []metav1.Condition{
				cond(condReconciling, T, 3, "ProgressingWithRetry", "Detecting drift for revision main@sha1:0a1b with a timeout of 30s"),
				cond(condReady, F, 3, "ReconciliationFailed", "ConfigMap/shop/broken dry-run failed"),
			}
		}), reason: kickv1alpha1.GateOwnerOutOfSync, message: "is not ready: ReconciliationFailed: ConfigMap/shop/broken dry-run failed (Flux retries: Detecting drift"},
		{name: "retrying after a failure of an older generation is still reconciling", v: with(func(v *view) {
			v.conditions = []metav1.Condition{
				cond(condReconciling, T, 3, "ProgressingWithRetry", "retrying"),
				cond(condReady, F, 2, "ReconciliationFailed", "old failure"),
			}
		}), reason: kickv1alpha1.GateOwnerReconciling, message: "is reconciling: ProgressingWithRetry"},
		{name: "reconciling false is no obstacle", v: with(func(v *view) {
			v.conditions = []metav1.Condition{ready, cond(condReconciling, F, 3, "", "")}
		}), reason: kickv1alpha1.GateAllowed},
		{name: "stalled wins over reconciling", v: with(func(v *view) {
			v.conditions = []metav1.Condition{cond(condReady, F, 3, "", ""), cond(condReconciling, T, 3, "", ""), cond(condStalled, T, 3, "InvalidPath", "path not found")}
		}), reason: kickv1alpha1.GateOwnerOutOfSync, message: "is stalled: InvalidPath: path not found"},
		{name: "stalled names the failure Ready holds, as helm-controller writes it", v: with(func(v *view) {
			v.conditions = []metav1.Condition{
				cond(condStalled, T, 3, "RetriesExceeded", "Failed to upgrade after 1 attempt(s)"),
				cond(condReady, F, 3, "UpgradeFailed", "Helm upgrade failed for release shop/web with chart web@0.1.0: failed to create resource"),
			}
		}), reason: kickv1alpha1.GateOwnerOutOfSync,
			message: "is stalled: RetriesExceeded: Failed to upgrade after 1 attempt(s) (Ready=False: UpgradeFailed: Helm upgrade failed for release shop/web"},
		{name: "stalled with the same message on Ready says it once", v: with(func(v *view) {
			v.conditions = []metav1.Condition{cond(condStalled, T, 3, "InvalidPath", "path not found"), cond(condReady, F, 3, "InvalidPath", "path not found")}
		}), reason: kickv1alpha1.GateOwnerOutOfSync, message: "is stalled: InvalidPath: path not found", absent: "Ready=False"},
		{name: "no conditions", v: base, reason: kickv1alpha1.GateOwnerReconciling, message: "has not reported readiness yet"},
		{name: "conditions but no Ready", v: with(func(v *view) { v.conditions = []metav1.Condition{cond("Healthy", T, 3, "", "")} }),
			reason: kickv1alpha1.GateOwnerReconciling, message: "no Ready condition"},
		{name: "suspended even when ready", v: with(func(v *view) { v.suspended = true; v.conditions = []metav1.Condition{ready} }),
			reason: kickv1alpha1.GateOwnerSuspended, message: "spec.suspend: true"},
		{name: "being deleted", v: with(func(v *view) { v.deleting = true; v.conditions = []metav1.Condition{ready} }),
			reason: kickv1alpha1.GateOwnerReconciling, message: "being deleted"},
		{name: "relaxed: not ready allows", v: with(func(v *view) { v.conditions = []metav1.Condition{cond(condReady, F, 3, "", "")} }),
			relaxed: true, reason: kickv1alpha1.GateAllowed, message: "requireReconciled is false"},
		{name: "relaxed: no conditions allows", v: base, relaxed: true, reason: kickv1alpha1.GateAllowed},
		{name: "relaxed: suspended still waits", v: with(func(v *view) { v.suspended = true }), relaxed: true,
			reason: kickv1alpha1.GateOwnerSuspended},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := decide(c.v, !c.relaxed)
			if d.Reason != c.reason {
				t.Fatalf("reason = %s (%s), want %s", d.Reason, d.Message, c.reason)
			}
			if !strings.Contains(d.Message, c.message) || !strings.Contains(d.Message, "Kustomization flux-system/apps") {
				t.Fatalf("message %q should name the owner and contain %q", d.Message, c.message)
			}
			if c.absent != "" && strings.Contains(d.Message, c.absent) {
				t.Fatalf("message %q should not contain %q", d.Message, c.absent)
			}
			want := kickv1alpha1.GitOpsOwner{Provider: kickv1alpha1.ProviderFlux, APIVersion: "kustomize.toolkit.fluxcd.io/v1",
				Kind: "Kustomization", Namespace: "flux-system", Name: "apps"}
			if d.Provider != kickv1alpha1.ProviderFlux || d.Owner == nil || *d.Owner != want {
				t.Fatalf("provider %s owner %+v, want Flux and %+v", d.Provider, d.Owner, want)
			}
			if !d.RequeueAt.IsZero() {
				t.Fatalf("a Flux decision changes only with objects; got requeueAt %s", d.RequeueAt)
			}
		})
	}
}

func TestInventoryConfirmsOwner(t *testing.T) {
	id := "shop_web_apps_Deployment"
	cases := []struct {
		name string
		v    view
		want bool
	}{
		{name: "no inventory", v: view{}, want: true},
		{name: "lists it", v: view{hasInventory: true, inventory: []string{"shop_db_apps_Deployment", id}}, want: true},
		{name: "empty inventory", v: view{hasInventory: true}, want: false},
		{name: "other namespace", v: view{hasInventory: true, inventory: []string{"other_web_apps_Deployment"}}, want: false},
		{name: "other kind", v: view{hasInventory: true, inventory: []string{"shop_web_apps_StatefulSet"}}, want: false},
	}
	for _, c := range cases {
		if got := c.v.lists(id); got != c.want {
			t.Errorf("%s: lists = %v, want %v", c.name, got, c.want)
		}
	}
}
