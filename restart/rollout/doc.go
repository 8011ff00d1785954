// Package rollout adds Argo Rollouts as a workload kind: discovery from spec.template, restart through
// spec.restartAt (never the pod template), rollout state from the Rollout status. It reads Rollouts into
// minimal local types; a Deployment that a Rollout runs through spec.workloadRef is restarted through it.
//
// +kubebuilder:object:generate=true
// +groupName=argoproj.io
package rollout
