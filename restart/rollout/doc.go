// Package rollout adds Argo Rollouts as a workload kind: discovery from
// spec.template, restart through spec.restartAt, rollout state from the
// Rollout status.
package rollout
