package main

import (
	"slices"
	"strings"
	"testing"
)

func TestParsePeers(t *testing.T) {
	peers, err := parsePeers("floor, kick=bin/kick-manager-argocd ,reloader=/opt/reloader")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range peers {
		names = append(names, p.Name)
	}
	if !slices.Equal(names, []string{"floor", "kick", "reloader"}) {
		t.Fatalf("peers %v", names)
	}
	if got := strings.Join(peers[1].Args, " "); !strings.Contains(got, "bin/kick-manager-argocd --kubeconfig") {
		t.Errorf("kick runs %q", got)
	}
	if got := strings.Join(peers[2].Args, " "); !strings.Contains(got, "reloader.stakater.com/auto=true") || !strings.Contains(got, "env KUBECONFIG={kubeconfig} /opt/reloader") {
		t.Errorf("reloader runs %q", got)
	}
	for _, bad := range []string{"floor,reloader=/x", "kick,kick", "kick,reloader", "kick,reloaded=/x"} {
		if _, err := parsePeers(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestExtractFlag(t *testing.T) {
	v, rest, ok := extractFlag([]string{"-quick", "-json", "out.json", "--seed=4"}, "json")
	if !ok || v != "out.json" || !slices.Equal(rest, []string{"-quick", "--seed=4"}) {
		t.Fatalf("json: %q %v %v", v, rest, ok)
	}
	if v, _, ok := extractFlag(rest, "seed"); !ok || v != "4" {
		t.Fatalf("seed: %q %v", v, ok)
	}
	if _, _, ok := extractFlag(rest, "peers"); ok {
		t.Fatal("found an absent flag")
	}
}

func TestCompareJudgesRatios(t *testing.T) {
	result := func(p50, burst, rss float64, writes float64) *Results {
		r := &Results{}
		r.Single.P50, r.Single.Restarts = p50, 5
		r.Burst.TotalMS, r.Burst.Restarted, r.Burst.Changed = burst, 10, 10
		r.Memory.SteadyMB, r.Memory.PeakMB = rss, rss
		r.Install.ReadyBy = "readyz"
		if writes > 0 {
			calls := writes + 2
			r.API.PerRestart = &calls
			r.API.ByMethod = map[string]float64{"GET": 20, "PATCH": writes * 10}
			r.Single.Internals = &Internals{APICallsByVerb: map[string]float64{"GET": 5, "POST": writes * 5}}
		}
		return r
	}
	rows := compare([]PeerRun{
		{Name: "floor", Results: result(4, 1000, 50, 0)},
		{Name: "kick", Results: result(5, 1500, 55, 4)},
		{Name: "reloader", Results: result(10, 20000, 150, 0)},
	})
	byName := map[string]Comparison{}
	for _, r := range rows {
		byName[r.Metric] = r
	}
	want := map[string]string{
		"single change p50":                     "PASS", // 1.25× floor, 0.5× Reloader
		"burst, last restart":                   "FAIL", // 1.5× floor
		"RSS steady":                            "PASS", // 1.1×
		"API writes per restart, single change": "PASS", // 4
		"API writes per restart, burst":         "",
		"install restarts":                      "PASS",
		"single change p99":                     "",
	}
	for name, verdict := range want {
		if got := byName[name].Verdict; got != verdict {
			t.Errorf("%s: verdict %q, want %q (row %+v)", name, got, verdict, byName[name])
		}
	}
	if r := byName["burst, last restart"].Ratios["kick/reloader"]; r != 0.075 {
		t.Errorf("kick/reloader burst ratio %v", r)
	}
}
