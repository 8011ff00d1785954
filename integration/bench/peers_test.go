package main

import (
	"context"
	"io"
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
		"API writes per restart, burst":         "PASS", // 4
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

func TestCompareTakesMediansOverRounds(t *testing.T) {
	result := func(burstMS, peakMB float64) *Results {
		r := &Results{}
		r.Burst.TotalMS, r.Burst.Restarted, r.Burst.Changed = burstMS, 10, 10
		r.Memory.PeakMB = peakMB
		return r
	}
	runs := []PeerRun{
		{Name: "floor", Round: 1, Results: result(2700, 44)},
		{Name: "kick", Round: 1, Results: result(4000, 66)},
		{Name: "floor", Round: 2, Results: result(4200, 48)},
		{Name: "kick", Round: 2, Results: result(4000, 66)},
		{Name: "floor", Round: 3, Results: result(3000, 46)},
		{Name: "kick", Round: 3, Results: result(3900, 67)},
	}
	rows := compare(runs)
	byName := map[string]Comparison{}
	for _, r := range rows {
		byName[r.Metric] = r
	}
	burst := byName["burst, last restart"]
	// Each round's ratio is 1.48, 0.95 and 1.30: the median is the third,
	// where the ratio of the medians (4000 / 3000) would be 1.33.
	if burst.Rounds != 3 || burst.Values["floor"] != 3000 || burst.Values["kick"] != 4000 {
		t.Fatalf("burst row %+v: want 3 rounds, medians floor 3000 and kick 4000", burst)
	}
	if r := burst.Ratios["kick/floor"]; r != 3900.0/3000 {
		t.Errorf("burst kick/floor %v, want the median of the rounds' ratios %v", r, 3900.0/3000)
	}
	if rng := burst.RatioRanges["kick/floor"]; rng != [2]float64{4000.0 / 4200, 4000.0 / 2700} {
		t.Errorf("burst kick/floor range %v", rng)
	}
	if burst.Verdict != "n/a" && burst.Verdict != "PASS" {
		t.Errorf("burst verdict %q: 1.30× the floor is within 1.4×", burst.Verdict)
	}
	peak := byName["RSS peak"]
	if peak.Verdict != "FAIL" || peak.Ratios["kick/floor"] != 67.0/46 {
		t.Errorf("peak: verdict %q ratio %v; want FAIL at %v (rounds 1.50, 1.38, 1.46)", peak.Verdict, peak.Ratios["kick/floor"], 67.0/46)
	}

	var out strings.Builder
	printComparison(&out, &PeerResults{Runs: runs, Comparison: rows})
	for _, want := range []string{"3 rounds", "1.30× (0.95–1.48)", "1.46× (1.38–1.50)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
	header := strings.Fields(strings.Split(out.String(), "\n")[2])
	if !slices.Equal(header[:3], []string{"metric", "floor", "kick"}) || header[3] != "kick/floor" {
		t.Errorf("header %v, want one column per peer: metric floor kick kick/floor ...", header)
	}
}

func TestRoundsMustBePositive(t *testing.T) {
	for _, bad := range []string{"0", "-1", "three"} {
		_, err := runPeers(context.Background(), "floor,kick", []string{"-rounds", bad}, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "-rounds") {
			t.Errorf("-rounds %s: %v, want an error naming -rounds", bad, err)
		}
	}
}
