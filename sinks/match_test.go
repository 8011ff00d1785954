package sinks

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/router"
)

func TestMatcher(t *testing.T) {
	ev := func(to string, labels map[string]string) router.PhaseChanged {
		return router.PhaseChanged{To: to, TargetLabels: labels}
	}
	web := map[string]string{"app": "web", "tier": "front"}
	db := map[string]string{"app": "db"}

	m, err := newMatcher(kickv1alpha1.NotificationPolicySpec{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range kickv1alpha1.TerminalPhases() {
		if !m.matches(ev(string(p), nil)) {
			t.Errorf("default phases miss %s", p)
		}
	}
	if m.matches(ev("Executing", web)) || m.matches(ev("Pending", nil)) {
		t.Error("default phases match a non-terminal phase")
	}

	m, err = newMatcher(kickv1alpha1.NotificationPolicySpec{
		Phases:           []kickv1alpha1.KickRequestPhase{kickv1alpha1.PhaseFailed, kickv1alpha1.PhaseWaitingForGate},
		WorkloadSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		ev   router.PhaseChanged
		want bool
	}{
		{ev("Failed", web), true},
		{ev("WaitingForGate", web), true},
		{ev("Succeeded", web), false},
		{ev("Failed", db), false},
		{ev("Failed", nil), false},
	} {
		if got := m.matches(c.ev); got != c.want {
			t.Errorf("matches(%s, %v) = %v, want %v", c.ev.To, c.ev.TargetLabels, got, c.want)
		}
	}

	m, err = newMatcher(kickv1alpha1.NotificationPolicySpec{WorkloadSelector: &metav1.LabelSelector{
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"front"}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if m.matches(ev("Succeeded", web)) || !m.matches(ev("Succeeded", db)) {
		t.Error("NotIn expression misapplied")
	}

	m, err = newMatcher(kickv1alpha1.NotificationPolicySpec{WorkloadSelector: &metav1.LabelSelector{}})
	if err != nil || !m.matches(ev("Succeeded", nil)) {
		t.Errorf("an empty selector must select everything (err %v)", err)
	}

	m, err = newMatcher(kickv1alpha1.NotificationPolicySpec{WorkloadSelector: &metav1.LabelSelector{
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Near"}},
	}})
	if err == nil || m.matches(ev("Succeeded", web)) {
		t.Errorf("an invalid selector must fail and match nothing (err %v)", err)
	}
}

// Gate changes reach only policies that ask for them, through the same workload selector; the
// router filter also checks the namespace.
func TestMatcherGateChanges(t *testing.T) {
	gate := func(labels map[string]string) router.GateChanged {
		return router.GateChanged{Request: router.RequestRef{Namespace: testNS, Name: "r"}, TargetLabels: labels, Reason: "OutsideSchedule"}
	}
	web, db := map[string]string{"app": "web"}, map[string]string{"app": "db"}
	def, err := newMatcher(kickv1alpha1.NotificationPolicySpec{})
	if err != nil {
		t.Fatal(err)
	}
	if def.matches(gate(web)) || def.matches(gate(nil)) {
		t.Error("a policy without gateChanges matches a gate change")
	}
	m, err := newMatcher(kickv1alpha1.NotificationPolicySpec{
		GateChanges:      true,
		Phases:           []kickv1alpha1.KickRequestPhase{kickv1alpha1.PhaseFailed},
		WorkloadSelector: &metav1.LabelSelector{MatchLabels: web},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !m.matches(gate(web)) || m.matches(gate(db)) || m.matches(gate(nil)) {
		t.Error("gateChanges with a selector: want only the selected workload's gate changes")
	}
	if !m.matches(router.PhaseChanged{To: "Failed", TargetLabels: web}) || m.matches(router.PhaseChanged{To: "Succeeded", TargetLabels: web}) {
		t.Error("gateChanges changed phase matching")
	}
	if m.matches(router.SourceChanged{}) {
		t.Error("a source change matches")
	}

	st := newPolicyState(policy("https://hooks.example.com/"))
	if st.wants(gate(web)) {
		t.Error("a policy wants events before the reconciler set what it delivers")
	}
	st.sel.Store(&selection{match: m})
	elsewhere := gate(web)
	elsewhere.Request.Namespace = "elsewhere"
	if !st.wants(gate(web)) || st.wants(elsewhere) {
		t.Error("the router filter must take gate changes of the policy's namespace only")
	}
	st.sel.Store(&selection{match: m, suspended: true})
	if st.wants(gate(web)) {
		t.Error("a suspended policy wants events")
	}
}
