// Package workload is the small layer between the restart pipeline and the
// workload kinds KICK restarts: it names kinds and inspects a workload's
// rollout, reading a Deployment's ReplicaSets through an owner index.
package workload
