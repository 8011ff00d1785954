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

// Condition types written to status.conditions by the KICK controllers.
const (
	// ConditionReady reports whether a KickPolicy or NotificationPolicy is
	// usable as written: schedules parse, time zones exist, the provider is
	// enabled, referenced Secrets and keys exist.
	ConditionReady = "Ready"

	// ConditionGateAllowed reports the last gate decision of a KickRequest.
	// Its reason is one of the GateReason values.
	ConditionGateAllowed = "GateAllowed"

	// ConditionStale reports the last freshness decision of a KickRequest:
	// True when the running rollout is older than the newest relevant change
	// of a dependency in scope.
	ConditionStale = "Stale"

	// ConditionRolloutComplete reports whether the target's current rollout
	// has finished (kind-aware completeness).
	ConditionRolloutComplete = "RolloutComplete"

	// ConditionReopened tells whether the last change handed to a finished
	// KickRequest reopened it; when it did not, the reason says why
	// (ReasonAlreadyCarried, ReasonNoNewerChange, or a selection or target
	// problem).
	ConditionReopened = "Reopened"

	// ConditionChangeTimeBounded is True when the request's change
	// annotation named a time after the manager's clock (beyond a few
	// seconds of skew): KICK counted the change as made when it saw it and
	// rewrote the annotation, and the message names the value it refused.
	ConditionChangeTimeBounded = "ChangeTimeBounded"
)

// Condition reasons shared by the controllers. Gate decisions use the
// GateReason values instead.
const (
	// ReasonValid: the object is usable as written.
	ReasonValid = "Valid"
	// ReasonInvalidSchedule: a cron expression or duration could not be parsed.
	ReasonInvalidSchedule = "InvalidSchedule"
	// ReasonInvalidTimeZone: a window's timeZone is not a known IANA zone.
	ReasonInvalidTimeZone = "InvalidTimeZone"
	// ReasonSecretNotFound: a referenced Secret does not exist.
	ReasonSecretNotFound = "SecretNotFound"
	// ReasonSecretKeyNotFound: a referenced Secret lacks the referenced key.
	ReasonSecretKeyNotFound = "SecretKeyNotFound"
	// ReasonSuspended: the object has spec.suspend set.
	ReasonSuspended = "Suspended"

	// ReasonDependencyNewer: a dependency changed after the rollout started.
	ReasonDependencyNewer = "DependencyNewer"
	// ReasonUpToDate: the rollout already carries every relevant change.
	ReasonUpToDate = "UpToDate"
	// ReasonRolloutInProgress: the target is still rolling out.
	ReasonRolloutInProgress = "RolloutInProgress"

	// ReasonRestartCompleted: KICK restarted the target and the rollout finished.
	ReasonRestartCompleted = "RestartCompleted"
	// ReasonRolloutTimeout: the rollout did not finish within the manager's
	// --rollout-timeout.
	ReasonRolloutTimeout = "RolloutTimeout"
	// ReasonProgressDeadlineExceeded: the Deployment controller reported
	// that the restart's rollout stopped making progress
	// (spec.progressDeadlineSeconds).
	ReasonProgressDeadlineExceeded = "ProgressDeadlineExceeded"
	// ReasonUnsupportedTarget: the target's kind is not one this manager
	// restarts (or its integration is not active).
	ReasonUnsupportedTarget = "UnsupportedTarget"
	// ReasonCoalesced: another open request already handles the target; this
	// one handed its change over and ended.
	ReasonCoalesced = "Coalesced"
	// ReasonTargetNotFound: the target workload does not exist.
	ReasonTargetNotFound = "TargetNotFound"
	// ReasonDryRun: the selecting policy is in dry-run mode; nothing was patched.
	ReasonDryRun = "DryRun"

	// ReasonNewChange: a newer change reopened the finished request.
	ReasonNewChange = "NewChange"
	// ReasonAlreadyCarried: the running pods started after the change, so
	// the finished request was not reopened.
	ReasonAlreadyCarried = "AlreadyCarried"
	// ReasonNoNewerChange: a dry-run request already reported this change.
	ReasonNoNewerChange = "NoNewerChange"
)
