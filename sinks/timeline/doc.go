// Package timeline is the manager's timeline: a router subscriber that keeps
// a bounded history of what happened to managed workloads (source changes,
// gate decisions, request phases, restarts, completions) plus their
// Kubernetes Events, rebuilt from KICK's durable objects on start, and a
// read-only HTTP server with a JSON API and an embedded browser UI.
package timeline
