package policy

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
)

// twentyPolicies is a namespace with 20 policies, each selecting one app
// with a label and an expression, and scoping dependencies.
func twentyPolicies() []kickv1alpha1.KickPolicy {
	ps := make([]kickv1alpha1.KickPolicy, 20)
	for i := range ps {
		sel := match("app", fmt.Sprintf("app-%d", i), "team", "shop")
		sel.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"front", "back"}}}
		ps[i] = pol(fmt.Sprintf("policy-%02d", i), workloads(sel), deps(match("kick", "yes")))
	}
	return ps
}

func BenchmarkSelect20Policies(b *testing.B) {
	ps := twentyPolicies()
	labels := lbl("app", "app-13", "team", "shop", "tier", "back", "version", "v2")
	if s := Select(ps, labels); s.Policy == nil || s.Policy.Name != "policy-13" {
		b.Fatalf("unexpected selection %+v", s)
	}
	b.ReportAllocs()
	for b.Loop() {
		Select(ps, labels)
	}
}

// BenchmarkSelect20PoliciesUncached shows what the compile cache saves:
// the same policies without UIDs are compiled on every call.
func BenchmarkSelect20PoliciesUncached(b *testing.B) {
	ps := twentyPolicies()
	for i := range ps {
		ps[i].UID = ""
	}
	labels := lbl("app", "app-13", "team", "shop", "tier", "back", "version", "v2")
	b.ReportAllocs()
	for b.Loop() {
		Select(ps, labels)
	}
}

func BenchmarkEvaluate20Policies200Workloads(b *testing.B) {
	ps := twentyPolicies()
	ws := make([]Workload, 200)
	for i := range ws {
		ws[i] = dep(fmt.Sprintf("w-%d", i), "app", fmt.Sprintf("app-%d", i%25), "team", "shop", "tier", "front")
	}
	b.ReportAllocs()
	for b.Loop() {
		Evaluate(&ps[7], ps, ws)
	}
}
