// Package workload is the layer between the restart pipeline and the workload kinds KICK restarts: a
// Registry, built once at start-up, names the active kinds (the apps/v1 ones, plus Argo Rollouts when
// that integration runs) and says how each is listed, inspected and restarted.
package workload
