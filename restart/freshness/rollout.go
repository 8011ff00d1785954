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

package freshness

import "time"

// Rollout is what the inspectors report about a workload's running rollout.
type Rollout struct {
	// Start is σ: the latest instant at which the running pod template is
	// known to be in place. It is the restartedAt stamp when the template
	// carries a parseable one, otherwise a time taken from the workload's
	// own objects (whole seconds, as Kubernetes stores them). It may be zero
	// when nothing identifies the running revision.
	Start time.Time
	// Complete reports that the rollout has finished, so Start can be
	// trusted and a freshness decision can be taken.
	Complete bool
	// Reason is a machine-readable reason (one of the constants below)
	// when the rollout is not complete; empty when it is.
	Reason string
	// Message explains the state for people.
	Message string
	// Since is a conservative start of the running template, valid even
	// while a rollout is in progress: the restartedAt stamp, else the
	// creation of the current ReplicaSet (Deployments) or of the workload.
	// Every pod of the current template was created after it, so a change
	// not after Since is already in those pods. Zero when unknown.
	Since time.Time
	// ReplicaSet is the name of a Deployment's current ReplicaSet, when
	// exactly one matches its template.
	ReplicaSet string
	// Recheck, when not zero, is how soon a rollout that is not complete
	// becomes complete unless its workload changes (no event announces it).
	Recheck time.Duration
}

// Reasons reported in Rollout.Reason.
const (
	// NoMatchingReplicaSet: no ReplicaSet controlled by the Deployment has
	// its pod template (the Deployment controller has not created it yet, or
	// the cache has not seen it).
	NoMatchingReplicaSet = "NoMatchingReplicaSet"
	// AmbiguousReplicaSetMatch: several ReplicaSets controlled by the
	// Deployment have its pod template, so the running revision is unknown.
	AmbiguousReplicaSetMatch = "AmbiguousReplicaSetMatch"
	// RolloutInProgress: pods are still being replaced or becoming available.
	RolloutInProgress = "RolloutInProgress"
	// Paused: the Deployment is paused; it rolls nothing out until resumed,
	// so no restart could take effect and the request waits.
	Paused = "Paused"
	// GenerationNotObserved: the workload controller has not yet seen the
	// latest spec, so its status describes an older one.
	GenerationNotObserved = "GenerationNotObserved"
	// ProgressDeadlineExceeded: the Deployment's rollout failed to progress
	// within spec.progressDeadlineSeconds.
	ProgressDeadlineExceeded = "ProgressDeadlineExceeded"
	// Partitioned: a StatefulSet rolling update is held at a partition, so
	// the ordinals below it keep the old revision until someone lowers it.
	Partitioned = "Partitioned"
)

// replicasOrOne applies the API default of one replica to an unset field.
func replicasOrOne(r *int32) int32 {
	if r == nil {
		return 1
	}
	return *r
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
