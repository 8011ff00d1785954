package policy

import (
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
)

func TestEvaluate(t *testing.T) {
	web, api := dep("web", "app", "web"), dep("api", "app", "api")
	sts := Workload{Kind: kickv1alpha1.TargetStatefulSet, Namespace: ns, Name: "db", Labels: lbl("app", "web")}
	ds := Workload{Kind: kickv1alpha1.TargetDaemonSet, Namespace: ns, Name: "agent", Labels: lbl("app", "web")}
	selectWeb := workloads(match("app", "web"))
	cases := []struct {
		name      string
		p         kickv1alpha1.KickPolicy
		others    []kickv1alpha1.KickPolicy
		workloads []Workload

		matched, blocked int32
		shared           []string
		status           metav1.ConditionStatus
		reason           string
		message          []string
	}{
		{name: "sole selector", p: pol("p", selectWeb), workloads: []Workload{web, api},
			matched: 1, status: metav1.ConditionTrue, reason: ReasonReady},
		{name: "no workloads", p: pol("p"),
			status: metav1.ConditionTrue, reason: ReasonReady},
		{name: "every kind counts", p: pol("p", selectWeb), workloads: []Workload{web, sts, ds, api},
			matched: 3, status: metav1.ConditionTrue, reason: ReasonReady},
		{name: "contested by a select-all policy", p: pol("p", selectWeb), others: []kickv1alpha1.KickPolicy{pol("all")}, workloads: []Workload{web, api},
			blocked: 1, shared: []string{"all"}, status: metav1.ConditionFalse, reason: ReasonAmbiguous,
			message: []string{"1 workload is also selected by policy all; restarts for it are blocked until one policy selects it"}},
		{name: "the select-all side", p: pol("all"), others: []kickv1alpha1.KickPolicy{pol("p", selectWeb)}, workloads: []Workload{web, api, sts},
			matched: 1, blocked: 2, shared: []string{"p"}, status: metav1.ConditionFalse, reason: ReasonAmbiguous,
			message: []string{"2 workloads are also selected by policy p; restarts for them are blocked until one policy selects them"}},
		{name: "several contenders, sorted", p: pol("p"), others: []kickv1alpha1.KickPolicy{pol("zz", selectWeb), pol("aa", workloads(match("app", "api"))), pol("mm", workloads(match("app", "none")))},
			workloads: []Workload{web, api}, blocked: 2, shared: []string{"aa", "zz"}, status: metav1.ConditionFalse, reason: ReasonAmbiguous,
			message: []string{"by policies aa and zz"}},
		{name: "own stale copy in the list is not a contender", p: pol("p", selectWeb, generation(2)), others: []kickv1alpha1.KickPolicy{pol("p")}, workloads: []Workload{web, api},
			matched: 1, status: metav1.ConditionTrue, reason: ReasonReady},
		{name: "deleted contender ignored", p: pol("p", selectWeb), others: []kickv1alpha1.KickPolicy{pol("old", deleting)}, workloads: []Workload{web},
			matched: 1, status: metav1.ConditionTrue, reason: ReasonReady},
		{name: "contender with invalid selector ignored", p: pol("p", selectWeb), others: []kickv1alpha1.KickPolicy{pol("broken", workloads(invalid))}, workloads: []Workload{web},
			matched: 1, status: metav1.ConditionTrue, reason: ReasonReady},
		{name: "invalid workloadSelector", p: pol("p", workloads(invalid)), workloads: []Workload{web},
			status: metav1.ConditionFalse, reason: ReasonInvalidSelector, message: []string{"spec.discovery.workloadSelector is invalid"}},
		{name: "invalid dependencySelector", p: pol("p", selectWeb, deps(invalid)), workloads: []Workload{web},
			matched: 1, status: metav1.ConditionFalse, reason: ReasonInvalidSelector, message: []string{"spec.discovery.dependencySelector is invalid"}},
		{name: "bad cron", p: pol("p", windows(allow("61 * * * *", "1h", ""))),
			status: metav1.ConditionFalse, reason: ReasonInvalidSchedule, message: []string{"spec.schedule: window 0:", `"61 * * * *"`}},
		{name: "unknown time zone", p: pol("p", windows(allow("0 2 * * *", "1h", "Mars/Olympus"))),
			status: metav1.ConditionFalse, reason: ReasonInvalidSchedule, message: []string{"window 0:", "Mars/Olympus"}},
		{name: "second window bad", p: pol("p", windows(allow("0 2 * * *", "1h", "Europe/Berlin"), allow("0 2 31 2 *", "1h", ""))),
			status: metav1.ConditionFalse, reason: ReasonInvalidSchedule, message: []string{"window 1:"}},
		{name: "two problems in one window, one line", p: pol("p", windows(allow("61 * * * *", "1h", "Mars/Olympus"))),
			status: metav1.ConditionFalse, reason: ReasonInvalidSchedule, message: []string{"Mars/Olympus", "61 * * * *"}},
		{name: "valid schedule", p: pol("p", windows(allow("0 2 * * 1-5", "90m", "Europe/Berlin"))),
			status: metav1.ConditionTrue, reason: ReasonReady},
		{name: "schedule first, then ambiguity", p: pol("p", windows(allow("61 * * * *", "1h", ""))), others: []kickv1alpha1.KickPolicy{pol("all")}, workloads: []Workload{web},
			blocked: 1, shared: []string{"all"}, status: metav1.ConditionFalse, reason: ReasonInvalidSchedule, message: []string{"window 0", "also selected by policy all"}},
		{name: "suspended is ready", p: pol("p", suspended), workloads: []Workload{web},
			matched: 1, status: metav1.ConditionTrue, reason: ReasonReady, message: []string{"suspended: no restarts"}},
		{name: "suspended and contested", p: pol("p", suspended), others: []kickv1alpha1.KickPolicy{pol("all")}, workloads: []Workload{web},
			blocked: 1, shared: []string{"all"}, status: metav1.ConditionFalse, reason: ReasonAmbiguous},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ps := append([]kickv1alpha1.KickPolicy{tc.p}, tc.others...)
			// p's own entry in the list is skipped by name, so list the
			// others only when p's copy there differs on purpose.
			if len(tc.others) > 0 && tc.others[0].Name == tc.p.Name {
				ps = tc.others
			}
			ev := Evaluate(&tc.p, ps, tc.workloads)
			if ev.Matched != tc.matched || ev.Ambiguous != tc.blocked || !slices.Equal(ev.SharedWith, tc.shared) {
				t.Errorf("matched=%d blocked=%d shared=%v, want %d %d %v", ev.Matched, ev.Ambiguous, ev.SharedWith, tc.matched, tc.blocked, tc.shared)
			}
			c := ev.Ready
			if c.Type != kickv1alpha1.ConditionReady || c.Status != tc.status || c.Reason != tc.reason || c.ObservedGeneration != tc.p.Generation {
				t.Errorf("condition %+v, want Ready=%s reason %s generation %d", c, tc.status, tc.reason, tc.p.Generation)
			}
			if c.Message == "" || strings.Contains(c.Message, "\n") {
				t.Errorf("message must be one non-empty line: %q", c.Message)
			}
			for _, m := range tc.message {
				if !strings.Contains(c.Message, m) {
					t.Errorf("message %q does not contain %q", c.Message, m)
				}
			}
		})
	}
}

func TestWithProvider(t *testing.T) {
	ready := metav1.Condition{Type: kickv1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: ReasonReady}
	argo := &kickv1alpha1.KickPolicy{Spec: kickv1alpha1.KickPolicySpec{GitOps: &kickv1alpha1.GitOpsSpec{Provider: kickv1alpha1.ProviderArgoCD}}}
	none := func(kickv1alpha1.GitOpsProvider) (bool, string) {
		return false, "provider ArgoCD is not active in this manager"
	}
	all := func(kickv1alpha1.GitOpsProvider) (bool, string) { return true, "" }

	if c := WithProvider(ready, argo, none); c.Status != metav1.ConditionFalse || c.Reason != ReasonProviderUnavailable ||
		!strings.Contains(c.Message, "ArgoCD is not active") {
		t.Errorf("unavailable provider: got %+v", c)
	}
	if c := WithProvider(ready, argo, all); c != ready {
		t.Errorf("available provider changed the condition: %+v", c)
	}
	invalid := metav1.Condition{Type: kickv1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: ReasonInvalidSchedule}
	if c := WithProvider(invalid, argo, none); c != invalid {
		t.Errorf("an invalid policy keeps its own reason, got %+v", c)
	}
}
