package main

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/gitops"
	"github.com/kick-operator/kick/restart/assess"
	"github.com/kick-operator/kick/restart/discovery"
	"github.com/kick-operator/kick/restart/freshness"
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
	// Holds are the namespace's KickHolds, expired ones included;
	// HoldsError says why they could not be read.
	Holds      []holdResult `json:"holds,omitempty"`
	HoldsError string       `json:"holdsError,omitempty"`
	Summary    string       `json:"summary"`
}

// holdResult is one KickHold of the workload's namespace.
type holdResult struct {
	Name      string                  `json:"name"`
	Target    kickv1alpha1.HoldTarget `json:"target"`
	Reason    string                  `json:"reason"`
	ExpiresAt *time.Time              `json:"expiresAt,omitempty"`
	// Active is false once the hold has expired.
	Active bool `json:"active"`
	// Release is the command that ends the hold.
	Release string `json:"release"`
}

type policyResult struct {
	Selection string `json:"selection"`
	// Name is the selecting policy (Selected only).
	Name string `json:"name,omitempty"`
	// Candidates are the policies that select the workload (Ambiguous).
	Candidates []string `json:"candidates,omitempty"`
}

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
	// KeysRead is how many keys of the source the pod template reads
	// (never which: explain prints no key names); absent when it reads
	// every key. KeyEntries is how many keys the record knows.
	KeysRead   *int `json:"keysRead,omitempty"`
	KeyEntries *int `json:"keyEntries,omitempty"`
	// KeyLevel, when set, says how the changes of the keys read were
	// judged: key by key as the manager does, or by the whole object and
	// why (explain could not line the keys up with the record).
	KeyLevel string `json:"keyLevel,omitempty"`
	// Keys are the keys read with their change times, listed only when
	// explain lined them up, which needs the right to read the source.
	Keys []keyResult `json:"keys,omitempty"`
	// Reads says which changes count: "every key", or those of the keys
	// read (by number); empty for a kind without keys.
	Reads string `json:"reads,omitempty"`
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
	// manager's order: suspend, hold, settle, schedule, minInterval, halt,
	// waves, GitOps, budget), or "Unknown" when only the manager can tell
	// (the GitOps stage, or the hold stage when the KickHolds are unreadable).
	Reason string `json:"reason"`
	// Stage is the gate that holds the restart back; empty when allowed.
	Stage       string            `json:"stage,omitempty"`
	Until       *time.Time        `json:"until,omitempty"`
	Suspend     bool              `json:"suspend"`
	Hold        stageResult       `json:"hold"`
	Settle      stageResult       `json:"settle"`
	Schedule    scheduleResult    `json:"schedule"`
	GitOps      gitOpsResult      `json:"gitOps"`
	MinInterval minIntervalResult `json:"minInterval"`
	Halt        stageResult       `json:"halt"`
	Waves       stageResult       `json:"waves"`
	Budget      stageResult       `json:"budget"`
	DryRun      bool              `json:"dryRun"`
}

type scheduleResult struct {
	Open    bool       `json:"open"`
	Reason  string     `json:"reason,omitempty"`
	Message string     `json:"message"`
	Next    *time.Time `json:"next,omitempty"`
}

// stageResult is one gate's answer.
type stageResult struct {
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

// analyze turns the facts into an explanation through the same assessment
// the manager runs. It reads nothing and is deterministic for given facts.
func analyze(f *facts) *explanation {
	kr := assess.CurrentRequest(f.requests)
	af := f.assessFacts(kr)
	a := assess.Assess(af)
	e := &explanation{
		Namespace:      f.namespace,
		Kind:           string(f.kind),
		Name:           f.name,
		EvaluatedAt:    f.now.UTC(),
		Dependencies:   []dependencyResult{},
		Policy:         policyResult{Selection: string(a.Selection.State), Candidates: a.Selection.Candidates},
		Verdict:        string(a.Verdict),
		VerdictMessage: a.VerdictMessage,
		Summary:        a.Summary,
	}
	if p := a.Selection.Policy; p != nil {
		e.Policy.Name = p.Name
	}
	if kr != nil {
		e.Request = describeRequest(kr)
	}
	if f.requestsErr != nil {
		e.RequestError = f.requestsErr.Error()
	}
	for i, dr := range a.Dependencies {
		e.Dependencies = append(e.Dependencies, describeDependency(dr, f.deps[i], a.Selection.Policy))
	}
	if !a.Latest.IsZero() && a.Selection.Policy != nil {
		e.LatestChange = &changeResult{Earliest: a.Latest.Earliest.UTC(), Latest: a.Latest.Latest.UTC(), From: a.LatestFrom}
	}
	r := f.rollout
	e.Rollout = rolloutResult{Complete: r.Complete, Reason: r.Reason, Message: r.Message, ReplicaSet: r.ReplicaSet}
	if !r.Start.IsZero() {
		e.Rollout.Start = timePtr(r.Start)
	}
	if f.rolloutErr != nil {
		e.Rollout = rolloutResult{Error: f.rolloutErr.Error()}
	}
	e.Holds = describeHolds(f.holds, f.namespace, f.now)
	if f.holdsErr != nil {
		e.HoldsError = f.holdsErr.Error()
	}
	if p := a.Selection.Policy; p != nil {
		e.Gate = describeGate(a.Gate, p, af.GitOps, kr, af.Target.RestartedAt)
		describeHoldStage(e, a)
	}
	return e
}

// describeHolds lists the namespace's KickHolds for people.
func describeHolds(holds []assess.Hold, namespace string, now time.Time) []holdResult {
	var out []holdResult
	for _, h := range holds {
		r := holdResult{Name: h.Name, Target: h.Target, Reason: h.Reason, Release: h.ReleaseCommand(namespace),
			Active: h.ExpiresAt.IsZero() || now.Before(h.ExpiresAt)}
		if !h.ExpiresAt.IsZero() {
			r.ExpiresAt = timePtr(h.ExpiresAt)
		}
		out = append(out, r)
	}
	return out
}

// describeHoldStage fills the gate's hold stage. When the KickHolds could not
// be read the stage is unknown: a gate that would otherwise let the
// restart pass says so, and the summary warns that a hold may apply.
func describeHoldStage(e *explanation, a assess.Assessment) {
	s, ok := a.Gate.StageResult(assess.StageHold)
	if !ok {
		return
	}
	g := e.Gate
	g.Hold = stageResult{Open: s.Open, Reason: blocking(s), Message: s.Message, Next: optTime(s.Next)}
	switch {
	case e.HoldsError != "":
		g.Hold = stageResult{Reason: gateUnknown, Message: "cannot read the namespace's KickHolds: " + e.HoldsError +
			"; the manager applies any hold"}
		if a.Gate.Allowed {
			g.Reason, g.Stage = gateUnknown, string(assess.StageHold)
			if a.Verdict == assess.Stale {
				e.Summary += " unless a KickHold holds it (the KickHolds could not be read)"
			}
		}
	case s.Open && len(e.Holds) > 0:
		g.Hold.Message += "; KickHolds in " + e.Namespace + ": " + holdList(e.Holds)
	}
}

// holdList names a few holds, with their targets and, once expired, when
// they expired.
func holdList(holds []holdResult) string {
	const most = 5
	var parts []string
	for i, h := range holds {
		if i == most {
			parts = append(parts, fmt.Sprintf("and %d more", len(holds)-most))
			break
		}
		p := h.Name + " (" + h.Target.String()
		if !h.Active {
			p += ", expired at " + formatTime(*h.ExpiresAt)
		}
		parts = append(parts, p+")")
	}
	return strings.Join(parts, ", ")
}

// assessFacts are the facts in the assessment's terms. The GitOps stage is
// the manager's last decision on the open request: explain does not query
// GitOps tools itself.
func (f *facts) assessFacts(kr *kickv1alpha1.KickRequest) assess.Facts {
	af := assess.Facts{
		Now:        f.now,
		Target:     assess.Target{Kind: f.kind, Namespace: f.namespace, Name: f.name},
		Policies:   f.policies,
		Rollout:    f.rollout,
		RolloutErr: f.rolloutErr,
		Request:    kr,
		GitOps:     recordedGitOps(kr),
		Halts:      f.halts,
		Holds:      f.holds,
		Budget:     recordedBudget(kr),
	}
	if f.workload != nil {
		af.Target.Labels = f.workload.GetLabels()
		if tmpl, ok := discovery.PodTemplate(f.workload); ok {
			af.Target.RestartedAt, _ = freshness.TemplateStamp(tmpl)
		}
	}
	for _, df := range f.deps {
		// A dependency whose keys explain could not line up with its
		// record is judged by the whole object (see describeKeys).
		reads := df.reads
		if df.keys.ids == nil && reads != nil && !reads.All {
			reads = &discovery.Keys{All: true}
		} else if reads != nil && !reads.All {
			af.KeyNames = f.keyName
		}
		d := assess.Dependency{Kind: df.dep.Kind, Name: df.dep.Name, Fields: df.fields, Counted: counted(df.dep),
			Labels: df.labels, Missing: df.missing, SourceErr: df.sourceErr, RecordErr: df.recordErr, Reads: reads}
		if df.record != nil {
			d.Record = &df.record.Spec
		}
		af.Dependencies = append(af.Dependencies, d)
	}
	return af
}

// recordedGitOps is the GitOps decision the manager recorded on the open
// request; nil when it recorded none (or stopped at an earlier gate).
func recordedGitOps(kr *kickv1alpha1.KickRequest) *gitops.Decision {
	if kr == nil || kr.Status.Phase.IsTerminal() || kr.Status.Gate == nil {
		return nil
	}
	g := kr.Status.Gate
	fromGitOps := g.Stage == string(assess.StageGitOps) || g.Stage == "" && gitOpsOnlyReason(g.Reason)
	if g.Reason != kickv1alpha1.GateAllowed && !fromGitOps {
		return nil
	}
	d := &gitops.Decision{Reason: g.Reason, Message: g.Message, Provider: kr.Status.Provider, Owner: kr.Status.Owner}
	if g.RequeueAt != nil {
		d.RequeueAt = g.RequeueAt.Time
	}
	return d
}

// recordedBudget is the restart budget's answer the manager recorded on
// the open request while it waits for a slot; nil otherwise (explain cannot
// count the cluster's restarts itself, so the stage shows open and says
// the manager decides).
func recordedBudget(kr *kickv1alpha1.KickRequest) *assess.Budget {
	if kr == nil || kr.Status.Phase.IsTerminal() || kr.Status.Gate == nil || kr.Status.Gate.Reason != kickv1alpha1.GateRestartBudget {
		return nil
	}
	return &assess.Budget{Message: strings.TrimPrefix(kr.Status.Gate.Message, "waiting for a restart slot: ")}
}

// recordedWave is the wave stage's answer the manager recorded on the open
// request; nil when the request does not wait for an earlier wave.
func recordedWave(kr *kickv1alpha1.KickRequest) *kickv1alpha1.GateStatus {
	if kr == nil || kr.Status.Phase.IsTerminal() || kr.Status.Gate == nil || kr.Status.Gate.Stage != string(assess.StageWave) {
		return nil
	}
	return kr.Status.Gate
}

// gitOpsOnlyReason reports whether only the GitOps stage gives a reason:
// a status written before the gate recorded its stage is read by reason.
func gitOpsOnlyReason(r kickv1alpha1.GateReason) bool {
	switch r {
	case kickv1alpha1.GateOwnerUnknown, kickv1alpha1.GateAmbiguousOwner, kickv1alpha1.GateOwnerOutOfSync,
		kickv1alpha1.GateOwnerReconciling, kickv1alpha1.GateOwnerSuspended, kickv1alpha1.GatePromotionRunning,
		kickv1alpha1.GateProjectUnknown, kickv1alpha1.GateProviderUnavailable:
		return true
	}
	return false
}

// describeDependency reports one dependency as the assessment saw it.
func describeDependency(dr assess.DependencyResult, df depFacts, p *kickv1alpha1.KickPolicy) dependencyResult {
	d := dependencyResult{Kind: dr.Kind, Name: dr.Name, Fields: dr.Fields, SourceMissing: dr.Missing,
		Scope: dr.Scope, ScopeDetail: dr.ScopeDetail, Record: dr.Record}
	describeKeys(&d, df, p)
	if df.sourceErr != nil {
		d.SourceError = df.sourceErr.Error()
	}
	if df.recordErr != nil {
		d.RecordError = df.recordErr.Error()
	}
	if !dr.Change.IsZero() {
		d.LastRelevantChange = timePtr(dr.Change.Earliest)
		if dr.Change.Latest.After(dr.Change.Earliest) {
			d.LastRelevantChangeBy = timePtr(dr.Change.Latest)
		}
	}
	return d
}

func describeRequest(kr *kickv1alpha1.KickRequest) *requestResult {
	phase := kr.Status.Phase
	if phase == "" {
		phase = kickv1alpha1.PhasePending
	}
	r := &requestResult{Name: kr.Name, Open: !phase.IsTerminal(), Phase: string(phase), RestartCount: kr.Status.RestartCount}
	switch {
	case phase.IsTerminal():
		if c := meta.FindStatusCondition(kr.Status.Conditions, kickv1alpha1.ConditionCompleted); c != nil {
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

// describeGate renders the assessment's gate, stage by stage.
func describeGate(g assess.Gate, p *kickv1alpha1.KickPolicy, recorded *gitops.Decision, kr *kickv1alpha1.KickRequest, restartedAt time.Time) *gateResult {
	out := &gateResult{Reason: string(g.Reason), Stage: string(g.Stage), Suspend: p.Spec.Suspend, DryRun: g.DryRun}
	if g.Reason == "" {
		out.Reason = gateUnknown
	}
	if !g.Until.IsZero() {
		out.Until = timePtr(g.Until)
	}
	if s, ok := g.StageResult(assess.StageSettle); ok {
		out.Settle = stageResult{Open: s.Open, Reason: blocking(s), Message: s.Message, Next: optTime(s.Next)}
	}
	if s, ok := g.StageResult(assess.StageSchedule); ok {
		out.Schedule = scheduleResult{Open: s.Open, Reason: blocking(s), Message: s.Message, Next: optTime(s.Next)}
	}
	if s, ok := g.StageResult(assess.StageGitOps); ok {
		out.GitOps = gitOpsResult{Provider: string(p.Spec.EffectiveProvider()), Message: s.Message}
		switch {
		case p.Spec.EffectiveProvider() == kickv1alpha1.ProviderNone:
		case recorded == nil:
			out.GitOps.Message = fmt.Sprintf("decided by the manager when a change arrives (provider %s)", p.Spec.EffectiveProvider())
		default:
			out.GitOps.Recorded = recordedDecision(kr)
			out.GitOps.Message = "held back at the manager's last evaluation"
			if recorded.Allowed() {
				out.GitOps.Message = "allowed at the manager's last evaluation"
			}
		}
	}
	interval := p.Spec.EffectiveMinInterval()
	out.MinInterval = minIntervalResult{Interval: interval.String(), Elapsed: true}
	if !restartedAt.IsZero() {
		out.MinInterval.LastRestart, out.MinInterval.NextAllowed = timePtr(restartedAt), timePtr(restartedAt.Add(interval))
	}
	if s, ok := g.StageResult(assess.StageMinInterval); ok {
		out.MinInterval.Elapsed = s.Open
	}
	if s, ok := g.StageResult(assess.StageHalt); ok {
		out.Halt = stageResult{Open: s.Open, Reason: blocking(s), Message: s.Message}
	}
	if s, ok := g.StageResult(assess.StageWave); ok {
		out.Waves = stageResult{Open: s.Open, Reason: blocking(s), Message: s.Message, Next: optTime(s.Next)}
		if s.Unknown {
			// The earlier waves' rollouts are the manager's to read: show
			// what it recorded, if it holds this request there.
			out.Waves.Reason, out.Waves.Message = gateUnknown, "decided by the manager from its caches"
			if rg := recordedWave(kr); rg != nil {
				out.Waves.Reason, out.Waves.Message = string(rg.Reason), "at the manager's last evaluation: "+rg.Message
			}
		}
	}
	if s, ok := g.StageResult(assess.StageBudget); ok {
		out.Budget = stageResult{Open: s.Open, Reason: blocking(s), Message: s.Message}
		if limit, capped := p.Spec.MaxConcurrentRestarts(int(p.Status.MatchedWorkloads)); s.Open && capped {
			out.Budget.Message = fmt.Sprintf("restart.maxConcurrent %d: the manager counts the restarts in progress when this one would start", limit)
		} else if s.Open {
			out.Budget.Message = "no restart.maxConcurrent on the policy; the manager's --max-concurrent-restarts, if set, applies when the restart would start"
		}
	}
	return out
}

// blocking is a stage's reason when it holds the restart back.
func blocking(s assess.StageResult) string {
	if s.Open {
		return ""
	}
	return string(s.Reason)
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

func optTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return timePtr(t)
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
