package assess

import (
	"fmt"

	"github.com/kick-operator/kick/restart/freshness"
)

// summarize is the one-line answer for people.
func summarize(a *Assessment) string {
	switch a.Verdict {
	case CannotAssess:
		return "cannot assess: " + a.VerdictMessage
	case Fresh:
		return "nothing to do: fresh"
	case InProgress:
		reason := a.Rollout.Reason
		if reason == "" {
			reason = freshness.RolloutInProgress
		}
		s := "waiting for " + reason
		if a.Rollout.Message != "" {
			s += ": " + a.Rollout.Message
		}
		return s
	}
	g := a.Gate
	switch {
	case g.Allowed && g.DryRun:
		return "would restart now (dry run: KICK records phase DryRun and patches nothing)"
	case g.Allowed:
		return "would restart now"
	case g.Reason == "":
		return fmt.Sprintf("would restart now if the GitOps gate allows it (provider %s)", a.Selection.Policy.Spec.EffectiveProvider())
	}
	s := fmt.Sprintf("waiting for %s", g.Reason)
	if !g.Until.IsZero() {
		s += " until " + formatTime(g.Until)
	}
	return s
}
