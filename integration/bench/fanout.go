package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kick-operator/kick/integration/rolloutwatch"
)

// A -fanout run measures KICK alone on a fan-out: -deployments Deployments
// (500 by default) that all consume one Secret, and one change of it. It
// runs once per restart budget named by -fanout ("10,none": the KickPolicy's
// restart.maxConcurrent 10, then no limit), each on a fresh control plane,
// and reports the time to the last restart, the most rollouts in progress
// at once counted from the Deployments' own status (package rolloutwatch), the
// API calls and writes per restart from KICK's client metrics, and KICK's
// memory. -plot draws the rollouts in progress over time.
//
// A budget written "10+waves" also orders the restarts in two waves: a
// canary of fanoutCanary Deployments that must stay available for
// fanoutBake, then the rest (wave main). The run then also reports when the
// canary's last rollout completed and when the first restart of main began:
// the gap between the two, less the bake, is the hand-over cost.
// -fanout-bake replaces the canary's bake.

// Defaults of a fan-out run (20 Deployments with -quick); -deployments and
// -unused-secrets on the command line replace them.
const (
	fanoutDeployments = 500
	fanoutUnused      = 0
	fanoutTimeout     = 20 * time.Minute

	fanoutCanary = 5                // Deployments of the canary wave
	fanoutBake   = 20 * time.Second // the canary's bake
)

// FanoutResults is the JSON of a -fanout run.
type FanoutResults struct {
	Started     time.Time   `json:"started"`
	Deployments int         `json:"deployments"`
	Runs        []FanoutRun `json:"runs"`
}

// FanoutRun is one fan-out under one budget. Times count from the return
// of the Secret's update.
type FanoutRun struct {
	// MaxConcurrent is the KickPolicy's restart.maxConcurrent; 0 is no limit.
	MaxConcurrent int `json:"maxConcurrent"`
	// Waves is set when the restarts ran in waves: canary, then main.
	Waves     *WavesRun `json:"waves,omitempty"`
	Restarted int       `json:"restarted"`
	// ExtraRestarts are restarts beyond the first of a Deployment.
	ExtraRestarts int      `json:"extraRestarts"`
	Missing       []string `json:"missing,omitempty"`
	LastRestartMS float64  `json:"lastRestartMs"`
	// SettledMS is when every Deployment had restarted and was available
	// again.
	SettledMS float64 `json:"settledMs"`
	// PeakInProgress is the most rollouts in progress at once.
	PeakInProgress int        `json:"peakInProgress"`
	PeakWhen       string     `json:"peakWhen,omitempty"`
	Internals      *Internals `json:"internals,omitempty"`
	// APICallsPerRestart and WritesPerRestart cover the whole fan-out, up
	// to the quiet after the last rollout.
	APICallsPerRestart float64 `json:"apiCallsPerRestart,omitempty"`
	WritesPerRestart   float64 `json:"writesPerRestart,omitempty"`
	SteadyRSSMB        float64 `json:"steadyRssMb"`
	PeakRSSMB          float64 `json:"peakRssMb"`
	CPUSeconds         float64 `json:"cpuSeconds"`
	// Timeline is the rollouts in progress each time the number changed.
	Timeline      []FanoutPoint `json:"timeline"`
	ControllerLog string        `json:"controllerLog"`
	LogErrors     int           `json:"logErrors"`
	Error         string        `json:"error,omitempty"`
}

// WavesRun is what a run in waves adds, in milliseconds from the return of
// the Secret's update.
type WavesRun struct {
	Canary int     `json:"canary"` // Deployments in the canary wave
	BakeMS float64 `json:"bakeMs"`
	// CanaryDoneMS is when the canary's last rollout completed;
	// FirstMainMS when the first Deployment of main took its restart.
	CanaryDoneMS float64 `json:"canaryDoneMs"`
	FirstMainMS  float64 `json:"firstMainMs"`
	// HandOverMS is FirstMainMS - CanaryDoneMS - BakeMS: what the hand-over
	// from one wave to the next costs beyond the bake.
	HandOverMS float64 `json:"handOverMs"`
	// CanaryFirst reports whether every canary restart began before the
	// first of main.
	CanaryFirst bool `json:"canaryFirst"`
}

// fanoutScenario is one run of a -fanout list.
type fanoutScenario struct {
	maxConcurrent int           // 0: no limit
	waves         bool          // canary, then main
	bake          time.Duration // the canary's bake (fanoutBake unless -fanout-bake)
}

// FanoutPoint is the number of rollouts in progress from S seconds on.
type FanoutPoint struct {
	S          float64 `json:"s"`
	InProgress int     `json:"inProgress"`
}

// parseBudgets turns "10,none,10+waves" into scenarios: maxConcurrent 0 for
// none, and "+waves" for a run in waves.
func parseBudgets(spec string) ([]fanoutScenario, error) {
	var out []fanoutScenario
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		base, waves := strings.CutSuffix(part, "+waves")
		switch base {
		case "":
			if waves {
				return nil, fmt.Errorf("-fanout: %q names no budget before +waves; use e.g. 10+waves or none+waves", part)
			}
		case "none", "0":
			out = append(out, fanoutScenario{waves: waves})
		default:
			n, err := strconv.Atoi(base)
			if err != nil || n < 1 {
				return nil, fmt.Errorf("-fanout: %q is neither a positive integer nor none (optionally followed by +waves)", part)
			}
			out = append(out, fanoutScenario{maxConcurrent: n, waves: waves})
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("-fanout names no budget; use e.g. 10,none,10+waves")
	}
	return out, nil
}

// runFanout runs the fan-out once per budget and writes -json and -plot.
func runFanout(ctx context.Context, spec string, args []string, out io.Writer) (*FanoutResults, error) {
	scenarios, err := parseBudgets(spec)
	if err != nil {
		return nil, err
	}
	bakeFlag, args, _ := extractFlag(args, "fanout-bake")
	bake := fanoutBake
	if bakeFlag != "" {
		if bake, err = time.ParseDuration(bakeFlag); err != nil || bake < 0 {
			return nil, fmt.Errorf("-fanout-bake: %q is not a non-negative duration", bakeFlag)
		}
	}
	jsonPath, args, _ := extractFlag(args, "json")
	plotPath, args, _ := extractFlag(args, "plot")
	deployments := fanoutDeployments
	if slices.ContainsFunc(args, func(a string) bool { return strings.TrimLeft(a, "-") == "quick" }) {
		deployments = 20
	}
	args = append([]string{"-deployments", strconv.Itoa(deployments), "-unused-secrets", strconv.Itoa(fanoutUnused)}, args...)
	args = append(args, "-shared-secret", "-rounds", "0")
	res := &FanoutResults{Started: time.Now()}
	for _, sc := range scenarios {
		sc.bake = bake
		run, err := fanoutOnce(ctx, args, sc)
		if run != nil {
			res.Runs = append(res.Runs, *run)
		}
		if err != nil {
			return res, err
		}
		if jsonPath != "" {
			if err := writeJSON(jsonPath, res); err != nil {
				return res, err
			}
		}
	}
	if len(res.Runs) > 0 {
		res.Deployments = res.Runs[0].Restarted + len(res.Runs[0].Missing)
	}
	printFanout(out, res)
	if plotPath != "" {
		if err := writeFanoutPlot(plotPath, res); err != nil {
			return res, err
		}
		fmt.Fprintf(out, "  plot: %s\n", plotPath)
	}
	return res, nil
}

// fanoutSetup is KICK's setup with the policy's budget and waves, as a
// file.
func fanoutSetup(sc fanoutScenario) (string, error) {
	text, err := fanoutSetupText(sc)
	if err != nil {
		return "", err
	}
	f, err := os.CreateTemp("", "kick-bench-fanout-*.yaml")
	if err != nil {
		return "", err
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		return "", err
	}
	return f.Name(), f.Close()
}

// fanoutSetupText is kick-setup.yaml with the scenario's budget and waves
// put into the KickPolicy's restart section.
func fanoutSetupText(sc fanoutScenario) (string, error) {
	const anchor = "    minInterval: 0s"
	if !strings.Contains(kickSetup, anchor) {
		return "", fmt.Errorf("kick-setup.yaml no longer has %q to put the budget beside", anchor)
	}
	add := ""
	if sc.maxConcurrent > 0 {
		add += "\n    maxConcurrent: " + strconv.Itoa(sc.maxConcurrent)
	}
	if sc.waves {
		names := make([]string, fanoutCanary)
		for i := range names {
			names[i] = consumedName(i)
		}
		add += "\n    waves:" +
			"\n    - name: canary" +
			"\n      selector:" +
			"\n        matchExpressions:" +
			"\n        - {key: app, operator: In, values: [" + strings.Join(names, ", ") + "]}" +
			"\n      bake: " + sc.bake.String() +
			"\n    - name: main" +
			"\n      selector: {}"
	}
	return strings.Replace(kickSetup, anchor, anchor+add, 1), nil
}

// fanoutOnce builds the fixture on a fresh control plane, starts KICK,
// changes the shared Secret once and follows the fan-out to its end.
func fanoutOnce(ctx context.Context, args []string, sc fanoutScenario) (*FanoutRun, error) {
	setup, err := fanoutSetup(sc)
	if err != nil {
		return nil, err
	}
	defer os.Remove(setup)
	timeout, args, _ := extractFlag(args, "fanout-timeout")
	wait := fanoutTimeout
	if timeout != "" {
		if wait, err = time.ParseDuration(timeout); err != nil {
			return nil, fmt.Errorf("-fanout-timeout: %w", err)
		}
	}
	c, err := parseFlags(append(args, "-setup", setup), os.Stderr)
	if err != nil {
		return nil, err
	}
	run := &FanoutRun{MaxConcurrent: sc.maxConcurrent}
	if sc.waves {
		run.Waves = &WavesRun{Canary: min(fanoutCanary, c.deployments), BakeMS: ms(sc.bake)}
	}
	budget := run.budget()
	logf := func(format string, a ...any) {
		fmt.Fprintf(os.Stderr, "%s  [%s] "+format+"\n", append([]any{time.Now().Format("15:04:05"), budget}, a...)...)
	}
	fx, err := newFixture(ctx, c, logf)
	if fx != nil {
		defer fx.close()
	}
	if err != nil {
		return nil, err
	}
	if err := fx.build(ctx); err != nil {
		return nil, err
	}
	stop := make(chan struct{})
	defer close(stop)
	tr, err := startTracker(ctx, fx, stop)
	if err != nil {
		return nil, err
	}
	wc, err := startWriteCounter(ctx, fx, stop)
	if err != nil {
		return nil, err
	}
	m := &phaseRunner{c: c, fx: fx, tr: tr, wc: wc, logf: logf, res: &Results{}}
	if _, err := m.waitQuiet(ctx, c.quiet); err != nil {
		return nil, err
	}
	ctrl, err := startController(c, fx.kubeconfig)
	if err != nil {
		return nil, err
	}
	defer ctrl.stop()
	m.ctrl = ctrl
	run.ControllerLog = ctrl.logPath
	err = fanoutMeasure(ctx, m, run, wait)
	ctrl.stop()
	run.LogErrors = scanLog(ctrl.logPath).Errors
	if err != nil {
		run.Error = err.Error()
	}
	return run, err
}

// fanoutMeasure waits for KICK to settle, changes the shared Secret and
// follows every rollout until the last one completes.
func fanoutMeasure(ctx context.Context, m *phaseRunner, run *FanoutRun, wait time.Duration) error {
	c := m.c
	how, err := m.ctrl.waitReady(ctx, c.settle)
	if err != nil {
		return err
	}
	m.logf("controller ready (%s); waiting for %s without writes", how, c.quiet)
	if err := m.settle(ctx, c.quiet); err != nil {
		return err
	}
	if _, err := m.waitIdle(ctx); err != nil {
		return err
	}
	w, err := m.fx.cs.AppsV1().Deployments(c.namespace).Watch(ctx, metav1.ListOptions{LabelSelector: "kick-bench=true"})
	if err != nil {
		return err
	}
	s := rolloutwatch.Follow(w)
	defer w.Stop()
	keys := make([]string, c.deployments)
	for i := range keys {
		keys[i] = c.namespace + "/" + consumedName(i)
	}
	secrets := m.fx.cs.CoreV1().Secrets(c.namespace)
	secret, err := secrets.Get(ctx, sharedName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	secret.Data = m.fx.payload()
	prom0 := m.scrape()
	cpu0 := m.ctrl.cpuSeconds()
	before := time.Now()
	if _, err := secrets.Update(ctx, secret, metav1.UpdateOptions{}); err != nil {
		return err
	}
	t0 := time.Now()
	m.logf("changed Secret %s consumed by %d Deployments", sharedName, c.deployments)
	settled, err := waitFanout(ctx, m, s, keys, t0, wait)
	if err != nil {
		return err
	}
	run.SettledMS = ms(settled.Sub(t0))
	run.LastRestartMS = ms(max(s.LastStart().Sub(t0), 0))
	run.PeakInProgress, run.PeakWhen = s.Peak()
	for _, p := range s.Timeline() {
		run.Timeline = append(run.Timeline, FanoutPoint{S: max(p.At.Sub(t0), 0).Seconds(), InProgress: p.InProgress})
	}
	if run.Waves != nil {
		handOver(run.Waves, s, keys, t0)
	}
	restarts := s.Restarts()
	for _, key := range keys {
		switch n := restarts[key]; {
		case n == 0:
			run.Missing = append(run.Missing, key)
		default:
			run.Restarted++
			run.ExtraRestarts += n - 1
		}
	}
	// The bookkeeping after the last rollout (requests completing) belongs
	// to the fan-out's cost.
	if err := m.settle(ctx, c.quiet); err != nil {
		return err
	}
	run.CPUSeconds = m.ctrl.cpuSeconds() - cpu0
	for _, st := range m.ctrl.memBetween(t0, time.Now()) {
		run.PeakRSSMB = max(run.PeakRSSMB, mb(st.rss))
	}
	if steady := m.ctrl.memBetween(before.Add(-idleFor), before); len(steady) > 0 {
		v := make([]int64, len(steady))
		for i, st := range steady {
			v[i] = st.rss
		}
		run.SteadyRSSMB = mb(median(v))
	}
	if run.Internals = internals(prom0, m.scrape()); run.Internals != nil && run.Restarted > 0 {
		run.APICallsPerRestart = run.Internals.APICalls / float64(run.Restarted)
		run.WritesPerRestart = writes(run.Internals.APICallsByVerb) / float64(run.Restarted)
	}
	m.logf("%d restarted, last after %s, all available after %s; peak %d rollouts in progress",
		run.Restarted, time.Duration(run.LastRestartMS*1e6).Round(time.Millisecond), time.Duration(run.SettledMS*1e6).Round(time.Millisecond), run.PeakInProgress)
	return nil
}

// handOver fills w from the rollouts s saw: the first w.Canary keys are
// the canary wave, the rest main.
func handOver(w *WavesRun, s *rolloutwatch.Sampler, keys []string, t0 time.Time) {
	var canaryDone, lastCanaryStart, firstMain time.Time
	for i, key := range keys {
		started, available := s.Times(key)
		switch {
		case i < w.Canary:
			if available.After(canaryDone) {
				canaryDone = available
			}
			if started.After(lastCanaryStart) {
				lastCanaryStart = started
			}
		case !started.IsZero() && (firstMain.IsZero() || started.Before(firstMain)):
			firstMain = started
		}
	}
	if canaryDone.IsZero() || firstMain.IsZero() {
		return
	}
	w.CanaryDoneMS = ms(canaryDone.Sub(t0))
	w.FirstMainMS = ms(firstMain.Sub(t0))
	w.HandOverMS = w.FirstMainMS - w.CanaryDoneMS - w.BakeMS
	w.CanaryFirst = lastCanaryStart.Before(firstMain)
}

// waitFanout waits until every Deployment restarted once and is available
// again, logging progress; it returns when that was first seen. Past the
// timeout it returns what it has, leaving the missing ones to the report.
func waitFanout(ctx context.Context, m *phaseRunner, s *rolloutwatch.Sampler, keys []string, t0 time.Time, wait time.Duration) (time.Time, error) {
	lastLog := time.Now()
	for {
		if ok, why := s.Settled(1, keys...); ok {
			return time.Now(), nil
		} else if time.Since(t0) > wait {
			m.logf("not settled within %s: %v", wait, why)
			return time.Now(), nil
		}
		if err := m.ctrl.exited(); err != nil {
			return time.Time{}, err
		}
		if time.Since(lastLog) >= 5*time.Second {
			m.logf("%d of %d restarted, %d rollouts in progress", len(s.Restarts()), len(keys), s.InProgress())
			lastLog = time.Now()
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (r FanoutRun) budget() string {
	b := "no limit"
	if r.MaxConcurrent > 0 {
		b = fmt.Sprintf("maxConcurrent %d", r.MaxConcurrent)
	}
	if r.Waves != nil {
		b += fmt.Sprintf(", waves canary %d (bake %s) then main", r.Waves.Canary, time.Duration(r.Waves.BakeMS*1e6))
	}
	return b
}

func printFanout(out io.Writer, res *FanoutResults) {
	fmt.Fprintf(out, "\nFan-out: %d Deployments share one Secret; one change\n", res.Deployments)
	t := tabwriter.NewWriter(out, 2, 8, 2, ' ', 0)
	fmt.Fprintf(t, "  budget\trestarted\tlast restart\tall available\tpeak in progress\tAPI calls/restart\twrites/restart\tRSS steady\tRSS peak\tCPU\t\n")
	runs := append([]FanoutRun(nil), res.Runs...)
	sort.SliceStable(runs, func(i, j int) bool {
		if (runs[i].Waves == nil) != (runs[j].Waves == nil) {
			return runs[i].Waves == nil
		}
		return runs[i].MaxConcurrent > runs[j].MaxConcurrent
	})
	for _, r := range runs {
		fmt.Fprintf(t, "  %s\t%d (+%d extra)\t%s\t%s\t%d\t%.1f\t%.1f\t%.0f MB\t%.0f MB\t%.1f s\t\n", r.budget(), r.Restarted, r.ExtraRestarts,
			fmtMS(r.LastRestartMS), fmtMS(r.SettledMS), r.PeakInProgress, r.APICallsPerRestart, r.WritesPerRestart, r.SteadyRSSMB, r.PeakRSSMB, r.CPUSeconds)
	}
	t.Flush()
	for _, r := range runs {
		if w := r.Waves; w != nil && w.FirstMainMS > 0 {
			order := "every canary restart began before main"
			if !w.CanaryFirst {
				order = "MAIN BEGAN BEFORE THE CANARY"
			}
			fmt.Fprintf(out, "  %s: canary done at %s, first main restart at %s: hand-over %s beyond the bake; %s\n",
				r.budget(), fmtMS(w.CanaryDoneMS), fmtMS(w.FirstMainMS), fmtMS(w.HandOverMS), order)
		}
	}
	for _, r := range runs {
		if len(r.Missing) > 0 || r.Error != "" {
			fmt.Fprintf(out, "  %s: %d not restarted; %s\n", r.budget(), len(r.Missing), r.Error)
		}
	}
}
