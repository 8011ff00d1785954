// Package entry is the timeline's data model: one Entry per thing that
// happened to a managed workload (a source change, a gate decision, a
// request phase, a restart, its completion, a Kubernetes Event), built from
// KICK's durable objects and narrated into one line each. It is pure: the
// manager's timeline server and kubectl kick both use it, so the browser
// and the terminal tell the same story.
package entry
