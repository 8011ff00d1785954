//go:build tools

// Package tools pins the code generators and linters used by the Makefile.
package tools

import (
	_ "sigs.k8s.io/controller-tools/cmd/controller-gen"
)
