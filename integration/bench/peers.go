package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// A -peers run measures several controllers one after another, each on a
// fresh control plane with the same fixture and seed, and prints one table
// with KICK's ratios to the floor and to the peer. Timings on a shared
// machine drift between sittings; ratios from one run do not.

// peer is one controller of a comparison and the harness flags that run it.
type peer struct {
	Name string
	Args []string
}

// Peer names and what they run. A name may carry a path: "floor=bin/x",
// "kick=bin/kick-manager-argocd", "reloader=/path/to/reloader".
const (
	peerFloor    = "floor"
	peerKick     = "kick"
	peerReloader = "reloader"
	// peerKickArgoCD is KICK on a cluster that serves the Argo CD CRDs
	// (installed from -bin-dir/crds): the lean build hands over to
	// kick-manager-argocd, the build that links the Argo CD integration.
	// Flux is switched off, so only Argo CD's cost is added.
	peerKickArgoCD = "kick-argocd"
	// peerKickBase is another build of KICK (its binary is required), run
	// in the same rounds as kick: a change is judged by both builds' ratios
	// to the floor measured side by side, not by runs from two sittings.
	peerKickBase = "kick-base"
)

// parsePeers turns "floor,kick,reloader=/path" into harness runs.
func parsePeers(spec string) ([]peer, error) {
	var out []peer
	seen := map[string]bool{}
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, path, _ := strings.Cut(part, "=")
		if seen[name] {
			return nil, fmt.Errorf("-peers names %s twice", name)
		}
		seen[name] = true
		switch name {
		case peerFloor:
			if path == "" {
				path = "bin/bench-floor"
			}
			out = append(out, peer{name, []string{"-setup", "", "-ready-url", "", "-metrics-url", "",
				"-controller", path + " --kubeconfig {kubeconfig} --namespace {namespace}"}})
		case peerKick:
			if path == "" {
				path = "bin/kick-manager"
			}
			out = append(out, peer{name, []string{"-controller", path + " --kubeconfig {kubeconfig} --namespace kick-system" +
				" --metrics-bind-address {metrics-addr} --health-probe-bind-address {probe-addr}"}})
		case peerKickArgoCD:
			if path == "" {
				path = "bin/kick-manager"
			}
			out = append(out, peer{name, []string{"-upstream-crds", "-controller", path + " --kubeconfig {kubeconfig} --namespace kick-system" +
				" --enable-flux=false --metrics-bind-address {metrics-addr} --health-probe-bind-address {probe-addr}"}})
		case peerKickBase:
			if path == "" {
				return nil, fmt.Errorf("kick-base needs the other build's binary: kick-base=/path/to/kick-manager")
			}
			out = append(out, peer{name, []string{"-controller", path + " --kubeconfig {kubeconfig} --namespace kick-system" +
				" --metrics-bind-address {metrics-addr} --health-probe-bind-address {probe-addr}"}})
		case peerReloader:
			if path == "" {
				return nil, fmt.Errorf("reloader needs its binary: reloader=/path/to/reloader (see docs/operations/performance.md)")
			}
			// Reloader reads $KUBECONFIG, acts on annotated workloads and
			// has no readiness endpoint; its metrics carry no client-go
			// request counts.
			out = append(out, peer{name, []string{"-setup", "", "-ready-url", "", "-metrics-url", "",
				"-workload-annotations", "reloader.stakater.com/auto=true",
				"-controller", "env KUBECONFIG={kubeconfig} " + path + " --namespaces-to-ignore=kube-system"}})
		default:
			return nil, fmt.Errorf("unknown peer %q; use floor, kick, kick-argocd, kick-base=PATH and reloader=PATH", name)
		}
	}
	if !seen[peerKick] {
		return nil, fmt.Errorf("-peers must include kick")
	}
	return out, nil
}

// extractFlag removes -name v / -name=v (or --name) from args and returns its value.
func extractFlag(args []string, name string) (value string, rest []string, found bool) {
	for i := 0; i < len(args); i++ {
		a := strings.TrimLeft(args[i], "-")
		switch {
		case a == name && i+1 < len(args) && strings.HasPrefix(args[i], "-"):
			value, found = args[i+1], true
			i++
		case strings.HasPrefix(a, name+"=") && strings.HasPrefix(args[i], "-"):
			value, found = strings.TrimPrefix(a, name+"="), true
		default:
			rest = append(rest, args[i])
		}
	}
	return value, rest, found
}

// PeerResults is the JSON of a -peers run: every number of every run, and
// the comparison.
type PeerResults struct {
	Runs       []PeerRun    `json:"runs"`
	Comparison []Comparison `json:"comparison"`
}

// PeerRun is one controller's full results.
type PeerRun struct {
	Name string `json:"name"`
	// Round counts from 1: with -rounds N every peer runs N times, one
	// after another in each round.
	Round   int      `json:"round,omitempty"`
	Results *Results `json:"results"`
	Error   string   `json:"error,omitempty"`
}

// Comparison is one row of the table: a metric per peer, KICK's ratios and
// the target on them.
type Comparison struct {
	Metric string             `json:"metric"`
	Unit   string             `json:"unit"`
	Values map[string]float64 `json:"values"` // by peer; absent: not measured
	Ratios map[string]float64 `json:"ratios"` // "kick/floor", "kick/reloader"
	// Rounds is how many rounds measured the row; with more than one,
	// Values are medians, Ratios the median of each round's ratio and
	// RatioRanges their lowest and highest.
	Rounds      int                   `json:"rounds,omitempty"`
	RatioRanges map[string][2]float64 `json:"ratioRanges,omitempty"`
	Goal        string                `json:"goal,omitempty"`
	Verdict     string                `json:"verdict,omitempty"` // PASS, FAIL, n/a
}

// runPeers runs every peer with the shared args and prints each report and
// then the comparison.
func runPeers(ctx context.Context, spec string, args []string, out io.Writer) (*PeerResults, error) {
	peers, err := parsePeers(spec)
	if err != nil {
		return nil, err
	}
	jsonPath, args, _ := extractFlag(args, "json")
	if _, _, ok := extractFlag(args, "controller"); ok {
		return nil, fmt.Errorf("-controller and -peers exclude each other")
	}
	if seed, _, ok := extractFlag(args, "seed"); !ok || seed == "0" {
		args = append(args, "-seed", fmt.Sprint(time.Now().UnixNano()))
	}
	roundsFlag, args, _ := extractFlag(args, "rounds")
	rounds := 1
	if roundsFlag != "" {
		if rounds, err = strconv.Atoi(roundsFlag); err != nil || rounds < 1 {
			return nil, fmt.Errorf("-rounds %q: want a whole number of at least 1", roundsFlag)
		}
	}
	res := &PeerResults{}
rounds:
	for round := 1; round <= rounds; round++ {
		for _, p := range peers {
			fmt.Fprintf(os.Stderr, "%s  == round %d/%d, peer %s\n", time.Now().Format("15:04:05"), round, rounds, p.Name)
			r, err := run(ctx, append(append([]string(nil), args...), p.Args...), out)
			run := PeerRun{Name: p.Name, Round: round, Results: r}
			if err != nil {
				run.Error = err.Error()
			}
			res.Runs = append(res.Runs, run)
			if ctx.Err() != nil {
				break rounds
			}
		}
	}
	res.Comparison = compare(res.Runs)
	printComparison(out, res)
	if jsonPath != "" {
		return res, writeJSON(jsonPath, res)
	}
	return res, nil
}

// writesPerRestart counts the API writes (every verb but GET, LIST and
// WATCH) per restart of the burst, from the controller's client metrics.
func writesPerRestart(r *Results) (float64, bool) {
	if r.API.PerRestart == nil || r.Burst.Restarted == 0 {
		return 0, false
	}
	return writes(r.API.ByMethod) / float64(r.Burst.Restarted), true
}

// singleWritesPerRestart is writesPerRestart over the single-change rounds:
// one ungated restart at a time, each rollout quick and alone.
func singleWritesPerRestart(r *Results) (float64, bool) {
	in := r.Single.Internals
	if in == nil || len(in.APICallsByVerb) == 0 || r.Single.Restarts == 0 {
		return 0, false
	}
	return writes(in.APICallsByVerb) / float64(r.Single.Restarts), true
}

// serverMean is kube-apiserver's mean time for one kind of request over
// the single-change rounds.
func serverMean(call string) func(*Results) (float64, bool) {
	return func(r *Results) (float64, bool) {
		c, ok := r.Single.Server[call]
		return c.MeanMS, ok && c.Count > 0
	}
}

func writes(byVerb map[string]float64) float64 {
	var n float64
	for verb, calls := range byVerb {
		switch strings.ToUpper(verb) {
		case "GET", "LIST", "WATCH":
		default:
			n += calls
		}
	}
	return n
}

// compare builds the rows of the comparison and judges KICK's targets,
// each a ratio measured in this one run.
func compare(runs []PeerRun) []Comparison {
	type metric struct {
		name, unit string
		value      func(*Results) (float64, bool)
		// goal judges KICK's ratios (nil: no target); higher values of
		// the metric are worse for all of them.
		maxToFloor, minReloaderOverKick float64
		absoluteMax                     *float64
	}
	ms := func(v float64, n int) (float64, bool) { return v, n > 0 }
	four, zero := 4.0, 0.0
	metrics := []metric{
		{name: "single change p50", unit: "ms", value: func(r *Results) (float64, bool) { return ms(r.Single.P50, r.Single.Restarts) },
			maxToFloor: 1.5, minReloaderOverKick: 1 / 0.6},
		{name: "single change p99", unit: "ms", value: func(r *Results) (float64, bool) { return ms(r.Single.P99, r.Single.Restarts) }},
		// Where the single change's time goes on the server: the
		// restart's patch and the read of the changed Secret, as
		// kube-apiserver timed them (no target; they explain the row above).
		{name: "single change, server PATCH deployments", unit: "ms", value: serverMean("PATCH deployments")},
		{name: "single change, server GET secrets", unit: "ms", value: serverMean("GET secrets")},
		{name: "burst, last restart", unit: "ms", value: func(r *Results) (float64, bool) { return ms(r.Burst.TotalMS, r.Burst.Restarted) },
			maxToFloor: 1.4, minReloaderOverKick: 5},
		{name: "burst, restarted", unit: "of changed", value: func(r *Results) (float64, bool) {
			return float64(r.Burst.Restarted) / float64(max(r.Burst.Changed, 1)), r.Burst.Changed > 0
		}},
		{name: "RSS steady", unit: "MB", value: func(r *Results) (float64, bool) { return r.Memory.SteadyMB, r.Memory.SteadyMB > 0 },
			maxToFloor: 1.2},
		{name: "RSS peak", unit: "MB", value: func(r *Results) (float64, bool) { return r.Memory.PeakMB, r.Memory.PeakMB > 0 },
			maxToFloor: 1.3},
		{name: "API calls per restart", unit: "calls", value: func(r *Results) (float64, bool) {
			if r.API.PerRestart == nil {
				return 0, false
			}
			return *r.API.PerRestart, true
		}},
		// A restart without a budget writes at most 4 times (issue 31).
		{name: "API writes per restart, single change", unit: "writes", value: singleWritesPerRestart, absoluteMax: &four},
		{name: "API writes per restart, burst", unit: "writes", value: writesPerRestart, absoluteMax: &four},
		{name: "install restarts", unit: "restarts", value: func(r *Results) (float64, bool) {
			return float64(r.Install.Restarts), r.Install.ReadyBy != ""
		}, absoluteMax: &zero},
	}
	var rows []Comparison
	for _, m := range metrics {
		row := Comparison{Metric: m.name, Unit: m.unit, Values: map[string]float64{}, Ratios: map[string]float64{}}
		// byRound[round][peer] is the metric as measured in that round.
		byRound := map[int]map[string]float64{}
		values := map[string][]float64{}
		for _, run := range runs {
			if run.Results == nil {
				continue
			}
			if v, ok := m.value(run.Results); ok {
				if byRound[run.Round] == nil {
					byRound[run.Round] = map[string]float64{}
				}
				byRound[run.Round][run.Name] = v
				values[run.Name] = append(values[run.Name], v)
			}
		}
		for name, vs := range values {
			row.Values[name] = medianOfRounds(vs)
		}
		ratios := map[string][]float64{}
		for _, measured := range byRound {
			kick, hasKick := measured[peerKick]
			for _, other := range []string{peerFloor, peerReloader} {
				if v, ok := measured[other]; ok && hasKick && v > 0 {
					ratios[peerKick+"/"+other] = append(ratios[peerKick+"/"+other], kick/v)
				}
			}
			if base, ok := measured[peerKickBase]; ok {
				if v, ok := measured[peerFloor]; ok && v > 0 {
					ratios[peerKickBase+"/"+peerFloor] = append(ratios[peerKickBase+"/"+peerFloor], base/v)
				}
				if hasKick && base > 0 {
					ratios[peerKick+"/"+peerKickBase] = append(ratios[peerKick+"/"+peerKickBase], kick/base)
				}
			}
			if v, ok := measured[peerKickArgoCD]; ok && hasKick && kick > 0 {
				ratios[peerKickArgoCD+"/"+peerKick] = append(ratios[peerKickArgoCD+"/"+peerKick], v/kick)
			}
		}
		row.Rounds = len(byRound)
		for key, rs := range ratios {
			row.Ratios[key] = medianOfRounds(rs)
			if row.Rounds > 1 {
				if row.RatioRanges == nil {
					row.RatioRanges = map[string][2]float64{}
				}
				row.RatioRanges[key] = [2]float64{slices.Min(rs), slices.Max(rs)}
			}
		}
		kick, hasKick := row.Values[peerKick]
		var goals []string
		verdict := ""
		judge := func(goal string, measured, pass bool) {
			goals = append(goals, goal)
			switch {
			case !measured:
				if verdict == "" {
					verdict = "n/a"
				}
			case !pass:
				verdict = "FAIL"
			case verdict != "FAIL":
				verdict = "PASS"
			}
		}
		if m.maxToFloor > 0 {
			r, ok := row.Ratios[peerKick+"/"+peerFloor]
			judge(fmt.Sprintf("≤ %.1f× floor", m.maxToFloor), ok, r <= m.maxToFloor)
		}
		if m.minReloaderOverKick > 0 {
			r, ok := row.Ratios[peerKick+"/"+peerReloader]
			judge(fmt.Sprintf("≤ %.2f× Reloader", 1/m.minReloaderOverKick), ok, r <= 1/m.minReloaderOverKick)
		}
		if m.absoluteMax != nil {
			judge(fmt.Sprintf("≤ %g", *m.absoluteMax), hasKick, kick <= *m.absoluteMax)
		}
		row.Goal, row.Verdict = strings.Join(goals, ", "), verdict
		rows = append(rows, row)
	}
	return rows
}

// medianOfRounds is the middle of vs, or the mean of the two middle values.
func medianOfRounds(vs []float64) float64 {
	s := slices.Sorted(slices.Values(vs))
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// ratioKeys are the ratio columns of the comparison.
var ratioKeys = []string{peerKick + "/" + peerFloor, peerKickBase + "/" + peerFloor, peerKick + "/" + peerKickBase, peerKick + "/" + peerReloader, peerKickArgoCD + "/" + peerKick}

func printComparison(w io.Writer, res *PeerResults) {
	names := make([]string, 0, len(res.Runs))
	rounds := 0
	for _, r := range res.Runs {
		if !slices.Contains(names, r.Name) {
			names = append(names, r.Name)
		}
		rounds = max(rounds, r.Round)
		if r.Error != "" {
			fmt.Fprintf(w, "  !! %s (round %d): %s\n", r.Name, r.Round, r.Error)
		}
	}
	if rounds > 1 {
		fmt.Fprintf(w, "\n══ Peers, %d rounds, each peer on a fresh control plane, same fixture and seed: medians; a ratio is the median of each round's ratio (lowest–highest)\n", rounds)
	} else {
		fmt.Fprintf(w, "\n══ Peers, one run each on a fresh control plane, same fixture and seed\n")
	}
	t := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(t, "  metric\t%s\t%s\tgoal\tverdict\n", strings.Join(names, "\t"), strings.Join(ratioKeys, "\t"))
	for _, row := range res.Comparison {
		fmt.Fprintf(t, "  %s (%s)", row.Metric, row.Unit)
		for _, n := range names {
			if v, ok := row.Values[n]; ok {
				fmt.Fprintf(t, "\t%s", trimFloat(v))
			} else {
				fmt.Fprintf(t, "\tn/a")
			}
		}
		for _, key := range ratioKeys {
			if v, ok := row.Ratios[key]; ok {
				fmt.Fprintf(t, "\t%.2f×", v)
				if r, ok := row.RatioRanges[key]; ok {
					fmt.Fprintf(t, " (%.2f–%.2f)", r[0], r[1])
				}
			} else {
				fmt.Fprintf(t, "\t–")
			}
		}
		fmt.Fprintf(t, "\t%s\t%s\n", orDash(row.Goal), orDash(row.Verdict))
	}
	t.Flush()
}

func trimFloat(v float64) string {
	if v >= 100 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}
