// Package kargo is the Kargo GitOps provider: it blocks restarts while a
// promotion runs for the Stage authorised on the owning Argo CD Application,
// then defers to the Argo CD gate.
package kargo
