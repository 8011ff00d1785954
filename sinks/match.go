package sinks

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/router"
)

// matcher decides which events of its namespace a policy delivers: phase changes into one of
// its phases and, when it asks for them, gate changes; both only about target workloads its
// selector matches. The zero matcher matches nothing. It is immutable, so router filters may
// read it on any goroutine.
type matcher struct {
	phases   map[string]bool
	gates    bool
	selector labels.Selector
}

// newMatcher compiles spec.phases, spec.gateChanges and spec.workloadSelector. Without phases
// (the CRD defaults them, so only objects built elsewhere lack them) the terminal phases apply.
// A nil or empty selector selects every workload. An invalid selector returns an error and a
// matcher that matches nothing.
func newMatcher(spec kickv1alpha1.NotificationPolicySpec) (matcher, error) {
	phases := spec.Phases
	if len(phases) == 0 {
		phases = kickv1alpha1.TerminalPhases()
	}
	m := matcher{phases: make(map[string]bool, len(phases)), gates: spec.GateChanges, selector: labels.Everything()}
	for _, p := range phases {
		m.phases[string(p)] = true
	}
	if s := spec.WorkloadSelector; s != nil && (len(s.MatchLabels) > 0 || len(s.MatchExpressions) > 0) {
		sel, err := metav1.LabelSelectorAsSelector(s)
		if err != nil {
			return matcher{}, fmt.Errorf("spec.workloadSelector is invalid: %w", err)
		}
		m.selector = sel
	}
	return m, nil
}

// matches reports whether the policy delivers ev. The caller checks the namespace.
func (m matcher) matches(ev router.Event) bool {
	if m.selector == nil {
		return false
	}
	switch e := ev.(type) {
	case router.PhaseChanged:
		return m.phases[e.To] && m.selector.Matches(labels.Set(e.TargetLabels))
	case router.GateChanged:
		return m.gates && m.selector.Matches(labels.Set(e.TargetLabels))
	}
	return false
}

// namespaceOf is the namespace of the KickRequest an event is about, "" for other events.
func namespaceOf(ev router.Event) string {
	switch e := ev.(type) {
	case router.PhaseChanged:
		return e.Request.Namespace
	case router.GateChanged:
		return e.Request.Namespace
	}
	return ""
}
