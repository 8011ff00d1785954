//go:build tools

// Package tools pins Flux's source-controller, which the end-to-end tests build
// from the Go module proxy.
package tools

import (
	_ "github.com/fluxcd/source-controller"
)
