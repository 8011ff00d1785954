// Package gitops holds the contract between the restart pipeline and GitOps
// providers (Argo CD, Flux, Kargo): a provider resolves a workload's owner
// and decides whether a restart may run now; Decision is its answer.
package gitops
