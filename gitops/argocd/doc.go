// Package argocd is the Argo CD GitOps provider: it resolves the
// Application that owns a workload and gates restarts on the owning
// AppProject's sync windows and the Application's sync state.
package argocd
