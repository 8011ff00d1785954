//go:build tools

// Package tools pins Flux's kustomize-controller, which the end-to-end tests build
// from the Go module proxy.
package tools

import (
	_ "github.com/fluxcd/kustomize-controller"
)
