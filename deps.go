//go:build tools

// This file pins the dependencies chosen in DESIGN.md (typed Argo CD and
// Flux APIs, CloudEvents, retrying HTTP client) in go.mod until the packages
// that use them (gitops/argocd, gitops/flux, sinks) land. It is never built.
package kick

import (
	_ "github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	_ "github.com/cloudevents/sdk-go/v2"
	_ "github.com/fluxcd/helm-controller/api/v2"
	_ "github.com/fluxcd/kustomize-controller/api/v1"
	_ "github.com/hashicorp/go-retryablehttp"
	_ "github.com/prometheus/client_golang/prometheus"
)
