package format

import (
	"strings"
	"time"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/router"
)

// Machine reasons of the "reason" payload field. The set is closed: a receiver can switch on it.
//
// Per phase:
//
//	Pending                    Requested
//	Executing                  RestartStarted
//	WaitingForRollout          RolloutInProgress
//	WaitingForGate, WaitingForOwner, WaitingForApplicationSync:
//	                           the gate reason holding the restart back, one of
//	                           kickv1alpha1.WaitingReasons(): Suspended, Held, Settling,
//	                           OutsideSchedule, ConfigurationError, MinIntervalNotElapsed,
//	                           RolloutHalted, EarlierWave, AmbiguousPolicy, OwnerUnknown, AmbiguousOwner,
//	                           OwnerOutOfSync, OwnerReconciling, OwnerSuspended,
//	                           PromotionRunning, ProjectUnknown, ProviderUnavailable,
//	                           RestartBudget; Waiting if it is not known
//	Succeeded                  RestartCompleted
//	NoLongerRequired           UpToDate (the running rollout already has every change), or
//	                           Coalesced (another open request for the workload took the change)
//	DryRun                     DryRun
//	Failed                     RolloutTimeout, ProgressDeadlineExceeded, TargetNotFound,
//	                           UnsupportedTarget, NotSelected,
//	                           or RestartFailed when the cause is not known
//
// A phase outside this table (none today) gives Unknown.
//
// A gate change (spec.gateChanges) gives Allowed when the restart may run, otherwise the gate
// reason holding it back (the waiting reasons above, or NotSelected), Waiting if it is not known.
const (
	ReasonRequested         = "Requested"
	ReasonRestartStarted    = "RestartStarted"
	ReasonRolloutInProgress = "RolloutInProgress"
	ReasonWaiting           = "Waiting"
	ReasonRestartCompleted  = "RestartCompleted"
	ReasonUpToDate          = "UpToDate"
	ReasonCoalesced         = "Coalesced"
	ReasonDryRun            = "DryRun"
	ReasonRolloutTimeout    = "RolloutTimeout"
	// ReasonProgressDeadlineExceeded: the restart's rollout stopped making
	// progress; the rest of its fan-out is halted.
	ReasonProgressDeadlineExceeded = kickv1alpha1.ReasonProgressDeadlineExceeded
	ReasonTargetNotFound           = "TargetNotFound"
	ReasonUnsupportedTarget        = "UnsupportedTarget"
	ReasonNotSelected              = "NotSelected"
	ReasonRestartFailed            = "RestartFailed"
	ReasonUnknown                  = "Unknown"
)

// gateReasons are the gate reasons that hold a restart back in a waiting phase and are passed
// through as the payload reason: every one the API defines.
var gateReasons = func() map[string]bool {
	m := map[string]bool{}
	for _, r := range kickv1alpha1.WaitingReasons() {
		m[string(r)] = true
	}
	return m
}()

// Reasons lists every value the "reason" payload field can take, for documentation and tests.
func Reasons() []string {
	out := []string{ReasonRequested, ReasonRestartStarted, ReasonRolloutInProgress}
	for _, r := range kickv1alpha1.WaitingReasons() {
		out = append(out, string(r))
	}
	return append(out, ReasonWaiting,
		ReasonRestartCompleted, ReasonUpToDate, ReasonCoalesced, ReasonDryRun,
		ReasonRolloutTimeout, ReasonProgressDeadlineExceeded, ReasonTargetNotFound, ReasonUnsupportedTarget, ReasonNotSelected,
		ReasonRestartFailed, ReasonUnknown, ReasonAllowed,
	)
}

// outcomeOf returns why a terminal phase was reached (the reason and message of the request's
// Completed condition). router.PhaseChanged does not carry them yet, and its GateReason cannot
// stand in: on a terminal transition it is whatever the last gate evaluation left, possibly
// from an earlier cycle. Until the event has the fields, Failed reports RestartFailed and
// NoLongerRequired reports UpToDate.
func outcomeOf(ev router.PhaseChanged) (reason, message string) { return ev.Outcome, ev.OutcomeMessage }

// description is what a formatter says about one transition.
type description struct {
	Reason   string // machine reason, one of Reasons()
	Sentence string // what happened, for people; no trailing period
	Detail   string // more context from KICK (the gate or failure message); may be empty
}

// Text joins Sentence and Detail into one human sentence.
func (d description) Text() string {
	if d.Detail == "" {
		return d.Sentence + "."
	}
	return d.Sentence + ": " + strings.TrimRight(d.Detail, ". ") + "."
}

// describe maps a transition to its machine reason and a human description. outcome and
// outcomeMessage are the Completed condition's reason and message of a terminal phase, when
// known.
func describe(ev router.PhaseChanged, outcome, outcomeMessage string) description {
	target := ev.Target.Kind + " " + ev.Request.Namespace + "/" + ev.Target.Name
	switch kickv1alpha1.KickRequestPhase(ev.To) {
	case kickv1alpha1.PhasePending:
		return description{Reason: ReasonRequested, Sentence: "A restart of " + target + " was requested"}
	case kickv1alpha1.PhaseExecuting:
		return description{Reason: ReasonRestartStarted, Sentence: target + " is being restarted"}
	case kickv1alpha1.PhaseWaitingForRollout:
		return description{Reason: ReasonRolloutInProgress,
			Sentence: target + " is still rolling out; KICK decides whether to restart it once the rollout completes"}
	case kickv1alpha1.PhaseWaitingForGate, kickv1alpha1.PhaseWaitingForOwner, kickv1alpha1.PhaseWaitingForApplicationSync:
		reason := ev.GateReason
		if !gateReasons[reason] {
			reason = ReasonWaiting
		}
		return description{Reason: reason, Sentence: "The restart of " + target + " is waiting", Detail: ev.GateMessage}
	case kickv1alpha1.PhaseSucceeded:
		return description{Reason: ReasonRestartCompleted, Sentence: target + " was restarted and its rollout completed"}
	case kickv1alpha1.PhaseNoLongerRequired:
		if outcome == ReasonCoalesced {
			return description{Reason: ReasonCoalesced,
				Sentence: "Another open KickRequest already handles " + target + ", so this one was closed"}
		}
		return description{Reason: ReasonUpToDate, Sentence: target + " already runs with every change; no restart was needed"}
	case kickv1alpha1.PhaseDryRun:
		return description{Reason: ReasonDryRun, Sentence: "Dry run: KICK would have restarted " + target}
	case kickv1alpha1.PhaseFailed:
		d := description{Reason: ReasonRestartFailed, Sentence: "The restart of " + target + " failed", Detail: outcomeMessage}
		switch outcome {
		case ReasonRolloutTimeout:
			d.Reason, d.Sentence = outcome, "The rollout of "+target+" did not complete in time"
		case ReasonProgressDeadlineExceeded:
			d.Reason, d.Sentence = outcome, "The rollout of "+target+" stopped making progress"
		case ReasonTargetNotFound:
			d.Reason, d.Sentence = outcome, target+" was not found"
		case ReasonUnsupportedTarget:
			d.Reason, d.Sentence = outcome, target+" is not a kind KICK can restart"
		case ReasonNotSelected:
			d.Reason, d.Sentence = outcome, "No KickPolicy selects "+target+", so it was not restarted"
		}
		return d
	}
	return description{Reason: ReasonUnknown, Sentence: "The KickRequest for " + target + " entered phase " + ev.To}
}

// Payload is KICK's JSON document: exactly the field set of the NotificationPolicy reference. It
// is also the CloudEvents data and the PagerDuty custom_details. It never carries Secret or
// ConfigMap data, key names or fingerprints.
type Payload struct {
	Namespace      string `json:"namespace"`
	RequestName    string `json:"requestName"`
	Phase          string `json:"phase"`
	Reason         string `json:"reason"`  // one of Reasons()
	Message        string `json:"message"` // a sentence for people, with the requester's reason if any
	TargetKind     string `json:"targetKind"`
	TargetName     string `json:"targetName"`
	GitOpsProvider string `json:"gitOpsProvider"` // lower case: argocd, flux, kargo or none
	OccurredAt     string `json:"occurredAt"`     // RFC 3339, UTC, whole seconds
}

// NewPayload builds the JSON document for ev.
func NewPayload(ev router.PhaseChanged) Payload {
	outcome, outcomeMessage := outcomeOf(ev)
	return payloadOf(ev, describe(ev, outcome, outcomeMessage))
}

func payloadOf(ev router.PhaseChanged, d description) Payload {
	msg := d.Text()
	if ev.Reason != "" {
		msg += " Requested because: " + ev.Reason
	}
	return Payload{
		Namespace:      ev.Request.Namespace,
		RequestName:    ev.Request.Name,
		Phase:          ev.To,
		Reason:         d.Reason,
		Message:        msg,
		TargetKind:     ev.Target.Kind,
		TargetName:     ev.Target.Name,
		GitOpsProvider: providerName(ev.Provider),
		OccurredAt:     ev.Time.UTC().Format(time.RFC3339),
	}
}

// providerName is the lower-case provider, "none" when no provider gates the request.
func providerName(p string) string {
	if p == "" {
		return "none"
	}
	return strings.ToLower(p)
}
