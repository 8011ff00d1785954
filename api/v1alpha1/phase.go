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

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// KickRequestPhase is where a KickRequest stands in its lifecycle.
// +kubebuilder:validation:Enum=Pending;WaitingForGate;WaitingForOwner;WaitingForApplicationSync;WaitingForRollout;Executing;Succeeded;NoLongerRequired;Failed;DryRun
type KickRequestPhase string

const (
	// PhasePending: the request exists and has not been evaluated yet.
	PhasePending KickRequestPhase = "Pending"
	// PhaseWaitingForGate: a schedule window, the rate limit, the policy or
	// the GitOps provider holds the restart back; see status.gate.
	PhaseWaitingForGate KickRequestPhase = "WaitingForGate"
	// PhaseWaitingForOwner: the GitOps owner is missing or ambiguous.
	PhaseWaitingForOwner KickRequestPhase = "WaitingForOwner"
	// PhaseWaitingForApplicationSync: the GitOps owner has not finished
	// applying its desired state.
	PhaseWaitingForApplicationSync KickRequestPhase = "WaitingForApplicationSync"
	// PhaseWaitingForRollout: the target is still rolling out, either from
	// someone else's change or from the restart this request issued.
	PhaseWaitingForRollout KickRequestPhase = "WaitingForRollout"
	// PhaseExecuting: KICK is patching the target.
	PhaseExecuting KickRequestPhase = "Executing"
	// PhaseSucceeded: the restart was issued and its rollout completed.
	PhaseSucceeded KickRequestPhase = "Succeeded"
	// PhaseNoLongerRequired: the running rollout already carries every
	// relevant change, so no restart was needed.
	PhaseNoLongerRequired KickRequestPhase = "NoLongerRequired"
	// PhaseFailed: the restart could not be issued or did not complete.
	PhaseFailed KickRequestPhase = "Failed"
	// PhaseDryRun: the policy is in dry-run mode; the decision was recorded
	// but nothing was patched.
	PhaseDryRun KickRequestPhase = "DryRun"
)

// AllPhases lists every phase in lifecycle order.
func AllPhases() []KickRequestPhase {
	return []KickRequestPhase{
		PhasePending, PhaseWaitingForGate, PhaseWaitingForOwner,
		PhaseWaitingForApplicationSync, PhaseWaitingForRollout, PhaseExecuting,
		PhaseSucceeded, PhaseNoLongerRequired, PhaseFailed, PhaseDryRun,
	}
}

// TerminalPhases lists the phases a request ends in. It is also the default
// phase set of a NotificationPolicy.
func TerminalPhases() []KickRequestPhase {
	return []KickRequestPhase{PhaseSucceeded, PhaseFailed, PhaseNoLongerRequired, PhaseDryRun}
}

// IsTerminal reports whether the phase ends a request. A terminal request
// is only reopened by a new relevant change.
func (p KickRequestPhase) IsTerminal() bool {
	switch p {
	case PhaseSucceeded, PhaseNoLongerRequired, PhaseFailed, PhaseDryRun:
		return true
	}
	return false
}

// IsWaiting reports whether the phase is one of the WaitingFor* phases.
func (p KickRequestPhase) IsWaiting() bool {
	switch p {
	case PhaseWaitingForGate, PhaseWaitingForOwner, PhaseWaitingForApplicationSync, PhaseWaitingForRollout:
		return true
	}
	return false
}

// RequestCycle is one finished cycle of a KickRequest.
type RequestCycle struct {
	// RestartedAt is when KICK restarted the workload in that cycle; unset
	// when the cycle ended without a restart.
	// +optional
	RestartedAt *metav1.MicroTime `json:"restartedAt,omitempty"`
	// CompletedAt is when the cycle finished.
	CompletedAt metav1.Time `json:"completedAt"`
	// Phase is the terminal phase the cycle reached.
	Phase KickRequestPhase `json:"phase"`
	// Reason is the cycle's outcome (the Completed condition's reason).
	// +optional
	Reason string `json:"reason,omitempty"`
}

// MaxRequestHistory is how many earlier cycles a request keeps.
const MaxRequestHistory = 10

// ArchiveCycle moves the finished cycle the status shows into History
// (newest first, at most MaxRequestHistory), before a reopen clears it. A
// status that has not finished a cycle is left alone.
func (s *KickRequestStatus) ArchiveCycle() {
	if !s.Phase.IsTerminal() || s.CompletionTime == nil {
		return
	}
	c := RequestCycle{CompletedAt: *s.CompletionTime, Phase: s.Phase, Reason: s.PhaseReason()}
	if s.CurrentRollout != nil && s.LastRestartTime != nil {
		// A reopen clears the rollout marker: a cycle that ends with one
		// started a rollout itself.
		at := *s.LastRestartTime
		c.RestartedAt = &at
	}
	s.History = append([]RequestCycle{c}, s.History[:min(len(s.History), MaxRequestHistory-1)]...)
}
