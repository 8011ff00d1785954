// Package execute performs KICK's only write to a workload, the restart: for the apps/v1 kinds a
// sub-second restartedAt stamp on the pod template, for Argo Rollouts a whole-second spec.restartAt.
// Either way the value is never older than the change it answers, so the new rollout provably follows it.
package execute
