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

import "unicode/utf8"

// GateReason explains the last gate decision of a KickRequest
// (status.gate.reason). Every value except Allowed holds the restart back.
type GateReason string

const (
	// GateAllowed: every gate passed; the restart may run.
	GateAllowed GateReason = "Allowed"

	// GateOutsideSchedule: the time is outside a native window or an Argo CD
	// sync window, or inside a Deny window.
	GateOutsideSchedule GateReason = "OutsideSchedule"
	// GateMinIntervalNotElapsed: the target was restarted less than
	// restart.minInterval ago.
	GateMinIntervalNotElapsed GateReason = "MinIntervalNotElapsed"
	// GateSuspended: the selecting KickPolicy is suspended.
	GateSuspended GateReason = "Suspended"
	// GateNotSelected: no KickPolicy in the namespace selects the target.
	GateNotSelected GateReason = "NotSelected"
	// GateAmbiguousPolicy: more than one KickPolicy selects the target.
	GateAmbiguousPolicy GateReason = "AmbiguousPolicy"
	// GateConfigurationError: the policy or a sync window cannot be used as
	// written (for example an unknown time zone or unparsable window).
	GateConfigurationError GateReason = "ConfigurationError"

	// GateOwnerUnknown: no GitOps owner could be resolved.
	GateOwnerUnknown GateReason = "OwnerUnknown"
	// GateAmbiguousOwner: more than one GitOps owner (or Kargo stage) matched.
	GateAmbiguousOwner GateReason = "AmbiguousOwner"
	// GateOwnerOutOfSync: the owning application is not in sync with Git.
	GateOwnerOutOfSync GateReason = "OwnerOutOfSync"
	// GateOwnerReconciling: the owner is still applying its desired state.
	GateOwnerReconciling GateReason = "OwnerReconciling"
	// GateOwnerSuspended: the owning Flux object has spec.suspend set.
	GateOwnerSuspended GateReason = "OwnerSuspended"
	// GatePromotionRunning: a Kargo Promotion for the authorised Stage is
	// still running.
	GatePromotionRunning GateReason = "PromotionRunning"
	// GateProjectUnknown: the Argo CD AppProject of the owner cannot be read.
	GateProjectUnknown GateReason = "ProjectUnknown"
	// GateProviderUnavailable: the GitOps provider could not be queried or
	// is not enabled.
	GateProviderUnavailable GateReason = "ProviderUnavailable"
	// GateSettling: a dependency changed less than restart.settle ago; the
	// restart waits until the sources have been quiet that long.
	GateSettling GateReason = "Settling"
	// GateRestartBudget: the policy's restart.maxConcurrent or the
	// manager's --max-concurrent-restarts is used up by restarts whose
	// rollouts are still in progress; the restart starts when a slot frees.
	GateRestartBudget GateReason = "RestartBudget"
	// GateRolloutHalted: a restart for the same change of the same source
	// failed its rollout, so the rest of that fan-out is held until the
	// source changes again or a person releases the halt.
	GateRolloutHalted GateReason = "RolloutHalted"
	// GateEarlierWave: the policy orders its restarts in waves
	// (restart.waves) and a wave before the workload's own has not yet
	// rolled out the change, or is still baking.
	GateEarlierWave GateReason = "EarlierWave"
	// GateHeld: a person froze restarts with a KickHold (kubectl kick hold)
	// naming the namespace, the workload or a source whose change the
	// restart would bring in; the restart runs once the hold is released
	// or expires.
	GateHeld GateReason = "Held"
)

// WaitingReasons lists every reason that holds a restart back in a waiting
// phase (every value but Allowed and NotSelected, which fails the request
// instead), in the order the gate's stages come.
func WaitingReasons() []GateReason {
	return []GateReason{
		GateSuspended, GateHeld, GateSettling, GateOutsideSchedule, GateConfigurationError, GateMinIntervalNotElapsed,
		GateRolloutHalted, GateEarlierWave, GateAmbiguousPolicy,
		GateOwnerUnknown, GateAmbiguousOwner, GateOwnerOutOfSync, GateOwnerReconciling, GateOwnerSuspended,
		GatePromotionRunning, GateProjectUnknown, GateProviderUnavailable,
		GateRestartBudget,
	}
}

// Blocks reports whether the reason holds a restart back.
func (r GateReason) Blocks() bool { return r != GateAllowed }

// WaitingPhase is the KickRequest phase that shows a restart held back for
// this reason. It returns "" for Allowed.
func (r GateReason) WaitingPhase() KickRequestPhase {
	switch r {
	case GateAllowed:
		return ""
	case GateOwnerUnknown, GateAmbiguousOwner:
		return PhaseWaitingForOwner
	case GateOwnerOutOfSync, GateOwnerReconciling, GateOwnerSuspended:
		return PhaseWaitingForApplicationSync
	default:
		return PhaseWaitingForGate
	}
}

// MaxGateMessage is the most bytes of a gate message a KickRequest keeps
// (in status.gate, its GateAllowed condition and its Events). Messages can
// quote a GitOps controller's own condition message, which is as long as
// that controller makes it (a Helm error can run to kilobytes), and an
// Event's note must stay under 1 KiB.
const MaxGateMessage = 1000

// ClipGateMessage cuts message to MaxGateMessage bytes on a rune
// boundary, marking the cut with "…".
func ClipGateMessage(message string) string {
	if len(message) <= MaxGateMessage {
		return message
	}
	cut := MaxGateMessage - len("…")
	for cut > 0 && !utf8.RuneStart(message[cut]) {
		cut--
	}
	return message[:cut] + "…"
}
