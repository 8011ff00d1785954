// Package policy decides which KickPolicy governs a workload (exactly one must select it, or nothing
// restarts) and whether a dependency is in a policy's scope, from selectors compiled once per policy
// generation; its Reconciler keeps each KickPolicy's status (counts, Ready condition) current.
package policy
