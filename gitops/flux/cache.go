package flux

import (
	"unicode/utf8"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kick-operator/kick/gitops"
)

// maxConditionMessage bounds a cached condition message. Flux messages can
// list every failed health check; the start is enough to explain a wait.
const maxConditionMessage = 1024

// CacheOptions trims what the manager caches of Flux objects: only the
// kinds opts says are served, and of each object only what a gate decision
// reads (see trimKustomization and trimHelmRelease).
func CacheOptions(opts Options) map[client.Object]cache.ByObject {
	out := map[client.Object]cache.ByObject{}
	if opts.Kustomizations {
		out[&kustomizev1.Kustomization{}] = cache.ByObject{Transform: trimKustomization}
	}
	if opts.HelmReleases {
		out[&helmv2.HelmRelease{}] = cache.ByObject{Transform: trimHelmRelease}
	}
	return out
}

// trimKustomization keeps the identity and generation, spec.suspend, the
// status conditions and observedGeneration, and the workload entries of
// status.inventory. It drops the rest of the spec (patches, substitutions,
// decryption settings), managedFields, annotations, labels and the status
// history. The result is a new object, so nothing of the decoded original
// stays reachable. It is idempotent, as a cache transform must be.
func trimKustomization(obj any) (any, error) {
	k, ok := obj.(*kustomizev1.Kustomization)
	if !ok {
		return obj, nil
	}
	out := &kustomizev1.Kustomization{TypeMeta: k.TypeMeta, ObjectMeta: gitops.SlimMeta(k.ObjectMeta, false)}
	out.Spec.Suspend = k.Spec.Suspend
	out.Status.ObservedGeneration = k.Status.ObservedGeneration
	out.Status.Conditions = trimConditions(k.Status.Conditions)
	if inv := k.Status.Inventory; inv != nil {
		out.Status.Inventory = &kustomizev1.ResourceInventory{Entries: []kustomizev1.ResourceRef{}}
		for _, e := range inv.Entries {
			if isWorkloadEntry(e.ID) {
				out.Status.Inventory.Entries = append(out.Status.Inventory.Entries, kustomizev1.ResourceRef{ID: e.ID})
			}
		}
	}
	return out, nil
}

// trimHelmRelease is trimKustomization for HelmReleases; it drops
// spec.values and the release history, usually the largest parts.
func trimHelmRelease(obj any) (any, error) {
	h, ok := obj.(*helmv2.HelmRelease)
	if !ok {
		return obj, nil
	}
	out := &helmv2.HelmRelease{TypeMeta: h.TypeMeta, ObjectMeta: gitops.SlimMeta(h.ObjectMeta, false)}
	out.Spec.Suspend = h.Spec.Suspend
	out.Status.ObservedGeneration = h.Status.ObservedGeneration
	out.Status.Conditions = trimConditions(h.Status.Conditions)
	if inv := h.Status.Inventory; inv != nil {
		out.Status.Inventory = &helmv2.ResourceInventory{Entries: []helmv2.ResourceRef{}}
		for _, e := range inv.Entries {
			if isWorkloadEntry(e.ID) {
				out.Status.Inventory.Entries = append(out.Status.Inventory.Entries, helmv2.ResourceRef{ID: e.ID})
			}
		}
	}
	return out, nil
}

func trimConditions(conds []metav1.Condition) []metav1.Condition {
	if len(conds) == 0 {
		return nil
	}
	out := make([]metav1.Condition, len(conds))
	for i, c := range conds {
		c.Message = truncate(c.Message, maxConditionMessage)
		out[i] = c
	}
	return out
}

// truncate cuts s to at most n bytes on a character boundary, marking the
// cut. A string that was cut before is not cut again.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// viewOf reads the decision inputs of a Kustomization or HelmRelease,
// trimmed or not.
func viewOf(obj client.Object) (view, bool) {
	switch o := obj.(type) {
	case *kustomizev1.Kustomization:
		v := view{
			ref:                ownerRef{Kind: KustomizationKind.Kind, Namespace: o.Namespace, Name: o.Name},
			apiVersion:         kustomizev1.GroupVersion.String(),
			generation:         o.Generation,
			deleting:           o.DeletionTimestamp != nil,
			suspended:          o.Spec.Suspend,
			observedGeneration: o.Status.ObservedGeneration,
			conditions:         o.Status.Conditions,
		}
		if inv := o.Status.Inventory; inv != nil {
			v.hasInventory = true
			v.inventory = make([]string, 0, len(inv.Entries))
			for _, e := range inv.Entries {
				v.inventory = append(v.inventory, e.ID)
			}
		}
		return v, true
	case *helmv2.HelmRelease:
		v := view{
			ref:                ownerRef{Kind: HelmReleaseKind.Kind, Namespace: o.Namespace, Name: o.Name},
			apiVersion:         helmv2.GroupVersion.String(),
			generation:         o.Generation,
			deleting:           o.DeletionTimestamp != nil,
			suspended:          o.Spec.Suspend,
			observedGeneration: o.Status.ObservedGeneration,
			conditions:         o.Status.Conditions,
		}
		if inv := o.Status.Inventory; inv != nil {
			v.hasInventory = true
			v.inventory = make([]string, 0, len(inv.Entries))
			for _, e := range inv.Entries {
				v.inventory = append(v.inventory, e.ID)
			}
		}
		return v, true
	}
	return view{}, false
}
