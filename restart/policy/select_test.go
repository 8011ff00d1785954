package policy

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
)

func TestSelect(t *testing.T) {
	web := lbl("app", "web", "tier", "front")
	cases := []struct {
		name     string
		policies []kickv1alpha1.KickPolicy
		labels   map[string]string
		want     string // policy name, or "" with reason
		reason   kickv1alpha1.GateReason
		message  []string
	}{
		{name: "no policies", labels: web, reason: kickv1alpha1.GateNotSelected,
			message: []string{"no KickPolicy in the namespace selects the workload"}},
		{name: "omitted discovery selects all", policies: []kickv1alpha1.KickPolicy{pol("all")}, labels: web, want: "all"},
		{name: "omitted selector selects all", policies: []kickv1alpha1.KickPolicy{pol("all", deps(match("x", "y")))}, labels: nil, want: "all"},
		{name: "empty selector selects all", policies: []kickv1alpha1.KickPolicy{pol("all", workloads(&metav1.LabelSelector{}))}, labels: nil, want: "all"},
		{name: "matchLabels", policies: []kickv1alpha1.KickPolicy{pol("web", workloads(match("app", "web"))), pol("api", workloads(match("app", "api")))}, labels: web, want: "web"},
		{name: "matchExpressions", policies: []kickv1alpha1.KickPolicy{pol("front", workloads(expr("tier", metav1.LabelSelectorOpIn, "front", "edge"))), pol("api", workloads(match("app", "api")))}, labels: web, want: "front"},
		{name: "not matched", policies: []kickv1alpha1.KickPolicy{pol("api", workloads(match("app", "api")))}, labels: web,
			reason: kickv1alpha1.GateNotSelected},
		{name: "two match: ambiguous, names sorted", policies: []kickv1alpha1.KickPolicy{pol("zeta"), pol("alpha", workloads(match("app", "web"))), pol("api", workloads(match("app", "api")))}, labels: web,
			reason: kickv1alpha1.GateAmbiguousPolicy, message: []string{"KickPolicies alpha and zeta all select the workload"}},
		{name: "three match", policies: []kickv1alpha1.KickPolicy{pol("c"), pol("b"), pol("a")}, labels: web,
			reason: kickv1alpha1.GateAmbiguousPolicy, message: []string{"a, b and c"}},
		{name: "deleted policy ignored", policies: []kickv1alpha1.KickPolicy{pol("old", deleting), pol("new", workloads(match("app", "web")))}, labels: web, want: "new"},
		{name: "only a deleted policy", policies: []kickv1alpha1.KickPolicy{pol("old", deleting)}, labels: web, reason: kickv1alpha1.GateNotSelected},
		{name: "invalid selector matches nothing", policies: []kickv1alpha1.KickPolicy{pol("broken", workloads(invalid)), pol("web", workloads(match("app", "web")))}, labels: web, want: "web"},
		{name: "invalid dependency selector still selects", policies: []kickv1alpha1.KickPolicy{pol("web", deps(invalid))}, labels: web, want: "web"},
		{name: "suspended still selects", policies: []kickv1alpha1.KickPolicy{pol("paused", suspended)}, labels: web, want: "paused"},
		{name: "suspended counts for ambiguity", policies: []kickv1alpha1.KickPolicy{pol("paused", suspended), pol("live")}, labels: web, reason: kickv1alpha1.GateAmbiguousPolicy},
		{name: "in-memory policies (no UID) work", policies: []kickv1alpha1.KickPolicy{{ObjectMeta: metav1.ObjectMeta{Name: "mem"}}}, labels: web, want: "mem"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Select(tc.policies, tc.labels)
			if tc.want != "" {
				if got.Reason != "" || got.Message != "" || got.Policy == nil || got.Policy.Name != tc.want {
					t.Fatalf("want policy %s, got %+v", tc.want, got)
				}
				if got.Policy != &tc.policies[indexOf(tc.policies, tc.want)] {
					t.Fatal("Policy must point into the given slice")
				}
				return
			}
			if got.Policy != nil || got.Reason != tc.reason {
				t.Fatalf("want reason %s and no policy, got %+v", tc.reason, got)
			}
			for _, m := range tc.message {
				if !strings.Contains(got.Message, m) {
					t.Errorf("message %q does not contain %q", got.Message, m)
				}
			}
		})
	}
}

func indexOf(ps []kickv1alpha1.KickPolicy, name string) int {
	for i := range ps {
		if ps[i].Name == name {
			return i
		}
	}
	return -1
}

func TestSelectWorkloadMessages(t *testing.T) {
	w := dep("web", "app", "web")
	got := SelectWorkload(nil, w)
	if want := "no KickPolicy in namespace shop selects Deployment/web"; got.Message != want {
		t.Errorf("not selected: got %q, want %q", got.Message, want)
	}
	got = SelectWorkload([]kickv1alpha1.KickPolicy{pol("b"), pol("a")}, w)
	if want := "KickPolicies a and b all select Deployment/web"; !strings.HasPrefix(got.Message, want) {
		t.Errorf("ambiguous: got %q, want prefix %q", got.Message, want)
	}
}

func TestDependencyInScope(t *testing.T) {
	cases := []struct {
		name   string
		p      *kickv1alpha1.KickPolicy
		labels map[string]string
		want   bool
	}{
		{"nil policy", nil, lbl("a", "b"), false},
		{"no discovery", ptr(pol("p")), nil, true},
		{"omitted dependencySelector", ptr(pol("p", workloads(match("app", "web")))), lbl("a", "b"), true},
		{"empty dependencySelector", ptr(pol("p", deps(&metav1.LabelSelector{}))), nil, true},
		{"matching", ptr(pol("p", deps(match("kick", "yes")))), lbl("kick", "yes", "x", "y"), true},
		{"not matching", ptr(pol("p", deps(match("kick", "yes")))), lbl("kick", "no"), false},
		{"no labels vs selector", ptr(pol("p", deps(match("kick", "yes")))), nil, false},
		{"DoesNotExist", ptr(pol("p", deps(expr("skip", metav1.LabelSelectorOpDoesNotExist)))), lbl("a", "b"), true},
		{"invalid: none", ptr(pol("p", deps(invalid))), lbl("app", "web"), false},
		{"invalid workloadSelector does not affect scope", ptr(pol("p", workloads(invalid))), lbl("a", "b"), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := DependencyInScope(tc.p, tc.labels); got != tc.want {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestCompileErrorsNameTheSelector(t *testing.T) {
	cases := []struct {
		name string
		p    kickv1alpha1.KickPolicy
		want []string
	}{
		{"valid", pol("p", workloads(match("a", "b")), deps(match("c", "d"))), nil},
		{"workload", pol("p", workloads(invalid)), []string{"spec.discovery.workloadSelector is invalid"}},
		{"dependency", pol("p", deps(expr("a", metav1.LabelSelectorOpIn))), []string{"spec.discovery.dependencySelector is invalid"}},
		{"both", pol("p", workloads(invalid), deps(invalid)), []string{"workloadSelector", "dependencySelector"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Compile(&tc.p)
			if c == nil {
				t.Fatal("Compile must always return a usable *Compiled")
			}
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("want an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
	var nilCompiled *Compiled
	if nilCompiled.MatchesWorkload(nil) || nilCompiled.InScope(nil) {
		t.Error("a nil *Compiled must match nothing")
	}
}

// The cache is keyed by UID and generation: a new generation recompiles.
func TestCompileCacheFollowsGeneration(t *testing.T) {
	p := pol("gen-policy", workloads(match("app", "web")))
	if Select([]kickv1alpha1.KickPolicy{p}, lbl("app", "web")).Policy == nil {
		t.Fatal("generation 1 must select app=web")
	}
	p.Spec.Discovery.WorkloadSelector = match("app", "api")
	p.Generation = 2
	if Select([]kickv1alpha1.KickPolicy{p}, lbl("app", "web")).Policy != nil {
		t.Fatal("generation 2 must no longer select app=web (stale cache entry)")
	}
	if Select([]kickv1alpha1.KickPolicy{p}, lbl("app", "api")).Policy == nil {
		t.Fatal("generation 2 must select app=api")
	}
}
