package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/assess"
)

// printExplanation prints an explanation for people: one "Label: value"
// line per part, the dependencies as a table, the one-line summary last.
func printExplanation(out io.Writer, e *explanation) {
	line := func(label, format string, a ...any) {
		fmt.Fprintf(out, "%-15s %s\n", label+":", fmt.Sprintf(format, a...))
	}
	line("Workload", "%s %s/%s", e.Kind, e.Namespace, e.Name)
	switch e.Policy.Selection {
	case string(assess.Selected):
		line("KickPolicy", "%s", e.Policy.Name)
	case string(assess.NotSelected):
		line("KickPolicy", "not selected by any KickPolicy in %s", e.Namespace)
	default:
		line("KickPolicy", "selected by several: %s — KICK will not restart it (%s)", strings.Join(e.Policy.Candidates, ", "), kickv1alpha1.GateAmbiguousPolicy)
	}

	if len(e.Dependencies) == 0 {
		line("Dependencies", "none: the pod template consumes no Secret or ConfigMap")
	} else {
		fmt.Fprintln(out, "Dependencies:")
		tw := tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)
		for _, d := range e.Dependencies {
			fields := strings.Join(d.Fields, ",")
			if fields == "" {
				fields = "-"
			}
			fmt.Fprintf(tw, "  %s/%s\t%s\t%s\t%s\n", d.Kind, d.Name, fields, scopeText(d), recordText(d))
		}
		_ = tw.Flush()
	}

	line("Rollout", "%s", rolloutText(e.Rollout))
	if e.Policy.Selection == string(assess.Selected) {
		line("Latest change", "%s", latestChangeText(e.LatestChange))
	} else {
		line("Latest change", "unknown: without a single KickPolicy the dependency scope is unknown (Λ)")
	}
	line("Verdict", "%s: %s", verdictText(e.Verdict), e.VerdictMessage)

	if g := e.Gate; g == nil {
		line("Gate", "not evaluated: no single KickPolicy selects the workload")
	} else {
		fmt.Fprintf(out, "Gate (evaluated at %s):\n", formatTime(e.EvaluatedAt))
		sub := func(label, format string, a ...any) {
			fmt.Fprintf(out, "  %-13s %s\n", label+":", fmt.Sprintf(format, a...))
		}
		if g.Suspend {
			sub("suspend", "closed: waiting for %s (the policy starts no restarts until spec.suspend is unset)", kickv1alpha1.GateSuspended)
		} else {
			sub("suspend", "no")
		}
		sub("hold", "%s", holdText(g.Hold))
		sub("settle", "%s", stageText(g.Settle))
		sub("schedule", "%s", scheduleText(g.Schedule))
		sub("minInterval", "%s", minIntervalText(g.MinInterval))
		sub("halt", "%s", stageText(g.Halt))
		sub("waves", "%s", stageText(g.Waves))
		sub("gitOps", "%s", gitOpsText(g.GitOps))
		sub("budget", "%s", stageText(g.Budget))
		if g.DryRun {
			sub("dryRun", "yes: KICK records phase DryRun and patches nothing")
		} else {
			sub("dryRun", "no")
		}
	}

	switch {
	case e.Request != nil:
		line("KickRequest", "%s", requestText(e.Request))
	case e.RequestError != "":
		line("KickRequest", "cannot read: %s", e.RequestError)
	default:
		line("KickRequest", "none for this workload")
	}
	line("Summary", "%s", e.Summary)
}

func scopeText(d dependencyResult) string {
	switch d.Scope {
	case assess.ScopeIn:
		return "in scope"
	case assess.ScopeOut:
		return "out of scope (" + d.ScopeDetail + ")"
	case assess.ScopeNotCounted:
		return "not counted (" + d.ScopeDetail + ")"
	}
	return "scope unknown (" + d.ScopeDetail + ")"
}

func recordText(d dependencyResult) string {
	var parts []string
	if d.SourceMissing {
		parts = append(parts, "source missing")
	} else if d.SourceError != "" {
		parts = append(parts, "source unreadable: "+d.SourceError)
	}
	switch d.Record {
	case assess.RecordNotCounted:
		if len(parts) == 0 {
			return "-"
		}
	case assess.RecordNone:
		parts = append(parts, "no record yet (baseline not observed)")
	case assess.RecordUnreadable:
		parts = append(parts, "record unreadable: "+d.RecordError)
	case assess.RecordRelevant, assess.RecordBaseline:
		parts = append(parts, changeText(d))
	}
	if d.KeysRead != nil {
		of := ""
		if d.KeyEntries != nil {
			of = fmt.Sprintf(" of %d", *d.KeyEntries)
		}
		parts = append(parts, fmt.Sprintf("reads %d%s keys", *d.KeysRead, of))
		if d.KeyLevel != "" {
			parts = append(parts, d.KeyLevel)
		}
		if len(d.Keys) > 0 {
			parts = append(parts, keysText(d.Keys))
		}
	}
	return strings.Join(parts, "; ")
}

func changeText(d dependencyResult) string {
	if d.LastRelevantChange == nil {
		return "record has no change time"
	}
	if d.Record == assess.RecordRelevant {
		return "changed at " + formatTime(*d.LastRelevantChange) + " (seen by KICK)"
	}
	if d.LastRelevantChangeBy != nil {
		return fmt.Sprintf("changed between %s and %s (baseline: the source's last write, recorded to the second)",
			formatTime(*d.LastRelevantChange), formatTime(*d.LastRelevantChangeBy))
	}
	return "changed at " + formatTime(*d.LastRelevantChange) + " (baseline: the source's last write)"
}

func rolloutText(r rolloutResult) string {
	if r.Error != "" {
		return "cannot inspect: " + r.Error
	}
	start := "start unknown"
	if r.Start != nil {
		start = "started " + formatTime(*r.Start) + " (σ)"
	}
	if r.Complete {
		return start + "; complete: " + r.Message
	}
	s := start + "; in progress (" + orDefault(r.Reason, "RolloutInProgress") + ")"
	if r.Message != "" {
		s += ": " + r.Message
	}
	return s
}

func latestChangeText(c *changeResult) string {
	if c == nil {
		return "none recorded for a dependency in scope (Λ)"
	}
	if c.Latest.After(c.Earliest) {
		return fmt.Sprintf("between %s and %s (Λ, from %s)", formatTime(c.Earliest), formatTime(c.Latest), c.From)
	}
	return fmt.Sprintf("%s (Λ, from %s)", formatTime(c.Earliest), c.From)
}

func verdictText(v string) string {
	switch v {
	case string(assess.Fresh):
		return "fresh"
	case string(assess.Stale):
		return "stale"
	case string(assess.InProgress):
		return "rollout in progress"
	}
	return "cannot assess"
}

// stageText is one gate stage's answer: open, or the reason it waits for.
func stageText(s stageResult) string {
	if s.Open {
		return "open: " + s.Message
	}
	w := "closed: waiting for " + s.Reason
	if s.Next != nil {
		w += " until " + formatTime(*s.Next)
	}
	return w + " (" + s.Message + ")"
}

// holdText is the hold stage's answer; "unknown" when the KickHolds could
// not be read.
func holdText(s stageResult) string {
	if s.Reason == gateUnknown {
		return "unknown: " + s.Message
	}
	return stageText(s)
}

func scheduleText(s scheduleResult) string {
	switch {
	case s.Open:
		return "open: " + s.Message
	case s.Reason == string(kickv1alpha1.GateOutsideSchedule):
		w := "closed: waiting for OutsideSchedule"
		if s.Next != nil {
			w += " until " + formatTime(*s.Next)
		}
		return w + " (" + s.Message + ")"
	}
	return s.Reason + ": " + s.Message
}

func gitOpsText(g gitOpsResult) string {
	s := "provider " + g.Provider + ": " + g.Message
	if r := g.Recorded; r != nil {
		s += "; last decision on kickrequest/" + r.Request + ": " + r.Reason
		if r.Message != "" {
			s += ": " + r.Message
		}
		if r.RequeueAt != nil {
			s += " (requeue at " + formatTime(*r.RequeueAt) + ")"
		}
		if o := r.Owner; o != nil {
			s += fmt.Sprintf("; owner %s %s/%s", o.Kind, o.Namespace, o.Name)
		}
	}
	return s
}

func minIntervalText(m minIntervalResult) string {
	if m.LastRestart == nil {
		return m.Interval + ": no restart stamp on the pod template"
	}
	s := fmt.Sprintf("%s: last restart stamped %s", m.Interval, formatTime(*m.LastRestart))
	if m.Elapsed {
		return s + "; elapsed"
	}
	return s + "; waiting for MinIntervalNotElapsed until " + formatTime(*m.NextAllowed)
}

func requestText(r *requestResult) string {
	which := "last"
	if r.Open {
		which = "open"
	}
	s := fmt.Sprintf("%s (%s), phase %s", r.Name, which, r.Phase)
	switch {
	case r.Reason != "" && r.Message != "":
		s += ", reason " + r.Reason + ": " + r.Message
	case r.Reason != "":
		s += ", reason " + r.Reason
	}
	if r.RequeueAt != nil {
		s += "; requeue at " + formatTime(*r.RequeueAt)
	}
	if r.CompletionTime != nil {
		s += "; finished " + r.CompletionTime.UTC().Format(time.RFC3339)
	}
	return s
}
