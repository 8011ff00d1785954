//go:build tools

// Package tools pins Argo CD's multi-call binary (application controller,
// repo-server, ...) that the end-to-end tests build from the Go module proxy.
package tools

import (
	_ "github.com/argoproj/argo-cd/v3/cmd"
)
