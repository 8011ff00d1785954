package assess

import (
	"fmt"
	"slices"
	"strings"
	"time"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/gitops"
	"github.com/kick-operator/kick/restart/freshness"
	"github.com/kick-operator/kick/restart/schedule"
)

// Stage names one gate.
type Stage string

// The gate's stages, in the one order they are evaluated.
const (
	StageSuspend     Stage = "Suspend"
	StageDryRun      Stage = "DryRun"
	StageHold        Stage = "Hold"
	StageSettle      Stage = "Settle"
	StageSchedule    Stage = "Schedule"
	StageMinInterval Stage = "MinInterval"
	StageHalt        Stage = "Halt"
	StageWave        Stage = "Wave"
	StageGitOps      Stage = "GitOps"
	StageBudget      Stage = "Budget"
)

// StageResult is one stage's answer.
type StageResult struct {
	Stage Stage
	// Open is set when the stage lets the restart pass.
	Open bool
	// Unknown is set when the stage could not be evaluated (GitOps not
	// asked); Open is then false.
	Unknown bool
	Reason  kickv1alpha1.GateReason
	Message string
	// Next is when the stage's answer may change without any object
	// changing (a window boundary, the end of minInterval); zero if never.
	Next time.Time
	// DenyWindow is set when a Deny window holds the schedule stage closed.
	DenyWindow bool
	// Held is the KickHold that holds the hold stage closed, if one does.
	Held *Hold
	// Cause is the object that holds the stage closed, when the stage
	// names one: the KickHold (Hold), the failed workload (Halt).
	Cause *kickv1alpha1.GateCause
	// Wave is what holds the wave stage closed, when an earlier wave does.
	Wave *WaveHold
}

// Gate is the gate's answer: the first stage that holds the restart back,
// and every stage's own answer.
type Gate struct {
	// Allowed is set when every stage is open.
	Allowed bool
	// Stage is the first stage that is not open ("" when allowed).
	Stage Stage
	// Reason is GateAllowed or why the restart waits; "" when the first
	// stage that is not open is unknown.
	Reason  kickv1alpha1.GateReason
	Message string
	// Until is when the decision may change without any object changing;
	// zero when only an object change can change it.
	Until time.Time
	// DryRun is set when the policy only reports what it would do.
	DryRun bool
	// Cause is the closed stage's cause, if it names one.
	Cause *kickv1alpha1.GateCause
	// Provider and Owner come from the GitOps decision, when it was made.
	Provider kickv1alpha1.GitOpsProvider
	Owner    *kickv1alpha1.GitOpsOwner
	Stages   []StageResult
}

// Decision is the gate as the GitOps decision type the request status is
// written from.
func (g Gate) Decision() gitops.Decision {
	return gitops.Decision{Reason: g.Reason, Message: g.Message, RequeueAt: g.Until, Provider: g.Provider, Owner: g.Owner, Cause: g.Cause}
}

// Stage returns the answer of one stage; false when it was not evaluated.
func (g Gate) StageResult(s Stage) (StageResult, bool) {
	for _, r := range g.Stages {
		if r.Stage == s {
			return r, true
		}
	}
	return StageResult{}, false
}

// evaluateGate runs every stage in order and reports the first that is
// not open. Later stages are evaluated too, for people who ask why.
func evaluateGate(f Facts, p *kickv1alpha1.KickPolicy, latest freshness.Change, deps []DependencyResult) Gate {
	g := Gate{Allowed: true, Reason: kickv1alpha1.GateAllowed, DryRun: p.Spec.DryRun}
	if f.GitOps != nil {
		g.Provider, g.Owner = f.GitOps.Provider, f.GitOps.Owner
	}
	stages := []StageResult{
		suspendStage(p),
		dryRunStage(p),
		holdStage(f, latest, deps),
		settleStage(p, latest, f.Now),
		scheduleStage(p, f.Now),
		minIntervalStage(p, f.Target, f.Now),
		haltStage(f, deps),
		waveStage(f, p, latest, deps),
		gitOpsStage(p, f.GitOps),
		budgetStage(f.Budget),
	}
	return g.settle(stages)
}

// settle records the stages' answers and which one holds the restart.
func (g Gate) settle(stages []StageResult) Gate {
	g.Allowed, g.Stage, g.Reason, g.Message, g.Until, g.Cause = true, "", kickv1alpha1.GateAllowed, "", time.Time{}, nil
	for _, s := range stages {
		if s.Open || !g.Allowed {
			continue
		}
		g.Allowed, g.Stage, g.Reason, g.Message, g.Until, g.Cause = false, s.Stage, s.Reason, s.Message, s.Next, s.Cause
	}
	g.Stages = stages
	if g.Allowed {
		g.Message = "every gate is open"
	}
	return g
}

// WithBudget returns the gate with b as the restart budget's answer: the
// manager asks for a slot only once every other stage is open.
func (g Gate) WithBudget(b *Budget) Gate { return g.with(budgetStage(b)) }

// with returns the gate with r in place of its stage's answer.
func (g Gate) with(r StageResult) Gate {
	stages := slices.Clone(g.Stages)
	for i := range stages {
		if stages[i].Stage == r.Stage {
			stages[i] = r
		}
	}
	return g.settle(stages)
}

// HoldForHalts closes the halt stage when one of halts holds the
// restart the assessment would make, reporting whether it did: a halt
// decided after the facts were gathered still holds a restart that has
// not started.
func (a *Assessment) HoldForHalts(halts []Halt) bool {
	r := haltStage(Facts{Halts: halts, Rollout: a.Rollout}, a.Dependencies)
	if r.Open {
		return false
	}
	a.Gate = a.Gate.with(r)
	return true
}

func suspendStage(p *kickv1alpha1.KickPolicy) StageResult {
	if p.Spec.Suspend {
		return StageResult{Stage: StageSuspend, Reason: kickv1alpha1.GateSuspended, Message: fmt.Sprintf("KickPolicy %s is suspended", p.Name)}
	}
	return open(StageSuspend, "the policy is not suspended")
}

// dryRunStage never holds a restart back: a dry run evaluates every other
// gate and then records what it would do instead of doing it.
func dryRunStage(p *kickv1alpha1.KickPolicy) StageResult {
	if p.Spec.DryRun {
		return open(StageDryRun, "dry run: KICK records the decision and patches nothing")
	}
	return open(StageDryRun, "not a dry run")
}

func settleStage(p *kickv1alpha1.KickPolicy, latest freshness.Change, now time.Time) StageResult {
	settle := p.Spec.EffectiveSettle()
	if settle <= 0 {
		return open(StageSettle, "no settle time: changes are acted on at once")
	}
	if latest.IsZero() {
		return open(StageSettle, "no change to settle")
	}
	quietFrom := latest.Latest.Add(settle)
	if now.Before(quietFrom) {
		return StageResult{Stage: StageSettle, Reason: kickv1alpha1.GateSettling, Next: quietFrom,
			Message: fmt.Sprintf("a dependency changed at %s; restart.settle %s waits for the sources to be quiet until %s",
				formatTime(latest.Latest), settle, formatTime(quietFrom))}
	}
	return open(StageSettle, fmt.Sprintf("the sources have been quiet for restart.settle %s", settle))
}

func scheduleStage(p *kickv1alpha1.KickPolicy, now time.Time) StageResult {
	if p.Spec.Schedule == nil || len(p.Spec.Schedule.Windows) == 0 {
		return open(StageSchedule, "no schedule windows: restarts may run at any time")
	}
	sched, err := schedule.Compile(p.Spec.Schedule.Windows)
	if err != nil {
		return StageResult{Stage: StageSchedule, Reason: kickv1alpha1.GateConfigurationError,
			Message: fmt.Sprintf("KickPolicy %s: %s", p.Name, strings.ReplaceAll(strings.TrimSpace(err.Error()), "\n", "; "))}
	}
	d := sched.Decide(now)
	r := StageResult{Stage: StageSchedule, Open: d.Open, Message: d.Message, Next: d.Next, DenyWindow: d.Deny}
	if !d.Open {
		r.Reason = kickv1alpha1.GateOutsideSchedule
	}
	return r
}

func minIntervalStage(p *kickv1alpha1.KickPolicy, t Target, now time.Time) StageResult {
	interval := p.Spec.EffectiveMinInterval()
	if t.RestartedAt.IsZero() {
		return open(StageMinInterval, fmt.Sprintf("no restart recorded on the pod template; restart.minInterval is %s", interval))
	}
	if _, future := freshness.NotAfter(t.RestartedAt, now); future {
		// Not KICK's stamp, or a clock gone wrong: counting from it would
		// hold every restart back until that date.
		return open(StageMinInterval, fmt.Sprintf("the restart stamp %s lies in the future of the manager's clock and is not counted", freshness.FormatStamp(t.RestartedAt)))
	}
	next := t.RestartedAt.Add(interval)
	if now.Before(next) {
		return StageResult{Stage: StageMinInterval, Reason: kickv1alpha1.GateMinIntervalNotElapsed, Next: next,
			Message: fmt.Sprintf("%s was restarted at %s; restart.minInterval %s allows the next restart at %s",
				t, freshness.FormatStamp(t.RestartedAt), interval, next.UTC().Format(time.RFC3339))}
	}
	return StageResult{Stage: StageMinInterval, Open: true, Next: time.Time{},
		Message: fmt.Sprintf("last restart at %s; restart.minInterval %s has passed", freshness.FormatStamp(t.RestartedAt), interval)}
}

func gitOpsStage(p *kickv1alpha1.KickPolicy, d *gitops.Decision) StageResult {
	provider := p.Spec.EffectiveProvider()
	switch {
	case provider == kickv1alpha1.ProviderNone:
		return open(StageGitOps, "no GitOps gate")
	case d == nil:
		return StageResult{Stage: StageGitOps, Unknown: true,
			Message: fmt.Sprintf("decided by the manager from its caches (provider %s)", provider)}
	case d.Allowed():
		return StageResult{Stage: StageGitOps, Open: true, Reason: kickv1alpha1.GateAllowed, Message: d.Message, Next: d.RequeueAt}
	}
	return StageResult{Stage: StageGitOps, Reason: d.Reason, Message: d.Message, Next: d.RequeueAt}
}

// haltStage holds a restart that would bring in a change a halted fan-out
// is held for: an in-scope dependency still recorded with the change a
// failed restart answered (not a newer one, the fix), which the running
// pods do not carry yet.
func haltStage(f Facts, deps []DependencyResult) StageResult {
	if len(f.Halts) == 0 {
		return open(StageHalt, "no failed restart halts a change this workload would take")
	}
	for _, h := range f.Halts {
		for _, d := range deps {
			if d.Scope != ScopeIn || d.Change.IsZero() || d.Kind+"/"+d.Name != h.Source ||
				d.Change.Latest.After(h.Change) || !freshness.Newer(d.Change, f.Rollout.Since) {
				continue
			}
			failed := h.Failed
			return StageResult{Stage: StageHalt, Reason: kickv1alpha1.GateRolloutHalted, Cause: &failed,
				Message: fmt.Sprintf("%s: halted after %s failed its rollout (%s) with the change of %s; a new change of %s ends the halt, or release it with: kubectl annotate kickrequest %s %s=true",
					h.Source, h.Workload, h.Reason, formatTime(h.Change), h.Source, h.Request, kickv1alpha1.ReleaseHaltAnnotation)}
		}
	}
	return open(StageHalt, "no failed restart halts a change this workload would take")
}

// budgetStage reports the restart budget's answer. Only the manager hands
// out slots; without its answer the stage is open when no cap applies.
func budgetStage(b *Budget) StageResult {
	switch {
	case b == nil:
		return open(StageBudget, "no restart budget applies")
	case b.Open:
		return open(StageBudget, b.Message)
	}
	return StageResult{Stage: StageBudget, Reason: kickv1alpha1.GateRestartBudget, Message: "waiting for a restart slot: " + b.Message}
}

func open(s Stage, message string) StageResult {
	return StageResult{Stage: s, Open: true, Reason: kickv1alpha1.GateAllowed, Message: message}
}

// formatTime renders an instant for people: RFC 3339 in UTC, with the
// sub-second part when there is one.
func formatTime(t time.Time) string {
	if t.IsZero() {
		return "(unknown)"
	}
	return t.UTC().Format(time.RFC3339Nano)
}
