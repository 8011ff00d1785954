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

// GateChanged says a GitOps object changed in a way that may open a gate for waiting requests.
type GateChanged struct {
	Provider string // "argocd", "flux", "kargo"
	Object   ObjectRef
	Time     time.Time
	// Requests are the waiting KickRequests concerned, when the publisher knows them (namespace/name
	// in Namespace/Name, Kind "KickRequest"); empty means "any request gated by Object".
	Requests []ObjectRef
}

func (GateChanged) Kind() EventKind { return KindGateChanged }
func (e GateChanged) Key() string   { return e.Provider + ":" + e.Object.String() }
func (GateChanged) isEvent()        {}
