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

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPhaseIsTerminal(t *testing.T) {
	terminal := map[KickRequestPhase]bool{
		PhaseSucceeded: true, PhaseNoLongerRequired: true, PhaseFailed: true, PhaseDryRun: true,
	}
	for _, p := range AllPhases() {
		if got := p.IsTerminal(); got != terminal[p] {
			t.Errorf("%s.IsTerminal() = %v, want %v", p, got, terminal[p])
		}
	}
	if KickRequestPhase("").IsTerminal() {
		t.Error("the empty phase is not terminal")
	}
	for _, p := range TerminalPhases() {
		if !p.IsTerminal() {
			t.Errorf("TerminalPhases lists %s", p)
		}
	}
	if len(TerminalPhases()) != len(terminal) {
		t.Errorf("TerminalPhases has %d entries, want %d", len(TerminalPhases()), len(terminal))
	}
}

func TestPhaseIsWaiting(t *testing.T) {
	for _, p := range AllPhases() {
		want := p == PhaseWaitingForGate || p == PhaseWaitingForOwner ||
			p == PhaseWaitingForApplicationSync || p == PhaseWaitingForRollout
		if got := p.IsWaiting(); got != want {
			t.Errorf("%s.IsWaiting() = %v, want %v", p, got, want)
		}
	}
}

func TestGateReasonWaitingPhase(t *testing.T) {
	for r, want := range map[GateReason]KickRequestPhase{
		GateAllowed:               "",
		GateOutsideSchedule:       PhaseWaitingForGate,
		GateMinIntervalNotElapsed: PhaseWaitingForGate,
		GateSuspended:             PhaseWaitingForGate,
		GateNotSelected:           PhaseWaitingForGate,
		GateAmbiguousPolicy:       PhaseWaitingForGate,
		GateConfigurationError:    PhaseWaitingForGate,
		GateProjectUnknown:        PhaseWaitingForGate,
		GateProviderUnavailable:   PhaseWaitingForGate,
		GatePromotionRunning:      PhaseWaitingForGate,
		GateOwnerUnknown:          PhaseWaitingForOwner,
		GateAmbiguousOwner:        PhaseWaitingForOwner,
		GateOwnerOutOfSync:        PhaseWaitingForApplicationSync,
		GateOwnerReconciling:      PhaseWaitingForApplicationSync,
		GateOwnerSuspended:        PhaseWaitingForApplicationSync,
	} {
		if got := r.WaitingPhase(); got != want {
			t.Errorf("%s.WaitingPhase() = %q, want %q", r, got, want)
		}
		if r.Blocks() != (r != GateAllowed) {
			t.Errorf("%s.Blocks() = %v", r, r.Blocks())
		}
	}
}

// The REASON column never contradicts the phase: a finished request shows
// its outcome, not the gate that held it back before.
func TestPhaseReason(t *testing.T) {
	gate := &GateStatus{Reason: GateMinIntervalNotElapsed}
	completed := []metav1.Condition{{Type: ConditionCompleted, Status: metav1.ConditionTrue, Reason: ReasonRestartCompleted}}
	rolling := []metav1.Condition{{Type: ConditionRolloutComplete, Status: metav1.ConditionFalse, Reason: "RolloutInProgress"}}
	for _, tc := range []struct {
		status KickRequestStatus
		want   string
	}{
		{KickRequestStatus{Phase: PhaseSucceeded, Gate: gate, Conditions: completed}, ReasonRestartCompleted},
		{KickRequestStatus{Phase: PhaseWaitingForGate, Gate: gate, Conditions: completed}, string(GateMinIntervalNotElapsed)},
		{KickRequestStatus{Phase: PhaseExecuting, Gate: gate, Conditions: rolling}, "RolloutInProgress"},
		{KickRequestStatus{Phase: PhasePending, Gate: gate}, ""},
	} {
		if got := tc.status.PhaseReason(); got != tc.want {
			t.Errorf("phase %s: reason %q, want %q", tc.status.Phase, got, tc.want)
		}
	}
}

// A reopen keeps the finished cycle: with its restart when the cycle made
// one (its rollout marker is still set), without it otherwise; newest
// first, at most MaxRequestHistory; an open request keeps nothing.
func TestArchiveCycle(t *testing.T) {
	restart := metav1.NewMicroTime(time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC))
	done := metav1.NewTime(restart.Add(4 * time.Second))
	s := KickRequestStatus{Phase: PhaseSucceeded, LastRestartTime: &restart, CompletionTime: &done,
		CurrentRollout: &RolloutMarker{}, Reason: "RestartCompleted"}
	s.ArchiveCycle()
	if len(s.History) != 1 || s.History[0].RestartedAt == nil || !s.History[0].RestartedAt.Equal(&restart) ||
		s.History[0].Phase != PhaseSucceeded || !s.History[0].CompletedAt.Equal(&done) {
		t.Fatalf("history after a restarted cycle = %+v", s.History)
	}
	later := metav1.NewTime(done.Add(time.Minute))
	s.Phase, s.CurrentRollout, s.CompletionTime = PhaseNoLongerRequired, nil, &later
	s.ArchiveCycle()
	if len(s.History) != 2 || s.History[0].RestartedAt != nil || s.History[0].Phase != PhaseNoLongerRequired {
		t.Fatalf("a cycle without a restart = %+v, want it first and without restartedAt", s.History)
	}
	for range 2 * MaxRequestHistory {
		s.ArchiveCycle()
	}
	if len(s.History) != MaxRequestHistory {
		t.Fatalf("%d cycles kept, want %d", len(s.History), MaxRequestHistory)
	}
	open := KickRequestStatus{Phase: PhaseExecuting, CompletionTime: &done}
	open.ArchiveCycle()
	if len(open.History) != 0 {
		t.Fatalf("an open request archived %+v", open.History)
	}
}
