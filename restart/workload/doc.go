// Package workload is the small layer between the restart pipeline and the
// workload kinds KICK restarts: it names kinds, reads a workload and its
// ReplicaSets from the cache, inspects its rollout, and applies the restart.
package workload
