// Package flux is the Flux GitOps provider: it resolves the Kustomization
// or HelmRelease that owns a workload and gates restarts on its Ready
// condition and suspend flag.
package flux
