//go:build tools

// Package tools pins Argo Rollouts' controller (cmd/rollouts-controller) that
// the end-to-end tests build from the Go module proxy.
package tools

import (
	_ "github.com/argoproj/argo-rollouts/cmd/rollouts-controller"
)
