package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// A -scales run repeats a -peers run at several multiples of the fixture
// (1x: 200 Deployments, 10,000 unconsumed Secrets, 5,000 unconsumed
// ConfigMaps; every count times the scale), with a burst of 10 % of the
// workloads, and fits each peer's costs against the fixture's size: the
// scale curve. -merge adds points of earlier -json files, so the large
// scales can run separately; -plot writes the curve as a PNG.

// Defaults of a scale run at 1x; -deployments, -unused-secrets,
// -unused-configmaps and -burst-fraction given on the command line replace
// them.
const (
	scaleDeployments   = 200
	scaleUnused        = 10000
	scaleUnusedCMs     = 5000
	scaleBurstFraction = "0.1"
)

// ScaleResults is the JSON of a -scales run: every run's full results and
// the curves built from them.
type ScaleResults struct {
	Points []ScalePoint `json:"points"`
	Series []Series     `json:"series"`
}

// ScalePoint is one peer measured at one scale.
type ScalePoint struct {
	Scale int    `json:"scale"`
	Peer  string `json:"peer"`
	// Sources are the Secrets and ConfigMaps in the cluster, consumed or not.
	Sources int      `json:"sources"`
	Results *Results `json:"results,omitempty"`
	Error   string   `json:"error,omitempty"`
}

// scaleMetric is one cost on the curve.
type scaleMetric struct {
	name, unit string
	value      func(*Results) (float64, bool)
}

// scaleMetrics are the costs on the curve, in plot order.
var scaleMetrics = []scaleMetric{
	{"RSS steady", "MB", func(r *Results) (float64, bool) { return r.Memory.SteadyMB, r.Memory.SteadyMB > 0 }},
	{"install CPU", "s", func(r *Results) (float64, bool) { return r.Install.CPUSeconds, r.Install.ReadyBy != "" }},
	{"burst of 10 %, last restart", "s", func(r *Results) (float64, bool) {
		return r.Burst.TotalMS / 1000, r.Burst.Restarted > 0 && r.Burst.Restarted == r.Burst.Changed
	}},
	{"single change p50", "ms", func(r *Results) (float64, bool) { return r.Single.P50, r.Single.Restarts > 0 }},
	{"install writes", "writes", func(r *Results) (float64, bool) { return float64(r.Install.Writes), r.Install.ReadyBy != "" }},
	{"RSS peak", "MB", func(r *Results) (float64, bool) { return r.Memory.PeakMB, r.Memory.PeakMB > 0 }},
	{"controller ready after", "s", func(r *Results) (float64, bool) {
		return r.Install.ReadyAfterMS / 1000, strings.HasPrefix(r.Install.ReadyBy, "http")
	}},
}

// Series is one peer's cost at each scale and its fits.
type Series struct {
	Peer   string    `json:"peer"`
	Metric string    `json:"metric"`
	Unit   string    `json:"unit"`
	Scales []float64 `json:"scales"`
	// Sources are the Secrets and ConfigMaps at each scale.
	Sources []float64 `json:"sources"`
	Values  []float64 `json:"values"`
	Fit     Fit       `json:"fit"`
}

// Fit describes how a cost grows with the fixture. Intercept and Slope are
// the least-squares line value = Intercept + Slope × sources (the slope is
// the cost per Secret or ConfigMap, with the Deployments, ReplicaSets and
// pods that scale along); Exponent is k in value ∝ scale^k fitted on logs:
// 1 is linear, below 1 better. Growth is the last scale's value over the
// first's, next to the scale ratio.
type Fit struct {
	Points     int     `json:"points"`
	Intercept  float64 `json:"intercept"`
	Slope      float64 `json:"slopePerSource"`
	R2         float64 `json:"r2"`
	Exponent   float64 `json:"exponent"`
	Growth     float64 `json:"growth"`
	ScaleRatio float64 `json:"scaleRatio"`
	// Linear is true when the cost grows linearly or better (Exponent ≤
	// maxExponent).
	Linear bool `json:"linearOrBetter"`
}

// maxExponent tolerates the noise of a shared machine on top of linear.
const maxExponent = 1.1

// parseScales reads "1,5,10"; "" (nothing to run, a -merge of earlier
// runs) is no scale.
func parseScales(spec string) ([]int, error) {
	if spec == "" {
		return nil, nil
	}
	var out []int
	seen := map[int]bool{}
	for _, part := range strings.Split(spec, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		s, err := strconv.Atoi(part)
		if err != nil || s < 1 {
			return nil, fmt.Errorf("-scales: %q is not a positive integer", part)
		}
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("-scales names no scale")
	}
	sort.Ints(out)
	return out, nil
}

// scaledArgs returns args with the fixture sizes of scale s; the 1x sizes
// come from args or the scale defaults (a tenth of them with -quick).
func scaledArgs(args []string, s int) ([]string, error) {
	out := args
	quick := slices.ContainsFunc(args, func(a string) bool { return strings.TrimLeft(a, "-") == "quick" })
	for _, f := range []struct {
		name string
		base int
	}{{"deployments", scaleDeployments}, {"unused-secrets", scaleUnused}, {"unused-configmaps", scaleUnusedCMs}} {
		v, rest, ok := extractFlag(out, f.name)
		base := f.base
		if quick {
			base /= 10
		}
		if ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				return nil, fmt.Errorf("-%s: %w", f.name, err)
			}
			base = n
		}
		out = append(rest, "-"+f.name, strconv.Itoa(base*s))
	}
	if _, _, ok := extractFlag(out, "burst-fraction"); !ok {
		out = append(out, "-burst-fraction", scaleBurstFraction)
	}
	return out, nil
}

// runScales runs -peers at every scale, merges earlier points, prints the
// curve and writes -json and -plot.
func runScales(ctx context.Context, spec string, args []string, out io.Writer) (*ScaleResults, error) {
	scales, err := parseScales(spec)
	if err != nil {
		return nil, err
	}
	peersSpec, args, _ := extractFlag(args, "peers")
	if peersSpec == "" {
		peersSpec = peerFloor + "," + peerKick
	}
	if _, err := parsePeers(peersSpec); err != nil {
		return nil, err
	}
	jsonPath, args, _ := extractFlag(args, "json")
	plotPath, args, _ := extractFlag(args, "plot")
	mergePaths, args, _ := extractFlag(args, "merge")
	if len(scales) == 0 && mergePaths == "" {
		return nil, fmt.Errorf("-scales names no scale and there is nothing to -merge")
	}
	res := &ScaleResults{}
	for _, p := range strings.Split(mergePaths, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		prev, err := readScaleResults(p)
		if err != nil {
			return nil, err
		}
		res.Points = mergePoints(res.Points, prev.Points)
	}
	if seed, _, ok := extractFlag(args, "seed"); !ok || seed == "0" {
		args = append(args, "-seed", fmt.Sprint(time.Now().UnixNano()))
	}
	save := func() error {
		res.Series = buildSeries(res.Points)
		if jsonPath == "" {
			return nil
		}
		return writeJSON(jsonPath, res)
	}
	for _, s := range scales {
		sargs, err := scaledArgs(args, s)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(os.Stderr, "%s  ==== scale %d×\n", time.Now().Format("15:04:05"), s)
		pr, err := runPeers(ctx, peersSpec, sargs, out)
		if err != nil {
			return res, err
		}
		var now []ScalePoint
		for _, run := range pr.Runs {
			pt := ScalePoint{Scale: s, Peer: run.Name, Results: run.Results, Error: run.Error}
			if run.Results != nil {
				pt.Sources = run.Results.Deployments + run.Results.UnusedSecrets + run.Results.UnusedConfigMaps
			}
			now = append(now, pt)
		}
		res.Points = mergePoints(res.Points, now)
		// Keep what was measured even if a later scale fails.
		if err := save(); err != nil {
			return res, err
		}
		if ctx.Err() != nil {
			break
		}
	}
	if err := save(); err != nil {
		return res, err
	}
	printScale(out, res)
	if plotPath != "" {
		if err := writePlot(plotPath, res.Series); err != nil {
			return res, err
		}
		fmt.Fprintf(out, "  plot: %s\n", plotPath)
	}
	return res, nil
}

func readScaleResults(path string) (*ScaleResults, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r ScaleResults
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}

// mergePoints adds add to points; a point of the same scale and peer
// replaces the earlier one. The result is ordered by peer, then scale.
func mergePoints(points, add []ScalePoint) []ScalePoint {
	type key struct {
		peer  string
		scale int
	}
	byKey := map[key]ScalePoint{}
	for _, list := range [][]ScalePoint{points, add} {
		for _, p := range list {
			byKey[key{p.Peer, p.Scale}] = p
		}
	}
	out := make([]ScalePoint, 0, len(byKey))
	for _, p := range byKey {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Peer != out[j].Peer {
			return peerOrder(out[i].Peer) < peerOrder(out[j].Peer)
		}
		return out[i].Scale < out[j].Scale
	})
	return out
}

// peerOrder sorts the floor first, then KICK's builds, then the rest.
func peerOrder(name string) string {
	switch {
	case name == peerFloor:
		return "0"
	case strings.HasPrefix(name, peerKick):
		return "1" + name
	}
	return "2" + name
}

// buildSeries turns the points into one series per peer and metric, each
// with its fit; a point missing the metric is left out.
func buildSeries(points []ScalePoint) []Series {
	var out []Series
	var peers []string
	for _, p := range points {
		if len(peers) == 0 || peers[len(peers)-1] != p.Peer {
			peers = append(peers, p.Peer)
		}
	}
	for _, m := range scaleMetrics {
		for _, peer := range peers {
			s := Series{Peer: peer, Metric: m.name, Unit: m.unit}
			for _, p := range points {
				if p.Peer != peer || p.Results == nil {
					continue
				}
				if v, ok := m.value(p.Results); ok {
					s.Scales = append(s.Scales, float64(p.Scale))
					s.Sources = append(s.Sources, float64(p.Sources))
					s.Values = append(s.Values, v)
				}
			}
			if len(s.Values) == 0 {
				continue
			}
			s.Fit = fit(s.Scales, s.Sources, s.Values)
			out = append(out, s)
		}
	}
	return out
}

// fit fits values against sources (least squares) and against scales (on
// logs). With fewer than two distinct scales only Points is set.
func fit(scales, sources, values []float64) Fit {
	f := Fit{Points: len(values)}
	if len(values) < 2 || scales[0] == scales[len(scales)-1] {
		return f
	}
	f.Intercept, f.Slope, f.R2 = leastSquares(sources, values)
	f.ScaleRatio = scales[len(scales)-1] / scales[0]
	if values[0] > 0 {
		f.Growth = values[len(values)-1] / values[0]
	}
	lx, ly := make([]float64, 0, len(values)), make([]float64, 0, len(values))
	for i := range values {
		if values[i] > 0 {
			lx, ly = append(lx, math.Log(scales[i])), append(ly, math.Log(values[i]))
		}
	}
	if len(lx) >= 2 && lx[0] != lx[len(lx)-1] {
		_, f.Exponent, _ = leastSquares(lx, ly)
		f.Linear = f.Exponent <= maxExponent
	}
	return f
}

// leastSquares fits y = a + b·x and returns a, b and R².
func leastSquares(x, y []float64) (a, b, r2 float64) {
	n := float64(len(x))
	var sx, sy, sxx, sxy float64
	for i := range x {
		sx += x[i]
		sy += y[i]
		sxx += x[i] * x[i]
		sxy += x[i] * y[i]
	}
	den := n*sxx - sx*sx
	if den == 0 {
		return sy / n, 0, 0
	}
	b = (n*sxy - sx*sy) / den
	a = (sy - b*sx) / n
	mean := sy / n
	var ssRes, ssTot float64
	for i := range x {
		d := y[i] - (a + b*x[i])
		ssRes += d * d
		ssTot += (y[i] - mean) * (y[i] - mean)
	}
	if ssTot > 0 {
		r2 = 1 - ssRes/ssTot
	} else {
		r2 = 1
	}
	return a, b, r2
}

func printScale(w io.Writer, res *ScaleResults) {
	fmt.Fprintf(w, "\n══ Scale curve (every point a fresh control plane; sources = Secrets + ConfigMaps)\n")
	for _, p := range res.Points {
		if p.Error != "" {
			fmt.Fprintf(w, "  !! %s at %d×: %s\n", p.Peer, p.Scale, p.Error)
		}
	}
	t := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(t, "  metric\tpeer\tvalues by scale\tgrowth\tslope per source\texponent\tR²\tlinear or better\n")
	for _, s := range res.Series {
		var vals []string
		for i := range s.Values {
			vals = append(vals, fmt.Sprintf("%g×: %s", s.Scales[i], trimFloat(s.Values[i])))
		}
		f := s.Fit
		if f.ScaleRatio == 0 { // one scale: nothing to fit
			fmt.Fprintf(t, "  %s (%s)\t%s\t%s\t–\t–\t–\t–\t–\n", s.Metric, s.Unit, s.Peer, strings.Join(vals, ", "))
			continue
		}
		verdict := "–"
		if f.Exponent != 0 || f.Linear {
			verdict = map[bool]string{true: "yes", false: "NO"}[f.Linear]
		}
		fmt.Fprintf(t, "  %s (%s)\t%s\t%s\t%.2f× for %.0f×\t%s\t%.2f\t%.2f\t%s\n", s.Metric, s.Unit, s.Peer, strings.Join(vals, ", "),
			f.Growth, f.ScaleRatio, perSource(s), f.Exponent, f.R2, verdict)
	}
	t.Flush()
}

// perSource renders a series' slope per Secret or ConfigMap; memory in KB.
func perSource(s Series) string {
	switch {
	case s.Fit.Points < 2:
		return "–"
	case s.Unit == "MB":
		return fmt.Sprintf("%.2f KB", s.Fit.Slope*1000)
	case s.Unit == "s":
		return fmt.Sprintf("%.3f ms", s.Fit.Slope*1000)
	}
	return fmt.Sprintf("%.4f %s", s.Fit.Slope, s.Unit)
}
