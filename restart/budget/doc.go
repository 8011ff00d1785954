// Package budget caps how many restarts KICK has in progress at once: per
// KickPolicy (restart.maxConcurrent) and across the cluster
// (--max-concurrent-restarts). A restart is in progress from the moment its
// KickRequest records it (status.currentRollout, written before the patch)
// until the workload's own status shows the rollout complete, the request
// finishes, or --rollout-timeout passes. Slots are handed out fairly:
// decide.go is the pure rule, budget.go the plumbing that counts from the
// cache and serialises grants within the manager.
package budget
