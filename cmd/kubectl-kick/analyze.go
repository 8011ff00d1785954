package main

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/discovery"
	"github.com/kick-operator/kick/restart/freshness"
	"github.com/kick-operator/kick/restart/policy"
	"github.com/kick-operator/kick/restart/request"
	"github.com/kick-operator/kick/restart/schedule"
)

// explanation is the answer of "explain", printed for people or marshalled
// with -o json. It never holds Secret data, key names or fingerprints.
type explanation struct {
	Namespace      string             `json:"namespace"`
	Kind           string             `json:"kind"`
	Name           string             `json:"name"`
	EvaluatedAt    time.Time          `json:"evaluatedAt"`
	Policy         policyResult       `json:"policy"`
	Dependencies   []dependencyResult `json:"dependencies"`
	Rollout        rolloutResult      `json:"rollout"`
	LatestChange   *changeResult      `json:"latestChange,omitempty"`
	Verdict        string             `json:"verdict"`
	VerdictMessage string             `json:"verdictMessage"`
	Gate           *gateResult        `json:"gate,omitempty"`
	Request        *requestResult     `json:"request,omitempty"`
	RequestError   string             `json:"requestError,omitempty"`
	Summary        string             `json:"summary"`

	// For the reopen check of restart --wait.
	policy   *kickv1alpha1.KickPolicy
	recorded freshness.Change // Λ from the observation records alone
	rollout  freshness.Rollout
	unknown  string // why Λ or σ cannot be known; empty when they can
}

// Verdicts.
const (
	verdictFresh        = "Fresh"
	verdictStale        = "Stale"
	verdictInProgress   = "InProgress"
	verdictCannotAssess = "CannotAssess"
)

// Policy selections.
const (
	selectionSelected    = "Selected"
	selectionNotSelected = "NotSelected"
	selectionAmbiguous   = "Ambiguous"
)

type policyResult struct {
	Selection string `json:"selection"`
	// Name is the selecting policy (Selected only).
	Name string `json:"name,omitempty"`
	// Candidates are the policies that select the workload (Ambiguous).
	Candidates []string `json:"candidates,omitempty"`
}

// Dependency scopes.
const (
	scopeIn         = "InScope"
	scopeOut        = "OutOfScope"
	scopeUnknown    = "Unknown"
	scopeNotCounted = "NotCounted"
)

// Record states.
const (
	recordRelevant   = "Relevant"
	recordBaseline   = "Baseline"
	recordNone       = "None"
	recordUnreadable = "Unreadable"
	recordNotCounted = "NotCounted"
)

type dependencyResult struct {
	Kind   string   `json:"kind"`
	Name   string   `json:"name"`
	Fields []string `json:"fields,omitempty"`
	// Scope is InScope, OutOfScope, Unknown or NotCounted (a kind the
	// freshness check does not read).
	Scope         string `json:"scope"`
	ScopeDetail   string `json:"scopeDetail,omitempty"`
	SourceMissing bool   `json:"sourceMissing,omitempty"`
	SourceError   string `json:"sourceError,omitempty"`
	// Record is Relevant, Baseline, None, Unreadable or NotCounted.
	Record      string `json:"record"`
	RecordError string `json:"recordError,omitempty"`
	// LastRelevantChange is θ; for a baseline known only to the second,
	// the change lies between it and LastRelevantChangeBy.
	LastRelevantChange   *time.Time `json:"lastRelevantChange,omitempty"`
	LastRelevantChangeBy *time.Time `json:"lastRelevantChangeBy,omitempty"`
}

type rolloutResult struct {
	Start      *time.Time `json:"start,omitempty"`
	Complete   bool       `json:"complete"`
	Reason     string     `json:"reason,omitempty"`
	Message    string     `json:"message,omitempty"`
	ReplicaSet string     `json:"replicaSet,omitempty"`
	Error      string     `json:"error,omitempty"`
}

type changeResult struct {
	Earliest time.Time `json:"earliest"`
	Latest   time.Time `json:"latest"`
	// From names the dependency (or the request annotation) it comes from.
	From string `json:"from"`
}

type gateResult struct {
	// Reason is Allowed, the first reason holding a restart back (in the
	// manager's order: suspend, schedule, GitOps, minInterval), or
	// "Unknown" when only the manager can tell (the GitOps stage).
	Reason      string            `json:"reason"`
	Until       *time.Time        `json:"until,omitempty"`
	Suspend     bool              `json:"suspend"`
	Schedule    scheduleResult    `json:"schedule"`
	GitOps      gitOpsResult      `json:"gitOps"`
	MinInterval minIntervalResult `json:"minInterval"`
	DryRun      bool              `json:"dryRun"`
}

type scheduleResult struct {
	Open    bool       `json:"open"`
	Reason  string     `json:"reason,omitempty"`
	Message string     `json:"message"`
	Next    *time.Time `json:"next,omitempty"`
}

type gitOpsResult struct {
	Provider string `json:"provider"`
	// Recorded is the manager's last decision on the open request, if any.
	Recorded *recordedGate `json:"recorded,omitempty"`
	Message  string        `json:"message"`
}

type recordedGate struct {
	Request       string                    `json:"request"`
	Reason        string                    `json:"reason"`
	Message       string                    `json:"message,omitempty"`
	RequeueAt     *time.Time                `json:"requeueAt,omitempty"`
	LastEvaluated *time.Time                `json:"lastEvaluated,omitempty"`
	Owner         *kickv1alpha1.GitOpsOwner `json:"owner,omitempty"`
}

type minIntervalResult struct {
	Interval    string     `json:"interval"`
	LastRestart *time.Time `json:"lastRestart,omitempty"`
	NextAllowed *time.Time `json:"nextAllowed,omitempty"`
	Elapsed     bool       `json:"elapsed"`
}

type requestResult struct {
	Name           string     `json:"name"`
	Open           bool       `json:"open"`
	Phase          string     `json:"phase"`
	Reason         string     `json:"reason,omitempty"`
	Message        string     `json:"message,omitempty"`
	RequeueAt      *time.Time `json:"requeueAt,omitempty"`
	CompletionTime *time.Time `json:"completionTime,omitempty"`
	RestartCount   int32      `json:"restartCount,omitempty"`
}

// analyze turns the facts into an explanation. It reads nothing and is
// deterministic for given facts.
func analyze(f *facts) *explanation {
	e := &explanation{
		Namespace:    f.namespace,
		Kind:         string(f.kind),
		Name:         f.name,
		EvaluatedAt:  f.now.UTC(),
		Dependencies: []dependencyResult{},
		rollout:      f.rollout,
	}
	e.Policy, e.policy = selectPolicy(f.policies, f.workload.GetLabels())
	kr := pickRequest(f.requests)
	if kr != nil {
		e.Request = describeRequest(kr)
	}
	if f.requestsErr != nil {
		e.RequestError = f.requestsErr.Error()
	}

	// Dependencies and Λ (model §6): the newest recorded change of the
	// in-scope dependencies that have a record.
	var from string
	for i := range f.deps {
		dr, change := describeDependency(&f.deps[i], e.policy)
		e.Dependencies = append(e.Dependencies, dr)
		switch {
		case dr.Scope == scopeUnknown && dr.Record != recordNone && e.policy != nil && e.unknown == "":
			e.unknown = fmt.Sprintf("cannot tell whether %s/%s is in the dependencySelector: %s", dr.Kind, dr.Name, dr.SourceError)
		case dr.Scope == scopeIn && dr.Record == recordUnreadable && e.unknown == "":
			e.unknown = fmt.Sprintf("cannot read the observation record of %s/%s: %s", dr.Kind, dr.Name, dr.RecordError)
		case dr.Scope == scopeIn && !change.IsZero() && newer(change, e.recorded):
			e.recorded = e.recorded.Max(change)
			from = dr.Kind + "/" + dr.Name
		}
	}
	latest := e.recorded
	// The manager also answers the change its request carries (a person's
	// restart, or a change handed over by a duplicate).
	if kr != nil {
		if c := request.AnnotatedChange(kr); newer(c, latest) {
			latest = latest.Max(c)
			from = "kickrequest/" + kr.Name + " (" + request.ChangeAnnotation + ")"
		}
	}
	if !latest.IsZero() && e.policy != nil {
		e.LatestChange = &changeResult{Earliest: latest.Earliest.UTC(), Latest: latest.Latest.UTC(), From: from}
	}

	// σ and completeness.
	r := f.rollout
	e.Rollout = rolloutResult{Complete: r.Complete, Reason: r.Reason, Message: r.Message, ReplicaSet: r.ReplicaSet}
	if !r.Start.IsZero() {
		e.Rollout.Start = timePtr(r.Start)
	}
	if f.rolloutErr != nil {
		e.Rollout = rolloutResult{Error: f.rolloutErr.Error()}
		if e.unknown == "" {
			e.unknown = "cannot inspect the rollout: " + f.rolloutErr.Error()
		}
	}

	// The verdict.
	switch {
	case e.Policy.Selection == selectionNotSelected:
		e.Verdict = verdictCannotAssess
		e.VerdictMessage = fmt.Sprintf("not selected by any KickPolicy in %s; KICK does not manage it", f.namespace)
	case e.Policy.Selection == selectionAmbiguous:
		e.Verdict = verdictCannotAssess
		e.VerdictMessage = fmt.Sprintf("selected by several KickPolicies (%s); KICK will not restart it", strings.Join(e.Policy.Candidates, ", "))
	case e.unknown != "":
		e.Verdict, e.VerdictMessage = verdictCannotAssess, e.unknown
	default:
		switch freshness.Decide(latest, r) {
		case freshness.Fresh:
			e.Verdict = verdictFresh
		case freshness.Stale:
			e.Verdict = verdictStale
		default:
			e.Verdict = verdictInProgress
		}
		e.VerdictMessage = freshness.Explain(latest, r)
	}

	if e.policy != nil {
		e.Gate = evaluateGate(f, e.policy, kr)
	}
	e.Summary = summarize(e)
	return e
}

// newer reports whether c adds anything to known, bound by bound.
func newer(c, known freshness.Change) bool {
	return c.Earliest.After(known.Earliest) || c.Latest.After(known.Latest)
}

// selectPolicy finds the one KickPolicy whose workloadSelector matches, as
// the manager does (policies being deleted are ignored; an invalid
// selector selects nothing).
func selectPolicy(policies []kickv1alpha1.KickPolicy, labels map[string]string) (policyResult, *kickv1alpha1.KickPolicy) {
	var matches []*kickv1alpha1.KickPolicy
	for i := range policies {
		p := &policies[i]
		if p.DeletionTimestamp != nil {
			continue
		}
		if c, _ := policy.Compile(p); c.MatchesWorkload(labels) {
			matches = append(matches, p)
		}
	}
	switch len(matches) {
	case 0:
		return policyResult{Selection: selectionNotSelected}, nil
	case 1:
		return policyResult{Selection: selectionSelected, Name: matches[0].Name}, matches[0]
	}
	names := make([]string, len(matches))
	for i, p := range matches {
		names[i] = p.Name
	}
	sort.Strings(names)
	return policyResult{Selection: selectionAmbiguous, Candidates: names}, nil
}

// describeDependency reports one dependency and its recorded change.
func describeDependency(df *depFacts, p *kickv1alpha1.KickPolicy) (dependencyResult, freshness.Change) {
	d := dependencyResult{Kind: df.dep.Kind, Name: df.dep.Name, Fields: df.fields, SourceMissing: df.missing}
	if df.sourceErr != nil {
		d.SourceError = df.sourceErr.Error()
	}
	if !counted(df.dep) {
		d.Scope, d.Record = scopeNotCounted, recordNotCounted
		d.ScopeDetail = "KICK's freshness check reads Secrets and ConfigMaps only"
		return d, freshness.Change{}
	}
	hasSelector := p != nil && p.Spec.Discovery != nil && p.Spec.Discovery.DependencySelector != nil
	switch {
	case p == nil:
		d.Scope, d.ScopeDetail = scopeUnknown, "no single KickPolicy selects the workload"
	case !hasSelector:
		d.Scope = scopeIn
	case df.missing:
		d.Scope, d.ScopeDetail = scopeOut, "the source does not exist"
	case df.sourceErr != nil:
		d.Scope, d.ScopeDetail = scopeUnknown, "cannot read the source's labels"
	case policy.DependencyInScope(p, df.labels):
		d.Scope = scopeIn
	default:
		d.Scope, d.ScopeDetail = scopeOut, "outside the policy's dependencySelector"
	}
	var change freshness.Change
	switch {
	case df.recordErr != nil:
		d.Record, d.RecordError = recordUnreadable, df.recordErr.Error()
	case df.record == nil:
		d.Record = recordNone
	default:
		change = request.RecordedChange(&df.record.Spec)
		d.Record = recordRelevant
		if df.record.Spec.Class == kickv1alpha1.ObservationBaseline {
			d.Record = recordBaseline
		}
		if !change.IsZero() {
			d.LastRelevantChange = timePtr(change.Earliest)
			if change.Latest.After(change.Earliest) {
				d.LastRelevantChangeBy = timePtr(change.Latest)
			}
		}
	}
	return d, change
}

// pickRequest returns the open request of the target (the oldest, which
// is the one KICK keeps when it coalesces), else the one that finished
// last.
func pickRequest(requests []kickv1alpha1.KickRequest) *kickv1alpha1.KickRequest {
	var open, last *kickv1alpha1.KickRequest
	for i := range requests {
		kr := &requests[i]
		if kr.DeletionTimestamp != nil {
			continue
		}
		if !kr.Status.Phase.IsTerminal() {
			if open == nil || olderRequest(kr, open) {
				open = kr
			}
			continue
		}
		if last == nil || completedAt(kr).After(completedAt(last)) {
			last = kr
		}
	}
	if open != nil {
		return open
	}
	return last
}

func olderRequest(a, b *kickv1alpha1.KickRequest) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name
}

func completedAt(kr *kickv1alpha1.KickRequest) time.Time {
	if kr.Status.CompletionTime != nil {
		return kr.Status.CompletionTime.Time
	}
	return kr.CreationTimestamp.Time
}

func describeRequest(kr *kickv1alpha1.KickRequest) *requestResult {
	phase := kr.Status.Phase
	if phase == "" {
		phase = kickv1alpha1.PhasePending
	}
	r := &requestResult{Name: kr.Name, Open: !phase.IsTerminal(), Phase: string(phase), RestartCount: kr.Status.RestartCount}
	switch {
	case phase.IsTerminal():
		if c := meta.FindStatusCondition(kr.Status.Conditions, conditionCompleted); c != nil {
			r.Reason, r.Message = c.Reason, c.Message
		}
		if kr.Status.CompletionTime != nil {
			r.CompletionTime = timePtr(kr.Status.CompletionTime.Time)
		}
	case kr.Status.Gate != nil:
		r.Reason, r.Message = string(kr.Status.Gate.Reason), kr.Status.Gate.Message
		if kr.Status.Gate.RequeueAt != nil && kr.Status.Gate.Reason.Blocks() {
			r.RequeueAt = timePtr(kr.Status.Gate.RequeueAt.Time)
		}
	}
	return r
}

// Gate reasons only the manager can decide; "Unknown" is explain's own.
const gateUnknown = "Unknown"

// evaluateGate evaluates what it can locally, at f.now, in the manager's
// order: suspend, native windows, the GitOps stage, restart.minInterval.
// The GitOps stage is taken from the manager's last decision on the open
// request; explain does not query GitOps tools itself.
func evaluateGate(f *facts, p *kickv1alpha1.KickPolicy, kr *kickv1alpha1.KickRequest) *gateResult {
	g := &gateResult{Suspend: p.Spec.Suspend, DryRun: p.Spec.DryRun, Reason: string(kickv1alpha1.GateAllowed)}
	block := func(reason kickv1alpha1.GateReason, until time.Time) {
		if g.Reason != string(kickv1alpha1.GateAllowed) && g.Reason != gateUnknown {
			return // an earlier stage already blocks
		}
		g.Reason = string(reason)
		g.Until = nil
		if !until.IsZero() {
			g.Until = timePtr(until)
		}
	}
	if p.Spec.Suspend {
		block(kickv1alpha1.GateSuspended, time.Time{})
	}

	g.Schedule = scheduleResult{Open: true, Message: "no schedule windows: restarts may run at any time"}
	if p.Spec.Schedule != nil && len(p.Spec.Schedule.Windows) > 0 {
		sched, err := schedule.Compile(p.Spec.Schedule.Windows)
		if err != nil {
			g.Schedule = scheduleResult{Reason: string(kickv1alpha1.GateConfigurationError),
				Message: strings.ReplaceAll(strings.TrimSpace(err.Error()), "\n", "; ")}
			block(kickv1alpha1.GateConfigurationError, time.Time{})
		} else {
			d := sched.Decide(f.now)
			g.Schedule = scheduleResult{Open: d.Open, Message: d.Message}
			if !d.Next.IsZero() {
				g.Schedule.Next = timePtr(d.Next)
			}
			if !d.Open {
				g.Schedule.Reason = string(kickv1alpha1.GateOutsideSchedule)
				block(kickv1alpha1.GateOutsideSchedule, d.Next)
			}
		}
	}

	provider := p.Spec.EffectiveProvider()
	g.GitOps = gitOpsResult{Provider: string(provider)}
	if provider == kickv1alpha1.ProviderNone {
		g.GitOps.Message = "no GitOps gate"
	} else {
		rec := recordedDecision(kr)
		g.GitOps.Recorded = rec
		switch {
		case rec == nil:
			g.GitOps.Message = fmt.Sprintf("decided by the manager when a change arrives (provider %s)", provider)
			block(gateUnknown, time.Time{})
		case rec.Reason == string(kickv1alpha1.GateAllowed):
			g.GitOps.Message = "allowed at the manager's last evaluation"
		case isGitOpsReason(kickv1alpha1.GateReason(rec.Reason)):
			g.GitOps.Message = "held back at the manager's last evaluation"
			until := time.Time{}
			if rec.RequeueAt != nil {
				until = *rec.RequeueAt
			}
			block(kickv1alpha1.GateReason(rec.Reason), until)
		default:
			// The manager stopped at an earlier stage and did not ask the
			// GitOps tool.
			g.GitOps.Message = fmt.Sprintf("not evaluated yet: the manager's last decision stopped at %s (provider %s)", rec.Reason, provider)
			block(gateUnknown, time.Time{})
		}
	}

	interval := p.Spec.EffectiveMinInterval()
	g.MinInterval = minIntervalResult{Interval: interval.String(), Elapsed: true}
	if tmpl, ok := discoveryTemplateStamp(f); ok {
		next := tmpl.Add(interval)
		g.MinInterval.LastRestart, g.MinInterval.NextAllowed = timePtr(tmpl), timePtr(next)
		if f.now.Before(next) {
			g.MinInterval.Elapsed = false
			block(kickv1alpha1.GateMinIntervalNotElapsed, next)
		}
	}
	return g
}

// recordedDecision is the gate decision the manager recorded on the open
// request, nil when there is no open request or no decision yet.
func recordedDecision(kr *kickv1alpha1.KickRequest) *recordedGate {
	if kr == nil || kr.Status.Phase.IsTerminal() || kr.Status.Gate == nil || kr.Status.Gate.Reason == "" {
		return nil
	}
	gs := kr.Status.Gate
	rec := &recordedGate{Request: kr.Name, Reason: string(gs.Reason), Message: gs.Message, Owner: kr.Status.Owner}
	if gs.RequeueAt != nil {
		rec.RequeueAt = timePtr(gs.RequeueAt.Time)
	}
	if gs.LastEvaluated != nil {
		rec.LastEvaluated = timePtr(gs.LastEvaluated.Time)
	}
	return rec
}

// isGitOpsReason reports whether a gate reason comes from the GitOps
// stage (OutsideSchedule counts: Argo CD sync windows report it too).
func isGitOpsReason(r kickv1alpha1.GateReason) bool {
	switch r {
	case kickv1alpha1.GateOwnerUnknown, kickv1alpha1.GateAmbiguousOwner, kickv1alpha1.GateOwnerOutOfSync,
		kickv1alpha1.GateOwnerReconciling, kickv1alpha1.GateOwnerSuspended, kickv1alpha1.GatePromotionRunning,
		kickv1alpha1.GateProjectUnknown, kickv1alpha1.GateProviderUnavailable, kickv1alpha1.GateOutsideSchedule:
		return true
	}
	return false
}

// discoveryTemplateStamp is the restartedAt stamp on the workload's pod
// template.
func discoveryTemplateStamp(f *facts) (time.Time, bool) {
	tmpl, ok := discovery.PodTemplate(f.workload)
	if !ok {
		return time.Time{}, false
	}
	return freshness.TemplateStamp(tmpl)
}

// summarize is the one-line answer.
func summarize(e *explanation) string {
	switch e.Verdict {
	case verdictCannotAssess:
		return "cannot assess: " + e.VerdictMessage
	case verdictFresh:
		return "nothing to do: fresh"
	case verdictInProgress:
		s := "waiting for " + orDefault(e.Rollout.Reason, freshness.RolloutInProgress)
		if e.Rollout.Message != "" {
			s += ": " + e.Rollout.Message
		}
		return s
	}
	g := e.Gate
	switch {
	case g == nil:
		return "cannot assess: no KickPolicy"
	case g.Reason == gateUnknown:
		return fmt.Sprintf("would restart now if the GitOps gate allows it (provider %s)", g.GitOps.Provider)
	case g.Reason != string(kickv1alpha1.GateAllowed):
		s := "waiting for " + g.Reason
		if g.Until != nil {
			s += " until " + formatTime(*g.Until)
		}
		return s
	case g.DryRun:
		return "would restart now (dry run: KICK records phase DryRun and patches nothing)"
	}
	return "would restart now"
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func timePtr(t time.Time) *time.Time {
	u := t.UTC()
	return &u
}

// formatTime renders an instant for people: RFC 3339 in UTC, with the
// sub-second part when there is one (freshness needs it).
func formatTime(t time.Time) string {
	if t.IsZero() {
		return "(unknown)"
	}
	return t.UTC().Format(time.RFC3339Nano)
}
