package assess

import (
	"fmt"
	"time"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/freshness"
	"github.com/kick-operator/kick/restart/policy"
)

// Assessment is the answer for one workload at one moment.
type Assessment struct {
	Target    Target
	Selection Selection
	// Dependencies report each dependency's scope and record.
	Dependencies []DependencyResult
	// Latest is Λ: the newest relevant change of the in-scope dependencies,
	// the request's change annotation and the handed change, bound by bound.
	Latest freshness.Change
	// LatestFrom names where Latest comes from ("Secret/db",
	// "kickrequest/x", "event"); empty when Latest is zero.
	LatestFrom string
	// Rollout is σ and completeness, as given.
	Rollout freshness.Rollout
	Verdict Verdict
	// VerdictMessage explains the verdict in one line.
	VerdictMessage string
	// Bounded is set when the request's change annotation lay after the
	// manager's clock (beyond freshness.MaxClockSkew) and was counted as
	// Facts.Now instead; it holds the value that was not believed.
	Bounded string
	// Carried is set when the pods that run, or are starting, provably
	// carry Λ: the rollout is fresh, or it is still in progress but every
	// pod of its template was created after Λ.
	Carried bool
	Gate    Gate
	// Summary is the one-line answer for people.
	Summary string
}

// Verdict is the freshness answer.
type Verdict string

const (
	// Fresh: the complete rollout started at or after Λ; nothing to do.
	Fresh Verdict = "Fresh"
	// Stale: Λ is newer than the complete rollout; restart.
	Stale Verdict = "Stale"
	// InProgress: the rollout is not complete; decide once it is.
	InProgress Verdict = "InProgress"
	// CannotAssess: a fact is missing (no single policy, an unreadable
	// record or rollout); VerdictMessage says which.
	CannotAssess Verdict = "CannotAssess"
)

// SelectionState says how the policies of the namespace select the workload.
type SelectionState string

const (
	Selected    SelectionState = "Selected"
	NotSelected SelectionState = "NotSelected"
	Ambiguous   SelectionState = "Ambiguous"
)

// Selection is the policy governing the workload.
type Selection struct {
	State SelectionState
	// Policy is the selecting policy (Selected only), pointing into
	// Facts.Policies.
	Policy *kickv1alpha1.KickPolicy
	// Candidates are the policies selecting the workload, sorted (Ambiguous).
	Candidates []string
	// Reason is GateNotSelected or GateAmbiguousPolicy when no single
	// policy selects the workload; Message explains it.
	Reason  kickv1alpha1.GateReason
	Message string
}

// Dependency scopes.
const (
	ScopeIn         = "InScope"
	ScopeOut        = "OutOfScope"
	ScopeUnknown    = "Unknown"
	ScopeNotCounted = "NotCounted"
)

// Record states.
const (
	RecordRelevant   = "Relevant"
	RecordBaseline   = "Baseline"
	RecordNone       = "None"
	RecordUnreadable = "Unreadable"
	RecordNotCounted = "NotCounted"
)

// DependencyResult is what the assessment made of one dependency.
type DependencyResult struct {
	Dependency
	Scope       string
	ScopeDetail string
	Record      string
	// Change is the recorded change (zero without a record): with KeyLevel,
	// the newest change of the keys the workload reads.
	Change freshness.Change
	// KeyLevel is set when Change counts only the keys the workload reads;
	// Whole is then the change of the object as a whole.
	KeyLevel bool
	Whole    freshness.Change
}

// Assess answers for the facts. It reads nothing and is deterministic.
func Assess(f Facts) Assessment {
	a := Assessment{Target: f.Target, Rollout: f.Rollout}
	a.Selection = selectPolicy(f)
	p := a.Selection.Policy

	var unknown string
	if len(f.Dependencies) > 0 {
		a.Dependencies = make([]DependencyResult, 0, len(f.Dependencies))
	}
	for _, d := range f.Dependencies {
		dr := describe(d, p, keyNamer(f, d))
		a.Dependencies = append(a.Dependencies, dr)
		switch {
		case p == nil:
		case dr.Scope == ScopeUnknown && dr.Record != RecordNone && unknown == "":
			unknown = fmt.Sprintf("cannot tell whether %s/%s is in the dependencySelector: %v", d.Kind, d.Name, d.SourceErr)
		case dr.Scope == ScopeIn && dr.Record == RecordUnreadable && unknown == "":
			unknown = fmt.Sprintf("cannot read the observation record of %s/%s: %v", d.Kind, d.Name, d.RecordErr)
		case dr.Scope == ScopeIn && Adds(dr.Change, a.Latest):
			a.Latest = a.Latest.Max(dr.Change)
			a.LatestFrom = d.Kind + "/" + d.Name
		}
	}
	c := AnnotatedChange(f.Request)
	if latest, bounded := freshness.NotAfter(c.Latest, f.Now); bounded {
		a.Bounded = f.Request.Annotations[kickv1alpha1.ChangeAnnotation]
		c = freshness.At(latest)
	}
	if Adds(c, a.Latest) {
		a.Latest = a.Latest.Max(c)
		a.LatestFrom = "kickrequest/" + f.Request.Name + " (" + kickv1alpha1.ChangeAnnotation + ")"
	}
	if Adds(f.Handed, a.Latest) {
		a.Latest = a.Latest.Max(f.Handed)
		a.LatestFrom = "change event"
	}
	if p != nil && p.Spec.CountsEveryKey() && Adds(f.HandedUnread, a.Latest) {
		a.Latest = a.Latest.Max(f.HandedUnread)
		a.LatestFrom = "change event"
	}
	if f.RolloutErr != nil && unknown == "" {
		unknown = "cannot inspect the rollout: " + f.RolloutErr.Error()
	}

	switch {
	case a.Selection.State != Selected:
		a.Verdict, a.VerdictMessage = CannotAssess, a.Selection.Message
	case unknown != "":
		a.Verdict, a.VerdictMessage = CannotAssess, unknown
	default:
		a.Verdict = Verdict(freshness.Decide(a.Latest, f.Rollout))
		a.VerdictMessage = freshness.Explain(a.Latest, f.Rollout)
		a.Carried = a.Verdict == Fresh ||
			a.Verdict == InProgress && !f.Rollout.Since.IsZero() && !freshness.Newer(a.Latest, f.Rollout.Since)
	}
	if p != nil {
		a.Gate = evaluateGate(f, p, a.Latest, a.Dependencies)
	}
	a.Summary = summarize(&a)
	return a
}

// Select is the policy selection Assess(f) makes, without the rest of the
// assessment: callers ask the GitOps gate about the selected policy first.
func Select(f Facts) Selection { return selectPolicy(f) }

// selectPolicy finds the one policy whose workloadSelector matches.
func selectPolicy(f Facts) Selection {
	w := policy.Workload{Kind: f.Target.Kind, Namespace: f.Target.Namespace, Name: f.Target.Name, Labels: f.Target.Labels}
	sel := policy.SelectWorkload(f.Policies, w)
	switch {
	case sel.Policy != nil:
		return Selection{State: Selected, Policy: sel.Policy}
	case sel.Reason == kickv1alpha1.GateAmbiguousPolicy:
		return Selection{State: Ambiguous, Candidates: sel.Candidates, Reason: sel.Reason, Message: sel.Message}
	}
	return Selection{State: NotSelected, Reason: sel.Reason, Message: sel.Message}
}

// describe decides a dependency's scope under p and reads its record.
func describe(d Dependency, p *kickv1alpha1.KickPolicy, keyName func(string) string) DependencyResult {
	dr := DependencyResult{Dependency: d}
	if !d.Counted {
		dr.Scope, dr.Record = ScopeNotCounted, RecordNotCounted
		dr.ScopeDetail = "KICK's freshness check does not read this kind"
		return dr
	}
	hasSelector := p != nil && p.Spec.Discovery != nil && p.Spec.Discovery.DependencySelector != nil
	switch {
	case p == nil:
		dr.Scope, dr.ScopeDetail = ScopeUnknown, "no single KickPolicy selects the workload"
	case !hasSelector:
		dr.Scope = ScopeIn
	case d.Missing && d.Kind == string(kickv1alpha1.SourceSecretProviderClass):
		// A class is judged by the labels it has: none.
		dr.Scope = scopeOf(p, nil)
	case d.Missing:
		dr.Scope, dr.ScopeDetail = ScopeOut, "the source does not exist"
	case d.SourceErr != nil:
		dr.Scope, dr.ScopeDetail = ScopeUnknown, "cannot read the source's labels"
	default:
		dr.Scope = scopeOf(p, d.Labels)
	}
	if dr.Scope == ScopeOut && dr.ScopeDetail == "" {
		dr.ScopeDetail = "outside the policy's dependencySelector"
	}
	switch {
	case d.RecordErr != nil:
		dr.Record = RecordUnreadable
	case d.Record == nil:
		dr.Record = RecordNone
	default:
		dr.Change = RecordedChange(d.Record)
		if d.Reads != nil && (p == nil || !p.Spec.CountsEveryKey()) {
			if c, ok := KeyChange(d.Record, *d.Reads, keyName); ok {
				dr.Whole, dr.Change, dr.KeyLevel = dr.Change, c, true
			}
		}
		dr.Record = RecordRelevant
		if d.Record.Class == kickv1alpha1.ObservationBaseline {
			dr.Record = RecordBaseline
		}
	}
	return dr
}

// keyNamer names d's keys as its record does; nil when the facts cannot,
// or when d is not read key by key.
func keyNamer(f Facts, d Dependency) func(string) string {
	if f.KeyNames == nil || d.Reads == nil || d.Reads.All {
		return nil
	}
	names, ns := f.KeyNames, f.Target.Namespace
	return func(key string) string { return names(ns, d.Kind, d.Name, key) }
}

func scopeOf(p *kickv1alpha1.KickPolicy, labels map[string]string) string {
	if policy.DependencyInScope(p, labels) {
		return ScopeIn
	}
	return ScopeOut
}

// ReopenVerdict says whether a finished request must run again, and why.
type ReopenVerdict struct {
	Reopen  bool
	Reason  string
	Message string
}

// Reopen decides whether the finished request the assessment was made for
// (Facts.Request) must run again (model §10): its target is selected by a
// policy and the running pods do not provably carry Λ. A dry run reopens
// only for a change newer than the one it already reported.
func (a *Assessment) Reopen(kr *kickv1alpha1.KickRequest) ReopenVerdict {
	switch {
	case a.Selection.State != Selected:
		return ReopenVerdict{Reason: string(a.Selection.Reason), Message: a.Selection.Message}
	case a.Verdict == CannotAssess:
		return ReopenVerdict{Reason: string(CannotAssess), Message: a.VerdictMessage}
	}
	if kr != nil && kr.Status.Phase == kickv1alpha1.PhaseDryRun {
		reported := kr.Status.LatestObservedDependencyChange
		if reported != nil && !a.Latest.Latest.After(reported.Time) {
			return ReopenVerdict{Reason: kickv1alpha1.ReasonNoNewerChange, Message: "the dry run already reported the latest change"}
		}
	}
	if a.Carried {
		return ReopenVerdict{Reason: kickv1alpha1.ReasonAlreadyCarried, Message: "nothing to restart: " + a.VerdictMessage}
	}
	return ReopenVerdict{Reopen: true, Reason: kickv1alpha1.ReasonNewChange, Message: "a newer change reopened the request"}
}

// OnlyUnreadKeysChanged reports whether a dependency of this kind changed
// after the rollout started but not in any key the workload reads: what
// keeps a Fresh workload from restarting.
func (a *Assessment) OnlyUnreadKeysChanged(kind string) bool {
	for _, d := range a.Dependencies {
		if d.Kind == kind && d.KeyLevel && freshness.Newer(d.Whole, a.Rollout.Start) && !freshness.Newer(d.Change, a.Rollout.Start) {
			return true
		}
	}
	return false
}

// NewestSourceChange returns the in-scope Secret or ConfigMap with the
// newest recorded change not after by (zero: any): what a restart at by
// brought in last, and what it halts if it fails.
func (a *Assessment) NewestSourceChange(by time.Time) (DependencyResult, bool) {
	var newest DependencyResult
	found := false
	for _, d := range a.Dependencies {
		if d.Scope != ScopeIn || d.Change.IsZero() || !by.IsZero() && d.Change.Latest.After(by) ||
			d.Kind != string(kickv1alpha1.SourceSecret) && d.Kind != string(kickv1alpha1.SourceConfigMap) {
			continue
		}
		if !found || d.Change.Latest.After(newest.Change.Latest) {
			newest, found = d, true
		}
	}
	return newest, found
}
