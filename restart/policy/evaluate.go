package policy

import (
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/schedule"
)

// Reasons of a KickPolicy's Ready condition (type kickv1alpha1.ConditionReady).
const (
	// ReasonReady: the policy is valid and no workload it selects is
	// contested by another policy.
	ReasonReady = "Ready"
	// ReasonInvalidSchedule: a schedule window does not compile (cron
	// expression, duration, type or time zone); the message names the window.
	ReasonInvalidSchedule = kickv1alpha1.ReasonInvalidSchedule
	// ReasonInvalidSelector: the workloadSelector or dependencySelector
	// cannot be converted; the message names which.
	ReasonInvalidSelector = "InvalidSelector"
	// ReasonAmbiguous: some workloads the policy selects are selected by
	// another policy too, so KICK restarts none of them.
	ReasonAmbiguous = "Ambiguous"
	// ReasonProviderUnavailable: spec.gitOps.provider names an integration
	// that is not active in this manager; its requests wait.
	ReasonProviderUnavailable = string(kickv1alpha1.GateProviderUnavailable)
)

// Message of Ready=True on a suspended policy.
const suspendedMessage = "suspended: no restarts"

// Evaluation is the status a policy should carry, given the policies and
// workloads of its namespace.
type Evaluation struct {
	// Matched counts the workloads this policy alone selects.
	Matched int32
	// Ambiguous counts the workloads this policy selects together with
	// another policy; none of them is restarted.
	Ambiguous int32
	// SharedWith names, sorted, the other policies selecting the blocked
	// workloads.
	SharedWith []string
	// Ready is the Ready condition, without LastTransitionTime.
	Ready metav1.Condition
}

// Evaluate computes p's counts and Ready condition. policies are the
// policies of p's namespace (p itself may be among them, it is recognised
// by name) and workloads its Deployments, StatefulSets and DaemonSets.
// Policies being deleted are ignored, as in Select.
func Evaluate(p *kickv1alpha1.KickPolicy, policies []kickv1alpha1.KickPolicy, workloads []Workload) Evaluation {
	self, selfErr := compiled(p)
	type other struct {
		name string
		c    *Compiled
	}
	others := make([]other, 0, len(policies))
	for i := range policies {
		q := &policies[i]
		if q.Name == p.Name || q.DeletionTimestamp != nil {
			continue
		}
		c, _ := compiled(q)
		others = append(others, other{q.Name, c})
	}

	var ev Evaluation
	shared := map[string]struct{}{}
	for _, w := range workloads {
		if !self.MatchesWorkload(w.Labels) {
			continue
		}
		contested := false
		for _, o := range others {
			if o.c.MatchesWorkload(w.Labels) {
				contested = true
				shared[o.name] = struct{}{}
			}
		}
		if contested {
			ev.Ambiguous++
		} else {
			ev.Matched++
		}
	}
	for name := range shared {
		ev.SharedWith = append(ev.SharedWith, name)
	}
	sort.Strings(ev.SharedWith)
	ev.Ready = readyCondition(p, selfErr, ev)
	return ev
}

// readyCondition reports every problem found, in order schedule, selectors,
// ambiguity; the first one gives the reason.
func readyCondition(p *kickv1alpha1.KickPolicy, selectorErr error, ev Evaluation) metav1.Condition {
	var reason string
	var problems []string
	add := func(r, msg string) {
		if reason == "" {
			reason = r
		}
		problems = append(problems, msg)
	}
	if p.Spec.Schedule != nil {
		if _, err := schedule.Compile(p.Spec.Schedule.Windows); err != nil {
			add(ReasonInvalidSchedule, "spec.schedule: "+oneLine(err))
		}
	}
	if selectorErr != nil {
		add(ReasonInvalidSelector, oneLine(selectorErr))
	}
	if ev.Ambiguous > 0 {
		add(ReasonAmbiguous, ambiguousMessage(ev))
	}

	c := metav1.Condition{Type: kickv1alpha1.ConditionReady, ObservedGeneration: p.Generation}
	switch {
	case reason != "":
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, reason, strings.Join(problems, "; ")
	case p.Spec.Suspend:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, ReasonReady, suspendedMessage
	default:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, ReasonReady, "the policy is valid and alone selects each workload it matches"
	}
	return c
}

func ambiguousMessage(ev Evaluation) string {
	policies := "policy "
	if len(ev.SharedWith) > 1 {
		policies = "policies "
	}
	policies += joinNames(ev.SharedWith)
	if ev.Ambiguous == 1 {
		return fmt.Sprintf("1 workload is also selected by %s; restarts for it are blocked until one policy selects it", policies)
	}
	return fmt.Sprintf("%d workloads are also selected by %s; restarts for them are blocked until one policy selects them", ev.Ambiguous, policies)
}

// oneLine flattens errors.Join output (one error per line).
func oneLine(err error) string {
	return strings.ReplaceAll(strings.TrimSpace(err.Error()), "\n", "; ")
}

// WithProvider lowers an otherwise Ready condition to Ready=False with
// ReasonProviderUnavailable when the policy's GitOps provider is not active
// (available reports that), so the policy says why its requests wait.
func WithProvider(c metav1.Condition, p *kickv1alpha1.KickPolicy, available func(kickv1alpha1.GitOpsProvider) (bool, string)) metav1.Condition {
	if available == nil || c.Status != metav1.ConditionTrue {
		return c
	}
	if ok, why := available(p.Spec.EffectiveProvider()); !ok {
		c.Status, c.Reason = metav1.ConditionFalse, ReasonProviderUnavailable
		c.Message = why + "; restarts under this policy wait until the integration is enabled (the manager detects integrations when it starts)"
	}
	return c
}
