package preflight

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/assess"
	"github.com/kick-operator/kick/restart/plan"
)

// Operation is the admission operation.
type Operation string

const (
	Create Operation = "CREATE"
	Update Operation = "UPDATE"
	Delete Operation = "DELETE"
)

// Limits of the answer.
const (
	// MaxWarning is the longest warning, in characters (kubectl prints
	// each on one line).
	MaxWarning = 119
	// MaxWarnings is how many warnings an answer carries; beyond it the
	// last one summarises the rest.
	MaxWarnings = 5
	// MaxAudit bounds each audit annotation value, in bytes.
	MaxAudit = 8192
	// MaxAssessed is how many consumers of one source are assessed (in
	// deny mode: all of them). The audit annotation has room for fewer
	// sentences than that; beyond it the answer names the rest without
	// assessing them, so a Secret that a thousand workloads consume is
	// answered in about the time of two hundred.
	MaxAssessed = 200
	// Prefix starts every warning.
	Prefix = "kick: "
)

// Audit annotation keys (the API server prefixes them with the webhook's
// name).
const (
	AuditDecision  = "decision"
	AuditConsumers = "consumers"
	// AuditExempt is "true" when deny mode would have refused the write
	// but the writer is exempt.
	AuditExempt = "deny-exempt"
	// AuditPlan says how a fan-out to several workloads rolls out.
	AuditPlan = "plan"
	// maxPlans is how many policies' plans the warnings carry.
	maxPlans = 2
)

// Input is what the answer is composed from.
type Input struct {
	Operation Operation
	// Kind is Secret or ConfigMap.
	Kind string
	// Unchanged is set when an update writes the data the review's
	// oldObject holds: a metadata-only edit.
	Unchanged bool
	// Consumers are the workloads consuming the source, sorted; on create
	// and update each carries its assessment as if the write had happened.
	Consumers []Consumer
	// NotAssessed are the consumers after the first MaxAssessed, named
	// only (create and update).
	NotAssessed []Consumer
	// CannotAssess, when set, says why no answer could be given (cache not
	// ready, budget exceeded); it overrides everything else.
	CannotAssess string
	// DenyInDenyWindows refuses an update of a Secret's data while a
	// consumer is held back by a Deny window (the opt-in deny mode).
	DenyInDenyWindows bool
	// Exempt is set when the writer is one deny mode lets through; the
	// answer then warns as usual and records the exemption for the audit.
	Exempt bool
	// ClusterLimit is the manager's --max-concurrent-restarts, for the
	// plan of a fan-out.
	ClusterLimit int
}

// Consumer is one workload that consumes the source.
type Consumer struct {
	Kind kickv1alpha1.TargetKind
	Name string
	// Assessment is nil on delete.
	Assessment *assess.Assessment
	// Rollout is how long the consumer's last restart took to roll out;
	// zero when unknown.
	Rollout time.Duration
}

// Ref is "deployment/web", the way kubectl names objects.
func (c Consumer) Ref() string { return strings.ToLower(string(c.Kind)) + "/" + c.Name }

// Answer is the preflight's reply.
type Answer struct {
	Warnings []string
	Audit    map[string]string
	// Denied is set only in deny mode; Message then says why.
	Denied  bool
	Message string
}

// Outcome is what KICK will do for one consumer.
type Outcome struct {
	Consumer Consumer
	// Text is the sentence without the "kick: " prefix.
	Text string
	// Restart is set when KICK restarts the consumer, now or later.
	Restart bool
	// DenyWindow is set when a Deny window holds the restart back.
	DenyWindow bool
}

// Compose words the answer for in.
func Compose(in Input) Answer {
	if in.CannotAssess != "" {
		return Answer{Warnings: []string{Cap(Prefix + "cannot assess (" + in.CannotAssess + ")")},
			Audit: map[string]string{AuditDecision: "CannotAssess"}}
	}
	outcomes := Outcomes(in)
	if len(outcomes) == 0 && len(in.NotAssessed) == 0 {
		return Answer{}
	}
	a := Answer{Audit: map[string]string{AuditDecision: decision(in, outcomes), AuditConsumers: auditList(outcomes, in.NotAssessed)}}
	if in.Unchanged && in.Operation != Delete {
		a.Warnings = []string{Prefix + "no restart: data unchanged"}
		return a
	}
	plans := plans(in, outcomes)
	if len(plans) > 0 {
		a.Audit[AuditPlan] = strings.Join(plans, "; ")
	}
	for _, p := range plans[:min(len(plans), maxPlans)] {
		a.Warnings = append(a.Warnings, Cap(Prefix+p))
	}
	a.Warnings = append(a.Warnings, warnings(outcomes, len(in.NotAssessed), MaxWarnings-len(a.Warnings))...)
	if in.DenyInDenyWindows && in.Operation == Update && in.Kind == "Secret" {
		for _, o := range outcomes {
			if o.DenyWindow && in.Exempt {
				a.Audit[AuditExempt] = "true"
				break
			}
			if o.DenyWindow {
				a.Denied = true
				a.Message = fmt.Sprintf("kick preflight (deny mode): %s is inside a Deny window; edit this Secret after it ends", o.Consumer.Ref())
				a.Audit[AuditDecision] = "Denied"
				break
			}
		}
	}
	return a
}

func decision(in Input, outcomes []Outcome) string {
	switch {
	case in.Operation == Delete:
		return "ConsumersWillFailToStart"
	case in.Unchanged:
		return "NoRestart"
	}
	for _, o := range outcomes {
		if o.Restart {
			return "Restart"
		}
	}
	if len(in.NotAssessed) > 0 {
		return "NotAllAssessed"
	}
	return "NoRestart"
}

// Outcomes words one sentence per consumer that KICK manages (on delete:
// every consumer). Consumers that no policy selects, or whose policy
// leaves this source out of scope, get none.
func Outcomes(in Input) []Outcome {
	var out []Outcome
	for _, c := range in.Consumers {
		if in.Operation == Delete {
			out = append(out, Outcome{Consumer: c,
				Text: fmt.Sprintf("%s uses this %s: its new pods fail to start without it (unless optional)", c.Ref(), strings.ToLower(in.Kind))})
			continue
		}
		if o, ok := outcome(c, in.Kind); ok {
			out = append(out, o)
		}
	}
	return out
}

// outcome words what KICK does for c after the write; false when KICK does
// not manage c or ignores this source for it.
func outcome(c Consumer, kind string) (Outcome, bool) {
	a := c.Assessment
	o := Outcome{Consumer: c}
	if a == nil {
		return o, false
	}
	switch a.Selection.State {
	case assess.NotSelected:
		return o, false
	case assess.Ambiguous:
		o.Text = fmt.Sprintf("cannot assess %s: several KickPolicies select it (%s)", c.Ref(), strings.Join(a.Selection.Candidates, ", "))
		return o, true
	}
	policy := a.Selection.Policy.Name
	for _, d := range a.Dependencies {
		if d.Kind == kind && d.Scope == assess.ScopeOut {
			return o, false // the policy's dependencySelector leaves it out
		}
	}
	switch a.Verdict {
	case assess.CannotAssess:
		o.Text = fmt.Sprintf("cannot assess %s (%s)", c.Ref(), a.VerdictMessage)
		return o, true
	case assess.Fresh:
		o.Text = fmt.Sprintf("no restart of %s: its pods already carry this change", c.Ref())
		if a.OnlyUnreadKeysChanged(kind) {
			o.Text = fmt.Sprintf("no restart: %s reads only keys that did not change", c.Ref())
		}
		return o, true
	case assess.InProgress:
		o.Restart = true
		o.Text = fmt.Sprintf("restarts %s once its current rollout completes (policy %s)", c.Ref(), policy)
		return o, true
	}
	g := a.Gate
	o.Restart = true
	switch {
	case g.Allowed && g.DryRun:
		o.Restart = false
		o.Text = fmt.Sprintf("no restart of %s: policy %s is a dry run (KICK records what it would do)", c.Ref(), policy)
	case g.Allowed:
		o.Text = fmt.Sprintf("restarts %s now (policy %s)", c.Ref(), policy)
	case g.Stage == assess.StageSuspend:
		o.Restart = false
		o.Text = fmt.Sprintf("no restart of %s while policy %s is suspended", c.Ref(), policy)
	case g.Stage == assess.StageHold:
		o.Text = holdText(c, g)
	case g.Stage == assess.StageSettle:
		o.Text = fmt.Sprintf("restarts %s at %s, once the sources are quiet for restart.settle (policy %s)", c.Ref(), When(g.Until), policy)
	case g.Stage == assess.StageSchedule:
		o.Text, o.DenyWindow = scheduleText(c, g, policy)
	case g.Stage == assess.StageWave && g.Reason == kickv1alpha1.GateEarlierWave:
		o.Text = fmt.Sprintf("restarts %s after the earlier waves of policy %s (restart.waves)", c.Ref(), policy)
	case g.Stage == assess.StageMinInterval:
		o.Text = fmt.Sprintf("restarts %s at %s, when restart.minInterval has passed (policy %s)", c.Ref(), When(g.Until), policy)
	case g.Stage == assess.StageGitOps && g.Reason == "":
		o.Text = fmt.Sprintf("restarts %s if the GitOps gate allows it (policy %s)", c.Ref(), policy)
	default:
		o.Text = gitOpsText(c, g, a.Selection.Policy)
	}
	return o, true
}

func scheduleText(c Consumer, g assess.Gate, policy string) (string, bool) {
	s, _ := g.StageResult(assess.StageSchedule)
	switch {
	case g.Reason == kickv1alpha1.GateConfigurationError:
		return fmt.Sprintf("no restart of %s: the schedule of policy %s has an error", c.Ref(), policy), false
	case s.DenyWindow && !g.Until.IsZero():
		return fmt.Sprintf("restarts %s when the Deny window ends at %s", c.Ref(), When(g.Until)), true
	case s.DenyWindow:
		return fmt.Sprintf("restarts %s when the Deny window ends", c.Ref()), true
	case g.Until.IsZero():
		return fmt.Sprintf("no restart of %s: no Allow window of policy %s opens again", c.Ref(), policy), false
	}
	return fmt.Sprintf("restarts %s when an Allow window opens at %s", c.Ref(), When(g.Until)), false
}

// holdText words a KickHold that holds the restart back: its name and
// when it ends first, its reason (tenant text, cut first) last.
func holdText(c Consumer, g assess.Gate) string {
	s, _ := g.StageResult(assess.StageHold)
	h := s.Held
	if h == nil {
		return fmt.Sprintf("restarts %s once the hold stage opens (%s)", c.Ref(), g.Message)
	}
	ends := "is released"
	if !h.ExpiresAt.IsZero() {
		ends = "is released or expires (" + When(h.ExpiresAt) + ")"
	}
	return fmt.Sprintf("restarts %s once KickHold %s %s: %q", c.Ref(), h.Name, ends, h.Reason)
}

// gitOpsText words a GitOps stage that holds the restart back.
func gitOpsText(c Consumer, g assess.Gate, p *kickv1alpha1.KickPolicy) string {
	owner := ownerName(g)
	switch g.Reason {
	case kickv1alpha1.GateOwnerOutOfSync:
		return fmt.Sprintf("restarts %s after %s is Synced", c.Ref(), owner)
	case kickv1alpha1.GateOutsideSchedule:
		closed := "sync window closed"
		if !g.Until.IsZero() {
			closed += " until " + When(g.Until)
		}
		if requireReconciled(p) {
			return fmt.Sprintf("restarts %s after %s is Synced (%s)", c.Ref(), owner, closed)
		}
		return fmt.Sprintf("restarts %s when %s may sync (%s)", c.Ref(), owner, closed)
	case kickv1alpha1.GateOwnerReconciling:
		return fmt.Sprintf("restarts %s after %s is reconciled and Ready", c.Ref(), owner)
	case kickv1alpha1.GateOwnerSuspended:
		return fmt.Sprintf("restarts %s after %s is resumed", c.Ref(), owner)
	case kickv1alpha1.GatePromotionRunning:
		return fmt.Sprintf("restarts %s after the running promotion of %s ends", c.Ref(), owner)
	}
	return fmt.Sprintf("restarts %s once the GitOps gate opens (%s: %s)", c.Ref(), g.Reason, g.Message)
}

// requireReconciled is the policy's spec.gitOps.requireReconciled (true
// when unset).
func requireReconciled(p *kickv1alpha1.KickPolicy) bool {
	r := p.Spec.GitOps
	return r == nil || r.RequireReconciled == nil || *r.RequireReconciled
}

// ownerName is "Argo CD app shop-api", "Flux Kustomization apps", ...
func ownerName(g assess.Gate) string {
	if g.Owner == nil {
		return "its " + string(g.Provider) + " owner"
	}
	switch g.Owner.Provider {
	case kickv1alpha1.ProviderArgoCD:
		return "Argo CD app " + g.Owner.Name
	case kickv1alpha1.ProviderFlux:
		return "Flux " + g.Owner.Kind + " " + g.Owner.Name
	case kickv1alpha1.ProviderKargo:
		return "Kargo " + g.Owner.Kind + " " + g.Owner.Name
	}
	return g.Owner.Kind + " " + g.Owner.Name
}

// When renders an instant the short way: 2026-12-02T02:00Z (seconds only
// when there are some), in UTC.
func When(t time.Time) string {
	t = t.UTC()
	if t.Second() == 0 && t.Nanosecond() == 0 {
		return t.Format("2006-01-02T15:04Z")
	}
	return t.Format("2006-01-02T15:04:05Z")
}

// plans words the plan of each policy that restarts more than one
// workload: how many at a time, in which waves, about how long.
func plans(in Input, outcomes []Outcome) []string {
	var restarts []plan.Restart
	for _, o := range outcomes {
		if a := o.Consumer.Assessment; o.Restart && a != nil && a.Selection.Policy != nil {
			restarts = append(restarts, plan.Restart{Policy: a.Selection.Policy, Labels: a.Target.Labels, Rollout: o.Consumer.Rollout})
		}
	}
	var out []string
	for _, p := range plan.Make(plan.Input{Restarts: restarts, ClusterLimit: in.ClusterLimit}) {
		if p.Workloads > 1 {
			out = append(out, fmt.Sprintf("plan of policy %s: %s", p.Policy, p))
		}
	}
	if len(out) > 0 && len(in.NotAssessed) > 0 {
		out[0] += fmt.Sprintf(", and %d consumers not assessed", len(in.NotAssessed))
	}
	return out
}

// warnings lists the outcomes, one warning each, summarising the rest
// (and the consumers not assessed) beyond max warnings.
func warnings(outcomes []Outcome, notAssessed, max int) []string {
	n := len(outcomes)
	shown := n
	if n > max || notAssessed > 0 && n >= max {
		shown = max - 1
	}
	w := make([]string, 0, shown+1)
	for _, o := range outcomes[:shown] {
		w = append(w, Cap(Prefix+o.Text))
	}
	restarts := 0
	for _, o := range outcomes[shown:] {
		if o.Restart {
			restarts++
		}
	}
	switch more := n - shown; {
	case more > 0 && notAssessed > 0:
		w = append(w, Cap(fmt.Sprintf("%s… and %d more (%d of them restart) and %d not assessed (over %d consumers); see the audit annotation",
			Prefix, more, restarts, notAssessed, MaxAssessed)))
	case more > 0:
		w = append(w, Cap(fmt.Sprintf("%s… and %d more (%d of them restart; see the audit annotation)", Prefix, more, restarts)))
	case notAssessed > 0:
		w = append(w, Cap(fmt.Sprintf("%s… and %d more consumers, not assessed (over %d); see the audit annotation", Prefix, notAssessed, MaxAssessed)))
	}
	return w
}

// auditList is every outcome, "deployment/web: restarts … ; …", then the
// consumers not assessed by name, bounded by MaxAudit.
func auditList(outcomes []Outcome, notAssessed []Consumer) string {
	var b strings.Builder
	entries := len(outcomes) + len(notAssessed)
	for i := range entries {
		var entry string
		switch {
		case i < len(outcomes):
			entry = outcomes[i].Text
		case i == len(outcomes):
			entry = "not assessed: " + notAssessed[0].Ref()
		default:
			entry = notAssessed[i-len(outcomes)].Ref()
		}
		if i > 0 {
			entry = "; " + entry
		}
		if b.Len()+len(entry) > MaxAudit-40 {
			fmt.Fprintf(&b, "; … and %d more", entries-i)
			break
		}
		b.WriteString(entry)
	}
	return b.String()
}

// Cap shortens s to MaxWarning characters, ending it with "…" when cut.
func Cap(s string) string {
	if utf8.RuneCountInString(s) <= MaxWarning {
		return s
	}
	r := []rune(s)
	return string(r[:MaxWarning-1]) + "…"
}
