// Package flux is the Flux GitOps provider: it resolves the Kustomization
// or HelmRelease that owns a workload and gates restarts on its Ready
// condition and suspend flag.
//
// Ownership comes from the labels Flux writes on what it applies
// (kustomize.toolkit.fluxcd.io/name|namespace or
// helm.toolkit.fluxcd.io/name|namespace). The named object must exist in
// the cache and, when it reports an inventory, list the workload; both
// label pairs on one workload are ambiguous. A confirmed owner then gates:
// spec.suspend waits with OwnerSuspended; with requireReconciled (the
// default) Stalled or Ready=False wait with OwnerOutOfSync, and Reconciling,
// a missing or Unknown Ready, or a Ready condition about an older
// generation wait with OwnerReconciling. requireReconciled: false drops the
// readiness check but keeps suspension, which is a deliberate freeze.
//
// The objects are cached trimmed to what the decision reads (CacheOptions)
// and watched: a change wakes the requests indexed under the owner and
// under the workloads its inventory lists. Nothing polls.
//
// owner.go and decide.go hold the pure logic; cache.go the cache transform;
// provider.go the gitops.Provider on top of the manager's cache.
package flux
