package router

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"time"
)

// EventKind names an event type. It is the value of the "event" metric label.
type EventKind string

// The event kinds. The set is closed: Event can only be implemented in this package.
const (
	KindSourceChanged EventKind = "SourceChanged"
	KindPhaseChanged  EventKind = "PhaseChanged"
	KindGateChanged   EventKind = "GateChanged"
)

var allKinds = [...]EventKind{KindSourceChanged, KindPhaseChanged, KindGateChanged}

// Event is one of SourceChanged, PhaseChanged or GateChanged (consumers type-switch on the value).
// Events are shared between subscribers: nobody may modify an event, or its slices and maps, after
// publishing it.
type Event interface {
	Kind() EventKind
	// Key identifies the object the event is about, for ordering, coalescing and debugging.
	Key() string
	isEvent()
}

// ObjectRef identifies a Kubernetes object without importing Kubernetes types.
type ObjectRef struct {
	APIVersion string // "v1", "apps/v1", "argoproj.io/v1alpha1"
	Kind       string
	Namespace  string // empty for cluster-scoped objects
	Name       string
}

// String renders the ref like kubectl does, with the group: "Deployment.apps shop/web", "Secret shop/db".
func (r ObjectRef) String() string {
	s := r.Kind
	if i := strings.LastIndexByte(r.APIVersion, '/'); i > 0 {
		s += "." + r.APIVersion[:i]
	}
	if r.Namespace != "" {
		return s + " " + r.Namespace + "/" + r.Name
	}
	return s + " " + r.Name
}

// IsZero reports whether r names no object.
func (r ObjectRef) IsZero() bool { return r == ObjectRef{} }

// RequestRef identifies a KickRequest.
type RequestRef struct {
	Namespace string
	Name      string
	UID       string
}

// String is "namespace/name".
func (r RequestRef) String() string { return r.Namespace + "/" + r.Name }

// SourceClass is the classification of an observed source change that enqueues work.
type SourceClass string

const (
	// ClassBaseline: first observation of a source; its change time is its last recorded write.
	ClassBaseline SourceClass = "Baseline"
	// ClassRelevant: the source's content fingerprint changed.
	ClassRelevant SourceClass = "Relevant"
)

// SourceChanged says a Secret or ConfigMap (or CSI-synced secret) that workloads consume changed.
type SourceChanged struct {
	Source ObjectRef
	Class  SourceClass
	// ChangeTime keeps full nanosecond precision; freshness comparisons depend on it.
	ChangeTime time.Time
	// Consumers are the workloads that consume Source.
	Consumers []ObjectRef
	// KeysUnread are those of Consumers that read only keys of Source this
	// change left as they were: the change counts for them only where their
	// policy counts every key (restart.keys All).
	KeysUnread []ObjectRef
}

func (SourceChanged) Kind() EventKind { return KindSourceChanged }
func (e SourceChanged) Key() string   { return e.Source.String() }
func (SourceChanged) isEvent()        {}

// PhaseChanged says a KickRequest moved from one phase to another.
type PhaseChanged struct {
	Request      RequestRef
	From, To     string // phases; From is empty for a new request
	GateReason   string
	GateMessage  string
	Reason       string // free text given by the requester
	Owner        string // resolved GitOps owner, may be empty
	Provider     string
	Target       ObjectRef
	TargetLabels map[string]string // the target workload's labels, for notification selectors
	Policy       string            // KickPolicy name
	Time         time.Time         // transition time
	// Outcome and OutcomeMessage say why a request finished (terminal
	// phases only), e.g. RestartCompleted, UpToDate, RolloutTimeout.
	Outcome        string
	OutcomeMessage string
	// RestartedAt is when KICK restarted the target in this cycle, on a
	// Succeeded transition; a quick restart goes from Pending to Succeeded
	// without an Executing transition, and this keeps its restart visible.
	RestartedAt time.Time
	// Traceparent is the W3C traceparent of the request's restart cycle;
	// empty when it has none.
	Traceparent string
}

func (PhaseChanged) Kind() EventKind { return KindPhaseChanged }
func (e PhaseChanged) Key() string   { return e.Request.String() }
func (PhaseChanged) isEvent()        {}

// TransitionID is this transition's stable id: see TransitionID.
func (e PhaseChanged) TransitionID() string { return TransitionID(e.Request.UID, e.To, e.Time) }

// TransitionID derives a deterministic id (32 hex characters) from a request UID, the phase it
// entered and the transition time, so every retry of a notification about one transition carries the
// same id. The time is used at full precision and independently of its location: pass the value
// that is persisted in status so an id recomputed after a restart matches.
func TransitionID(requestUID, toPhase string, at time.Time) string {
	h := sha256.New()
	h.Write([]byte(requestUID))
	h.Write([]byte{0})
	h.Write([]byte(toPhase))
	h.Write([]byte{0})
	h.Write(strconv.AppendInt(nil, at.Unix(), 10))
	h.Write([]byte{'.'})
	h.Write(strconv.AppendInt(nil, int64(at.Nanosecond()), 10))
	var sum [sha256.Size]byte
	return hex.EncodeToString(h.Sum(sum[:0])[:16])
}

// GateChanged says the gate decision of an open KickRequest changed: which gate held the
// restart back (or that none does any more), why, the object whose state produced the decision,
// and when it may change by itself. The KickRequest reconciler publishes it; the same decision is
// persisted in the request's status.gate.
type GateChanged struct {
	Request      RequestRef
	Target       ObjectRef
	TargetLabels map[string]string // the target workload's labels, for notification selectors
	Policy       string            // KickPolicy name
	Provider     string            // GitOps provider that decided ("argocd", "flux", "kargo"), "" for native gates
	Owner        string            // resolved GitOps owner, e.g. "Application argocd/shop-api"; may be empty
	Stage        string            // the gate that decided: "Suspend", "Schedule", "MinInterval", "GitOps"; "" when allowed
	Allowed      bool              // the restart may run now
	Reason       string            // gate reason: Allowed, OutsideSchedule, OwnerOutOfSync, MinIntervalNotElapsed, ...
	Message      string
	// Cause is the object whose state produced the decision (an Application, AppProject,
	// Kustomization, ...); zero when there is none.
	Cause ObjectRef
	// OpensAt is when the decision may change without any object changing (a window end);
	// zero when unknown.
	OpensAt time.Time
	// Time is when the decision was made: the reconciler's clock when it
	// announces a fresh decision, status.gate.lastEvaluated (whole seconds)
	// when a restarted manager replays it. The id uses only its second.
	Time time.Time
	// Traceparent is the W3C traceparent of the request's restart cycle;
	// empty when it has none.
	Traceparent string
}

func (GateChanged) Kind() EventKind { return KindGateChanged }
func (e GateChanged) Key() string   { return e.Request.String() }
func (GateChanged) isEvent()        {}

// DecisionID is this decision's stable id (32 hex characters): TransitionID of the request UID,
// "gate/" plus the reason, and the decision time cut to the second, as status.gate.lastEvaluated
// stores it. A retry, or a manager that restarted and read the time back from status, computes
// the same id; it never equals the id of a phase transition, since phase names contain no slash.
func (e GateChanged) DecisionID() string {
	return TransitionID(e.Request.UID, "gate/"+e.Reason, e.Time.Truncate(time.Second))
}
