// Package discovery reads a workload's Pod template and returns the Secrets, ConfigMaps and Secrets Store
// CSI classes it provably consumes (env, envFrom, volumes, projected volumes; never imagePullSecrets), and
// provides the cache field index that maps a source back to the workloads that consume it.
package discovery
