/*
Copyright 2026 The KICK Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package v1alpha1

// Names on KickRequests that the manager, kubectl kick and CI share. They
// are part of the API: changing one breaks every client that writes it.
const (
	// ChangeAnnotation carries the change a KickRequest must answer: an
	// RFC 3339 time with nanoseconds ("<t>"), or an interval
	// ("<earliest>/<latest>") for a change known only to the second.
	// kubectl kick writes it to reopen a finished request; the manager
	// writes it to hand a change to a request, and dates a person's request
	// with it the first time it sees one.
	ChangeAnnotation = "kick.corewire.io/change"

	// RestartAnnotation carries the restart stamp the manager applies for
	// the request's change when the restart may run at once: the manager
	// writes it when it creates or reopens the request, then restarts the
	// workload with that stamp, and follows that rollout instead of making
	// a restart of its own. If the workload never got the stamp (the manager
	// stopped in between), the request restarts it the usual way.
	RestartAnnotation = "kick.corewire.io/restart"

	// RestartedForAnnotation is written on a workload in the same write as
	// a restart the manager applies before its bookkeeping is durable (the
	// immediately allowed restart): the restart stamp, the change it
	// answers and the Secrets and ConfigMaps (with the resourceVersion of
	// the content) whose records were still being written. A manager that
	// stopped right after that write reads it back, so it neither restarts
	// the workload again for content it already answered nor loses the
	// restart's KickRequest. Only believed while the workload still carries
	// that stamp.
	RestartedForAnnotation = "kick.corewire.io/restarted-for"

	// ReleaseHaltAnnotation, set (to any value) on a KickRequest that failed
	// its rollout and halted a fan-out, releases the halt: the restarts it
	// held go ahead with the change as it is. A new change of the source
	// ends the halt on its own.
	ReleaseHaltAnnotation = "kick.corewire.io/release-halt"

	// TraceparentAnnotation carries the W3C traceparent of the restart
	// cycle's first span (dependency.changed): the manager writes it with
	// the change when it creates or reopens a request while tracing is on,
	// and the restart's span continues that trace, whichever manager runs
	// it. Notifications about the request carry it too.
	TraceparentAnnotation = "kick.corewire.io/traceparent"

	// ManagedByLabel marks the requests the manager created itself (value
	// ManagedByKick). A request without it stands for a person or CI: it
	// restarts its target even when the pods carry every recorded change.
	ManagedByLabel = "app.kubernetes.io/managed-by"
	// ManagedByKick is ManagedByLabel's value on the manager's requests.
	ManagedByKick = "kick"

	// ConditionCompleted says why a KickRequest reached its terminal phase
	// (reasons: ReasonRestartCompleted, ReasonUpToDate, ReasonDryRun,
	// ReasonRolloutTimeout, ReasonTargetNotFound, ...).
	ConditionCompleted = "Completed"
)

// RequestName is the name the manager and kubectl kick give the request of
// a workload: "<kind>-<name>" with the kind in lower case (for example
// "deployment-web"), made valid the way ObservationName makes its names
// valid. A name never proves what a request targets: read its
// spec.targetRef.
func RequestName(kind TargetKind, name string) string { return ObservationName(string(kind), name) }
