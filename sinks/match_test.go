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
