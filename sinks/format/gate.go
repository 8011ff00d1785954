package format

import (
	"strings"
	"time"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/router"
)

// ReasonAllowed is the reason of a gate change that lets the restart run.
const ReasonAllowed = string(kickv1alpha1.GateAllowed)

// GateEventName is the value of the "event" field of every GatePayload.
const GateEventName = "GateChanged"

// GatePayload is KICK's JSON document about a gate decision, sent to policies with
// spec.gateChanges. It shares the request, workload, provider and time fields with Payload, has
// no phase, and says which gate decided, why and until when. Every key is always present;
// cause and opensAt are null when unknown. Like Payload it never carries Secret or ConfigMap
// data, key names or fingerprints.
type GatePayload struct {
	Event          string `json:"event"` // GateEventName: tells gate documents from phase documents
	Namespace      string `json:"namespace"`
	RequestName    string `json:"requestName"`
	Allowed        bool   `json:"allowed"`
	Stage          string `json:"stage"`   // the stage that decided (Suspend, Hold, Settle, Schedule, ...); "" when allowed
	Reason         string `json:"reason"`  // Allowed, a gate reason of Reasons(), or Waiting
	Message        string `json:"message"` // a sentence for people
	TargetKind     string `json:"targetKind"`
	TargetName     string `json:"targetName"`
	KickPolicy     string `json:"kickPolicy"`
	GitOpsProvider string `json:"gitOpsProvider"` // lower case: argocd, flux, kargo or none
	Owner          string `json:"owner"`          // the resolved GitOps owner, "" when none
	// Cause is the object whose state produced the decision: the GitOps owner or its project,
	// the KickHold of the Hold stage, the failed workload of the Halt stage.
	Cause      *ObjectPayload `json:"cause"`
	OpensAt    *string        `json:"opensAt"`    // RFC 3339, UTC: when the decision may change by itself
	OccurredAt string         `json:"occurredAt"` // RFC 3339, UTC, whole seconds
}

// ObjectPayload names a Kubernetes object in a GatePayload.
type ObjectPayload struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
}

// NewGatePayload builds the JSON document for a gate change.
func NewGatePayload(ev router.GateChanged) GatePayload {
	p := GatePayload{
		Event:          GateEventName,
		Namespace:      ev.Request.Namespace,
		RequestName:    ev.Request.Name,
		Allowed:        ev.Allowed,
		Stage:          ev.Stage,
		Reason:         gateReason(ev),
		Message:        describeGate(ev).Text(),
		TargetKind:     ev.Target.Kind,
		TargetName:     ev.Target.Name,
		KickPolicy:     ev.Policy,
		GitOpsProvider: providerName(ev.Provider),
		Owner:          ev.Owner,
		OccurredAt:     ev.Time.UTC().Format(time.RFC3339),
	}
	if ev.Allowed {
		p.Stage = ""
	}
	if c := ev.Cause; !c.IsZero() {
		p.Cause = &ObjectPayload{APIVersion: c.APIVersion, Kind: c.Kind, Namespace: c.Namespace, Name: c.Name}
	}
	if !ev.OpensAt.IsZero() {
		at := ev.OpensAt.UTC().Format(time.RFC3339)
		p.OpensAt = &at
	}
	return p
}

// gateReason is the payload reason of a gate change: Allowed when the restart may run,
// otherwise the gate reason when it is one of Reasons(), else Waiting.
func gateReason(ev router.GateChanged) string {
	switch {
	case ev.Allowed:
		return ReasonAllowed
	case gateReasons[ev.Reason] || ev.Reason == ReasonNotSelected:
		return ev.Reason
	}
	return ReasonWaiting
}

// describeGate says in words what a gate change means: "The restart of Deployment shop/web
// waits for the Argo CD sync window until 02:00 UTC", or "... may run now", with the gate's
// own message as the detail.
func describeGate(ev router.GateChanged) description {
	target := ev.Target.Kind + " " + ev.Request.Namespace + "/" + ev.Target.Name
	d := description{Reason: gateReason(ev), Detail: ev.Message}
	if ev.Allowed {
		d.Sentence = "The restart of " + target + " may run now"
		return d
	}
	d.Sentence = "The restart of " + target + " waits for " + waitsFor(ev)
	if !ev.OpensAt.IsZero() {
		d.Sentence += " until " + clock(ev.OpensAt, ev.Time)
	}
	return d
}

// waitsFor names what a blocked restart waits for, for people.
func waitsFor(ev router.GateChanged) string {
	owner := ev.Owner
	if owner == "" {
		owner = "its GitOps owner"
	}
	policy := "its KickPolicy"
	if ev.Policy != "" {
		policy = "KickPolicy " + ev.Policy
	}
	switch kickv1alpha1.GateReason(ev.Reason) {
	case kickv1alpha1.GateOutsideSchedule:
		if ev.Stage == "GitOps" || (ev.Stage == "" && ev.Provider != "") {
			return "the " + providerTitle(ev.Provider) + " sync window"
		}
		return "the restart window of " + policy
	case kickv1alpha1.GateMinIntervalNotElapsed:
		return "the minimum interval since its last restart"
	case kickv1alpha1.GateSuspended:
		return policy + " to be resumed"
	case kickv1alpha1.GateNotSelected:
		return "a KickPolicy that selects it"
	case kickv1alpha1.GateAmbiguousPolicy:
		return "a single KickPolicy to select it"
	case kickv1alpha1.GateConfigurationError:
		return "a configuration error to be fixed"
	case kickv1alpha1.GateOwnerUnknown:
		return "its GitOps owner to be found"
	case kickv1alpha1.GateAmbiguousOwner:
		return "a single GitOps owner to be found"
	case kickv1alpha1.GateOwnerOutOfSync:
		return owner + " to be in sync"
	case kickv1alpha1.GateOwnerReconciling:
		return owner + " to finish reconciling"
	case kickv1alpha1.GateOwnerSuspended:
		return owner + " to be resumed"
	case kickv1alpha1.GatePromotionRunning:
		return "the running Kargo promotion to finish"
	case kickv1alpha1.GateProjectUnknown:
		return "the Argo CD project of " + owner + " to be readable"
	case kickv1alpha1.GateProviderUnavailable:
		return "the " + providerTitle(ev.Provider) + " integration to be available"
	case kickv1alpha1.GateSettling:
		return "its sources to settle (restart.settle of " + policy + ")"
	case kickv1alpha1.GateHeld:
		if c := ev.Cause; c.Kind == "KickHold" {
			return "KickHold " + c.Namespace + "/" + c.Name + " to be released"
		}
		return "a KickHold to be released"
	case kickv1alpha1.GateRolloutHalted:
		if c := ev.Cause; !c.IsZero() {
			return "the halt after " + c.Kind + " " + c.Namespace + "/" + c.Name + " failed its rollout to end"
		}
		return "a halted fan-out to end"
	case kickv1alpha1.GateEarlierWave:
		return "an earlier wave of " + policy + " to roll out"
	case kickv1alpha1.GateRestartBudget:
		return "a free slot of the restart budget"
	}
	return "its gates to allow it"
}

// providerTitle is how people write a GitOps provider's name.
func providerTitle(p string) string {
	switch strings.ToLower(p) {
	case "argocd":
		return "Argo CD"
	case "flux":
		return "Flux"
	case "kargo":
		return "Kargo"
	case "", "none":
		return "GitOps"
	}
	return p
}

// clock renders at in UTC to the minute, without the date when it is less than a day after
// the decision.
func clock(at, decided time.Time) string {
	if d := at.Sub(decided); !decided.IsZero() && d >= 0 && d < 24*time.Hour {
		return at.UTC().Format("15:04 UTC")
	}
	return at.UTC().Format("2006-01-02 15:04 UTC")
}
