package policy

import (
	"fmt"
	"sort"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/workload"
)

// Selection is the outcome of choosing the policy that governs a workload.
type Selection struct {
	// Policy is the one policy selecting the workload, pointing into the
	// slice given to Select; nil when Reason is set.
	Policy *kickv1alpha1.KickPolicy
	// Reason is empty when exactly one policy selects the workload, else
	// GateNotSelected or GateAmbiguousPolicy.
	Reason kickv1alpha1.GateReason
	// Message explains Reason to a person; empty with Reason.
	Message string
	// Candidates name, sorted, the policies that select the workload when
	// several do (GateAmbiguousPolicy).
	Candidates []string
}

// Workload names a workload and carries its labels, for selection and
// counting.
type Workload struct {
	Kind      kickv1alpha1.TargetKind
	Namespace string
	Name      string
	Labels    map[string]string
}

// WorkloadOf describes a workload of any kind workload.KindOf knows
// (Deployment, StatefulSet, DaemonSet, Rollout); false for any other object.
func WorkloadOf(obj client.Object) (Workload, bool) {
	kind := workload.KindOf(obj)
	if kind == "" {
		return Workload{}, false
	}
	return Workload{Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName(), Labels: obj.GetLabels()}, true
}

func (w Workload) String() string { return string(w.Kind) + "/" + w.Name }

// Select returns the policy among policies (those of the workload's
// namespace) whose workloadSelector matches workloadLabels. Exactly one
// match is required: none gives GateNotSelected, several give
// GateAmbiguousPolicy, since KICK never picks one of several policies.
// Policies being deleted are ignored, and a policy whose workloadSelector is
// invalid selects nothing. Suspension does not affect selection.
//
// Messages refer to "the workload"; SelectWorkload names it.
func Select(policies []kickv1alpha1.KickPolicy, workloadLabels map[string]string) Selection {
	return SelectWorkload(policies, Workload{Labels: workloadLabels})
}

// SelectWorkload is Select for a named workload: its messages name the
// workload and its namespace.
func SelectWorkload(policies []kickv1alpha1.KickPolicy, w Workload) Selection {
	var (
		first   = -1
		matches []string
	)
	for i := range policies {
		p := &policies[i]
		if p.DeletionTimestamp != nil {
			continue
		}
		c, _ := compiled(p)
		if !c.MatchesWorkload(w.Labels) {
			continue
		}
		if first < 0 {
			first = i
		}
		matches = append(matches, p.Name)
	}
	switch len(matches) {
	case 0:
		return Selection{Reason: kickv1alpha1.GateNotSelected, Message: notSelectedMessage(w)}
	case 1:
		return Selection{Policy: &policies[first]}
	}
	sort.Strings(matches)
	return Selection{Reason: kickv1alpha1.GateAmbiguousPolicy, Candidates: matches, Message: fmt.Sprintf(
		"KickPolicies %s all select %s; KICK restarts a workload only when exactly one policy selects it, so narrow their workloadSelectors",
		joinNames(matches), describe(w))}
}

func notSelectedMessage(w Workload) string {
	where := "the namespace"
	if w.Namespace != "" {
		where = "namespace " + w.Namespace
	}
	return fmt.Sprintf("no KickPolicy in %s selects %s", where, describe(w))
}

func describe(w Workload) string {
	if w.Name == "" {
		return "the workload"
	}
	if w.Kind == "" {
		return w.Name
	}
	return w.String()
}

// DependencyInScope reports whether a Secret or ConfigMap with sourceLabels
// is in p's dependencySelector: an omitted or empty selector covers every
// dependency, an invalid one none.
func DependencyInScope(p *kickv1alpha1.KickPolicy, sourceLabels map[string]string) bool {
	if p == nil {
		return false
	}
	c, _ := compiled(p)
	return c.InScope(sourceLabels)
}

// joinNames renders names as "a", "a and b" or "a, b and c".
func joinNames(names []string) string {
	switch len(names) {
	case 0:
		return ""
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}
