package main

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseScales(t *testing.T) {
	got, err := parseScales("10, 1,5,1")
	if err != nil || !slices.Equal(got, []int{1, 5, 10}) {
		t.Fatalf("parseScales: %v %v", got, err)
	}
	if got, err := parseScales(""); err != nil || got != nil {
		t.Errorf("no scales (a -merge run): %v %v", got, err)
	}
	for _, bad := range []string{",", "0", "1,x", "-2"} {
		if _, err := parseScales(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestScaledArgs(t *testing.T) {
	got, err := scaledArgs([]string{"-rounds", "10", "-unused-secrets", "300"}, 5)
	if err != nil {
		t.Fatal(err)
	}
	want := "-rounds 10 -deployments 1000 -unused-secrets 1500 -unused-configmaps 25000 -burst-fraction 0.1"
	if strings.Join(got, " ") != want {
		t.Errorf("scaledArgs = %q, want %q", strings.Join(got, " "), want)
	}
	got, _ = scaledArgs([]string{"-quick", "-burst-fraction", "1"}, 2)
	if want := "-quick -burst-fraction 1 -deployments 40 -unused-secrets 2000 -unused-configmaps 1000"; strings.Join(got, " ") != want {
		t.Errorf("quick: %q, want %q", strings.Join(got, " "), want)
	}
}

// point is a measured peer at scale s whose steady RSS is rss MB.
func point(peer string, s int, rss, p50 float64) ScalePoint {
	r := &Results{Deployments: 200 * s, UnusedSecrets: 10000 * s, UnusedConfigMaps: 5000 * s}
	r.Memory.SteadyMB = rss
	r.Single.P50, r.Single.Restarts = p50, 30
	return ScalePoint{Scale: s, Peer: peer, Sources: 15200 * s, Results: r}
}

func series(t *testing.T, all []Series, peer, metric string) Series {
	t.Helper()
	for _, s := range all {
		if s.Peer == peer && s.Metric == metric {
			return s
		}
	}
	t.Fatalf("no series %s/%s in %v", peer, metric, all)
	return Series{}
}

func TestBuildSeriesFitsGrowth(t *testing.T) {
	points := mergePoints(nil, []ScalePoint{
		// KICK: 40 MB plus 0.5 KB per source; floor: quadratic memory.
		point("kick", 1, 40+0.0005*15200, 15), point("kick", 5, 40+0.0005*76000, 16), point("kick", 10, 40+0.0005*152000, 15.5),
		point("floor", 1, 10, 5), point("floor", 5, 250, 5), point("floor", 10, 1000, 5),
	})
	// A later measurement of the same point replaces the earlier one.
	points = mergePoints(points, []ScalePoint{point("floor", 1, 10, 6)})
	if len(points) != 6 || points[0].Peer != "floor" || points[3].Peer != "kick" {
		t.Fatalf("merged points: %+v", points)
	}
	all := buildSeries(points)

	rss := series(t, all, "kick", "RSS steady")
	if !slices.Equal(rss.Scales, []float64{1, 5, 10}) {
		t.Fatalf("scales %v", rss.Scales)
	}
	if math.Abs(rss.Fit.Slope*1000-0.5) > 1e-9 || math.Abs(rss.Fit.Intercept-40) > 1e-6 || rss.Fit.R2 < 0.9999 {
		t.Errorf("kick RSS fit %+v, want 0.5 KB per source above 40 MB", rss.Fit)
	}
	if !rss.Fit.Linear || rss.Fit.Exponent >= 1 || rss.Fit.ScaleRatio != 10 {
		t.Errorf("kick RSS with a fixed base grows less than linearly: %+v", rss.Fit)
	}
	if got := perSource(rss); got != "0.50 KB" {
		t.Errorf("perSource = %q", got)
	}
	if f := series(t, all, "floor", "RSS steady").Fit; f.Linear || math.Abs(f.Exponent-2) > 0.01 || f.Growth != 100 {
		t.Errorf("quadratic floor RSS judged %+v", f)
	}
	if p := series(t, all, "floor", "single change p50"); p.Values[0] != 6 || !p.Fit.Linear {
		t.Errorf("floor p50 %+v", p)
	}
	// Metrics a point lacks (no burst measured) make no series.
	for _, s := range all {
		if s.Metric == "burst of 10 %, last restart" {
			t.Errorf("unexpected series %+v", s)
		}
	}
}

func TestFitOnePoint(t *testing.T) {
	if f := fit([]float64{1}, []float64{100}, []float64{7}); f.Points != 1 || f.Slope != 0 || f.Linear {
		t.Errorf("one point: %+v", f)
	}
}

func TestWritePlot(t *testing.T) {
	all := buildSeries(mergePoints(nil, []ScalePoint{
		point("kick", 1, 48, 15), point("kick", 10, 110, 16), point("floor", 1, 40, 5), point("floor", 10, 90, 6),
	}))
	path := filepath.Join(t.TempDir(), "images", "scale.png")
	if err := writePlot(path, all); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) < 1000 || string(data[1:4]) != "PNG" {
		t.Fatalf("plot is %d bytes, header %q", len(data), data[:min(8, len(data))])
	}
}
