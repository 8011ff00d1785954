package main

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
)

func TestParseBudgets(t *testing.T) {
	got, err := parseBudgets("10, none,10+waves,none+waves")
	if err != nil {
		t.Fatal(err)
	}
	want := []fanoutScenario{{maxConcurrent: 10}, {}, {maxConcurrent: 10, waves: true}, {waves: true}}
	if len(got) != len(want) {
		t.Fatalf("%+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%d: %+v, want %+v", i, got[i], want[i])
		}
	}
	for _, bad := range []string{"", "+waves", "ten", "10+wave", "-1"} {
		if _, err := parseBudgets(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestFanoutSetupWaves: the waves scenario's KickPolicy has the budget and
// the two waves, the canary holding the first fanoutCanary Deployments.
func TestFanoutSetupWaves(t *testing.T) {
	text, err := fanoutSetupText(fanoutScenario{maxConcurrent: 10, waves: true, bake: fanoutBake})
	if err != nil {
		t.Fatal(err)
	}
	var p kickv1alpha1.KickPolicy
	for _, doc := range strings.Split(text, "\n---\n") {
		if strings.Contains(doc, "kind: KickPolicy") {
			if err := yaml.UnmarshalStrict([]byte(doc), &p); err != nil {
				t.Fatalf("%v in\n%s", err, doc)
			}
		}
	}
	r := p.Spec.Restart
	if r == nil || r.MaxConcurrent == nil || r.MaxConcurrent.IntValue() != 10 {
		t.Fatalf("restart %+v, want maxConcurrent 10", r)
	}
	if w := p.Spec.RestartWaves(); len(w) != 2 || w[0].Name != "canary" || w[0].Bake == nil || w[0].Bake.Duration != fanoutBake || w[1].Name != "main" {
		t.Fatalf("waves %+v, want canary (bake %s) then main", w, fanoutBake)
	}
	for i := range fanoutCanary + 2 {
		wave, err := p.Spec.WaveOf(map[string]string{"app": consumedName(i), "kick-bench": "true"})
		if want := min(i/fanoutCanary, 1); err != nil || wave != want {
			t.Errorf("%s in wave %d (%v), want %d", consumedName(i), wave, err, want)
		}
	}
}
