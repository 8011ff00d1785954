// Package kinds names the upstream API kinds that the Argo CD and Kargo
// integrations read, without importing their Go modules. The manager probes
// for these kinds at start-up, including in its lean build, which does not
// link the Argo CD API (see cmd/kick-manager).
package kinds

import "k8s.io/apimachinery/pkg/runtime/schema"

var (
	// ArgoCDApplication and ArgoCDAppProject are Argo CD's kinds.
	ArgoCDApplication = schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "Application"}
	ArgoCDAppProject  = schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "AppProject"}
	// KargoStage and KargoPromotion are Kargo's kinds.
	KargoStage     = schema.GroupVersionKind{Group: "kargo.akuity.io", Version: "v1alpha1", Kind: "Stage"}
	KargoPromotion = schema.GroupVersionKind{Group: "kargo.akuity.io", Version: "v1alpha1", Kind: "Promotion"}
)

// ArgoCD are the kinds the Argo CD integration needs.
func ArgoCD() []schema.GroupVersionKind {
	return []schema.GroupVersionKind{ArgoCDApplication, ArgoCDAppProject}
}

// Kargo are the kinds the Kargo integration needs.
func Kargo() []schema.GroupVersionKind {
	return []schema.GroupVersionKind{KargoStage, KargoPromotion}
}
