package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"runtime"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// Results is everything one run measured; -json writes it as is. Times are
// milliseconds, memory is MB (10^6 bytes).
type Results struct {
	Started       time.Time `json:"started"`
	Duration      float64   `json:"durationMs"`
	Controller    string    `json:"controller"`
	Setup         string    `json:"setup"`
	Cluster       string    `json:"cluster"`
	Deployments   int       `json:"deployments"`
	UnusedSecrets int       `json:"unusedSecrets"`
	// UnusedConfigMaps are ConfigMaps no workload consumes.
	UnusedConfigMaps int   `json:"unusedConfigMaps,omitempty"`
	SecretBytes      int   `json:"secretBytes"`
	Rounds           int   `json:"rounds"`
	Seed             int64 `json:"seed"`
	// LoadAvg is the host's 1-minute load average when the controller
	// started and when the run ended: other work on the host skews timings.
	LoadAvg       [2]string `json:"loadAvg"`
	ControllerLog string    `json:"controllerLog"`

	Install InstallResult `json:"install"`
	Single  LatencyResult `json:"singleChange"`
	Burst   BurstResult   `json:"burst"`
	Memory  MemoryResult  `json:"memory"`
	API     APIResult     `json:"apiCalls"`
	Log     LogSummary    `json:"controllerLogSummary"`
	Targets []Target      `json:"targets"`

	HarnessError string `json:"harnessError,omitempty"`
}

type InstallResult struct {
	ReadyBy        string  `json:"readyBy"`
	ReadyAfterMS   float64 `json:"readyAfterMs"`
	SettledAfterMS float64 `json:"settledAfterMs"`
	Quiet          bool    `json:"quiet"`
	// Idle: the controller's CPU use fell below 5 % of a core before its
	// steady memory was read (false: it never did within -quiet-max).
	Idle               bool         `json:"idle"`
	Restarts           int          `json:"restarts"`
	Restarted          []string     `json:"restarted,omitempty"`
	KickRequests       *int64       `json:"kickRequestsCreated"`
	SourceObservations *int64       `json:"sourceObservations"`
	Writes             int64        `json:"writes"`
	Kinds              []KindWrites `json:"kinds"`
	CPUSeconds         float64      `json:"cpuSeconds"`
}

// KindWrites counts one resource's objects and write events in a phase.
type KindWrites struct {
	Resource      string `json:"resource"`
	ObjectsBefore int    `json:"objectsBefore"`
	ObjectsAfter  int    `json:"objectsAfter"`
	Created       int64  `json:"created"`
	Updated       int64  `json:"updated"`
	Deleted       int64  `json:"deleted"`
}

type LatencyResult struct {
	SamplesMS          []float64  `json:"samplesMs"`
	Restarts           int        `json:"restarts"`
	Missed             []string   `json:"missed,omitempty"`
	P50                float64    `json:"p50Ms"`
	P90                float64    `json:"p90Ms"`
	P99                float64    `json:"p99Ms"`
	Max                float64    `json:"maxMs"`
	Timeline           []Stage    `json:"timeline"`
	APICallsPerRestart *float64   `json:"apiCallsPerRestart"`
	Internals          *Internals `json:"internals"`
	// Server is kube-apiserver's timing of the requests it served in the
	// phase (every client's, the harness's included).
	Server map[string]ServerCall `json:"apiServer,omitempty"`
	// Watches is what kube-apiserver sent on watches in the phase, per
	// resource (every client's).
	Watches    map[string]ServerWatch `json:"apiServerWatches,omitempty"`
	CPUSeconds float64                `json:"cpuSeconds"`
}

func (l *LatencyResult) stats() {
	s := append([]float64(nil), l.SamplesMS...)
	sort.Float64s(s)
	l.P50, l.P90, l.P99 = percentile(s, 50), percentile(s, 90), percentile(s, 99)
	if len(s) > 0 {
		l.Max = s[len(s)-1]
	}
}

// Stage is one resource's part in the single-change timeline: the median
// time from the Secret update's return to the first write event of that
// resource, and the median number of write events up to the restart.
type Stage struct {
	Resource     string  `json:"resource"`
	Rounds       int     `json:"rounds"`
	FirstWriteMS float64 `json:"firstWriteMs"`
	Writes       float64 `json:"writes"`
}

// BurstResult is the burst phase: -bursts bursts of the same Secrets,
// one after the other. Counts (Changed, Restarted, ExtraRestarts, Writes)
// add up every burst; times and CPU are the median burst's, and Runs
// keeps each burst.
type BurstResult struct {
	Changed            int          `json:"changed"`
	Restarted          int          `json:"restarted"`
	Missing            []string     `json:"missing,omitempty"`
	ExtraRestarts      int          `json:"extraRestarts"`
	UpdatesMS          float64      `json:"updatesMs"`
	TotalMS            float64      `json:"totalMs"`
	PerDeploymentMS    []float64    `json:"perDeploymentMs"`
	PerDeploymentP50MS float64      `json:"perDeploymentP50Ms"`
	PerDeploymentP99MS float64      `json:"perDeploymentP99Ms"`
	SettledMS          float64      `json:"settledMs"`
	Writes             int64        `json:"writes"`
	Kinds              []KindWrites `json:"kinds"`
	CPUSeconds         float64      `json:"cpuSeconds"`
	Internals          *Internals   `json:"internals"`
	Runs               []BurstRun   `json:"runs"`
}

// size is how many Secrets one burst changes.
func (b BurstResult) size() int { return b.Changed / max(len(b.Runs), 1) }

// BurstRun is one burst: when its updates went out, its last restart,
// when the cluster was quiet again, and the controller's CPU and peak
// memory meanwhile.
type BurstRun struct {
	Restarted     int      `json:"restarted"`
	Missing       []string `json:"missing,omitempty"`
	ExtraRestarts int      `json:"extraRestarts"`
	UpdatesMS     float64  `json:"updatesMs"`
	TotalMS       float64  `json:"totalMs"`
	SettledMS     float64  `json:"settledMs"`
	CPUSeconds    float64  `json:"cpuSeconds"`
	// PeakMB is the highest VmRSS sample from the burst's first update
	// until it settled.
	PeakMB float64 `json:"peakMb"`
}

// PhasePeaks holds the highest VmRSS sample of each phase.
type PhasePeaks struct {
	Install PhasePeak `json:"install"`
	Single  PhasePeak `json:"single"`
	Burst   PhasePeak `json:"burst"`
}

// PhasePeak is one sample in MB, split like the steady figure.
type PhasePeak struct {
	MB     float64 `json:"mb"`
	AnonMB float64 `json:"anonMb"`
	FileMB float64 `json:"fileMb"`
}

func (p PhasePeak) String() string {
	return fmt.Sprintf("%.1f MB (%.1f + %.1f)", p.MB, p.AnonMB, p.FileMB)
}

type MemoryResult struct {
	SteadyMB float64 `json:"steadyMb"`
	// SteadyAnonMB and SteadyFileMB split SteadyMB into anonymous memory
	// and file-backed pages (the executable's code).
	SteadyAnonMB float64 `json:"steadyAnonMb"`
	SteadyFileMB float64 `json:"steadyFileMb"`
	PeakMB       float64 `json:"peakMb"`
	// PeakByPhase says when the peak happened: the highest sample while
	// the controller installed (listed and settled), during the single
	// changes, and during the burst.
	PeakByPhase PhasePeaks `json:"peakByPhase"`
	Samples     int        `json:"samples"`
	// GoHeap is the Go runtime's view at the end of install, when the
	// controller exposes go_memstats_*.
	GoHeap *GoHeap `json:"goHeap,omitempty"`
}

type GoHeap struct {
	InuseMB    float64 `json:"inuseMb"`
	IdleMB     float64 `json:"idleMb"`
	ReleasedMB float64 `json:"releasedMb"`
}

type APIResult struct {
	BurstCalls float64            `json:"burstCalls"`
	PerRestart *float64           `json:"perRestart"`
	ByMethod   map[string]float64 `json:"byMethod,omitempty"`
}

// Target is one goal and whether the run met it.
type Target struct {
	Name    string `json:"name"`
	Result  string `json:"result"`
	Goal    string `json:"goal"`
	Verdict string `json:"verdict"` // PASS, FAIL or n/a
}

// evaluate compares the results with KICK's performance targets.
func evaluate(r *Results) []Target {
	var out []Target
	add := func(name, result, goal string, measured, pass bool) {
		v := "n/a"
		if measured {
			v = map[bool]string{true: "PASS", false: "FAIL"}[pass]
		}
		out = append(out, Target{name, result, goal, v})
	}
	s := r.Single
	singleNote := ""
	if len(s.Missed) > 0 {
		singleNote = fmt.Sprintf(" (%d of %d missed)", len(s.Missed), s.Restarts+len(s.Missed))
	}
	ran := s.Restarts+len(s.Missed) > 0
	add("single change p50", fmtLatency(s.P50, s.Restarts)+singleNote, "≤ 20 ms", ran, s.Restarts > 0 && len(s.Missed) == 0 && s.P50 <= 20)
	add("single change p99", fmtLatency(s.P99, s.Restarts)+singleNote, "≤ 50 ms", ran, s.Restarts > 0 && len(s.Missed) == 0 && s.P99 <= 50)
	b := r.Burst
	add(fmt.Sprintf("burst of %d (median of %d)", b.size(), len(b.Runs)), fmt.Sprintf("%s, %d/%d restarted", fmtLatency(b.TotalMS, b.Restarted), b.Restarted, b.Changed),
		"≤ 2 s, all", b.Changed > 0, b.TotalMS <= 2000 && b.Restarted == b.Changed)
	add("RSS steady", fmt.Sprintf("%.1f MB", r.Memory.SteadyMB), "≤ 50 MB", r.Memory.SteadyMB > 0, r.Memory.SteadyMB <= 50)
	add("RSS peak", fmt.Sprintf("%.1f MB", r.Memory.PeakMB), "≤ 70 MB", r.Memory.PeakMB > 0, r.Memory.PeakMB <= 70)
	i := r.Install
	measuredInstall := i.ReadyBy != ""
	add("install restarts", fmt.Sprint(i.Restarts), "0", measuredInstall, i.Restarts == 0)
	add("install KickRequests", fmtCount(i.KickRequests), "0", measuredInstall && i.KickRequests != nil, i.KickRequests != nil && *i.KickRequests == 0)
	add("install observation records", fmtCount(i.SourceObservations), fmt.Sprintf("≤ %d (consumed Secrets)", r.Deployments),
		measuredInstall && i.SourceObservations != nil, i.SourceObservations != nil && *i.SourceObservations <= int64(r.Deployments))
	return out
}

func printReport(w io.Writer, r *Results) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format+"\n", a...) }
	tw := func() *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0) }
	p("")
	p("══ Restart controller benchmark — %s, took %s", r.Started.UTC().Format("2006-01-02 15:04 UTC"), time.Duration(r.Duration*1e6).Round(time.Second))
	t := tw()
	fmt.Fprintf(t, "controller\t%s\n", r.Controller)
	fmt.Fprintf(t, "setup\t%s\n", orNone(r.Setup))
	fmt.Fprintf(t, "cluster\t%s\n", r.Cluster)
	fmt.Fprintf(t, "fixture\t%d Deployments (1 replica) each consuming its own %d-byte Secret via envFrom; %d unconsumed Secrets, %d unconsumed ConfigMaps\n", r.Deployments, r.SecretBytes, r.UnusedSecrets, r.UnusedConfigMaps)
	fmt.Fprintf(t, "host\t%d CPUs, %s %s/%s (harness, API server and controller share them); load average %s at controller start, %s at the end\n",
		runtime.NumCPU(), runtime.Version(), runtime.GOOS, runtime.GOARCH, r.LoadAvg[0], r.LoadAvg[1])
	fmt.Fprintf(t, "controller log\t%s\n", r.ControllerLog)
	t.Flush()

	i := r.Install
	p("\n── 1. Install (controller started on a settled cluster)")
	t = tw()
	fmt.Fprintf(t, "  ready after\t%s (%s)\n", fmtMS(i.ReadyAfterMS), i.ReadyBy)
	quiet := "quiet"
	if !i.Quiet {
		quiet = "NOT quiet, gave up waiting"
	}
	if quiet += ", idle"; !i.Idle {
		quiet += " NOT reached"
	}
	fmt.Fprintf(t, "  settled after\t%s (%s)\n", fmtMS(i.SettledAfterMS), quiet)
	fmt.Fprintf(t, "  restarts caused\t%s\n", strings.TrimSpace(fmt.Sprint(i.Restarts, " ", listShort(i.Restarted))))
	fmt.Fprintf(t, "  KickRequests created\t%s\n", fmtCount(i.KickRequests))
	fmt.Fprintf(t, "  SourceObservations\t%s\n", fmtCount(i.SourceObservations))
	fmt.Fprintf(t, "  write events\t%d (all watched kinds, all namespaces, including cascades)\n", i.Writes)
	fmt.Fprintf(t, "  controller CPU\t%.1f s\n", i.CPUSeconds)
	t.Flush()
	printKinds(w, i.Kinds)

	s := r.Single
	p("\n── 2. Single-change latency (%d rounds; Secret Update returned → Deployment generation bump on the watch)", r.Rounds)
	t = tw()
	fmt.Fprintf(t, "  p50 / p90 / p99 / max\t%s / %s / %s / %s\n", fmtLatency(s.P50, s.Restarts), fmtLatency(s.P90, s.Restarts), fmtLatency(s.P99, s.Restarts), fmtLatency(s.Max, s.Restarts))
	fmt.Fprintf(t, "  restarted\t%d/%d %s\n", s.Restarts, r.Rounds, missed(s.Missed))
	fmt.Fprintf(t, "  API calls per restart\t%s (whole cycle: restart, rollout tracking, completion)\n", fmtFloat(s.APICallsPerRestart))
	fmt.Fprintf(t, "  controller CPU\t%.2f s for %d changes\n", s.CPUSeconds, r.Rounds)
	t.Flush()
	if len(s.Timeline) > 0 {
		p("  where the time goes (write events seen on watches, medians over the rounds; negative: before Update returned):")
		t = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(t, "    resource\tfirst write after\twrites up to restart\tin rounds\t\n")
		for _, st := range s.Timeline {
			fmt.Fprintf(t, "    %s\t%s\t%.0f\t%d\t\n", st.Resource, fmtMS(st.FirstWriteMS), st.Writes, st.Rounds)
		}
		t.Flush()
	}
	printInternals(w, s.Internals)
	printServer(w, s.Server)
	printWatches(w, s.Watches)

	b := r.Burst
	p("\n── 3. Burst (%d Secrets updated at once, %d times; times are the median burst's)", b.size(), len(b.Runs))
	t = tw()
	fmt.Fprintf(t, "  updates issued in\t%s\n", fmtMS(b.UpdatesMS))
	fmt.Fprintf(t, "  first update → last restart\t%s\n", fmtLatency(b.TotalMS, b.Restarted))
	if len(b.Runs) > 1 {
		each := make([]string, len(b.Runs))
		for i, run := range b.Runs {
			each[i] = fmtLatency(run.TotalMS, run.Restarted)
		}
		fmt.Fprintf(t, "  each burst's last restart\t%s\n", strings.Join(each, ", "))
		peaks := make([]string, len(b.Runs))
		for i, run := range b.Runs {
			peaks[i] = fmt.Sprintf("%.1f MB", run.PeakMB)
		}
		fmt.Fprintf(t, "  each burst's peak RSS\t%s\n", strings.Join(peaks, ", "))
	}
	fmt.Fprintf(t, "  restarted\t%d/%d %s\n", b.Restarted, b.Changed, missed(b.Missing))
	fmt.Fprintf(t, "  restarted more than once\t%d extra generation bumps\n", b.ExtraRestarts)
	fmt.Fprintf(t, "  per Deployment (own update → restart)\tp50 %s, p99 %s\n", fmtLatency(b.PerDeploymentP50MS, b.Restarted), fmtLatency(b.PerDeploymentP99MS, b.Restarted))
	fmt.Fprintf(t, "  all rolled out and quiet after\t%s\n", fmtMS(b.SettledMS))
	fmt.Fprintf(t, "  write events\t%d (including the harness's %d Secret updates and the rollouts)\n", b.Writes, b.Changed)
	fmt.Fprintf(t, "  controller CPU\t%.1f s (median burst)\n", b.CPUSeconds)
	t.Flush()
	printKinds(w, b.Kinds)
	printInternals(w, b.Internals)

	p("\n── 4. Memory (VmRSS of the controller's process group, sampled every 250 ms; MB = 10^6 bytes)")
	t = tw()
	fmt.Fprintf(t, "  steady\t%.1f MB (median over the quiet period after install): %.1f MB anonymous + %.1f MB file-backed (RssAnon/RssFile)\n",
		r.Memory.SteadyMB, r.Memory.SteadyAnonMB, r.Memory.SteadyFileMB)
	fmt.Fprintf(t, "  peak\t%.1f MB (max of %d samples, whole run)\n", r.Memory.PeakMB, r.Memory.Samples)
	pp := r.Memory.PeakByPhase
	fmt.Fprintf(t, "  peak by phase\tinstall %s, single changes %s, burst %s (anonymous + file-backed)\n", pp.Install, pp.Single, pp.Burst)
	if h := r.Memory.GoHeap; h != nil {
		fmt.Fprintf(t, "  Go heap after install\t%.1f MB in use, %.1f MB idle of which %.1f MB returned to the OS (go_memstats_heap_*)\n", h.InuseMB, h.IdleMB, h.ReleasedMB)
	}
	t.Flush()

	p("\n── 5. API calls per restart (client-go rest_client_requests_total, burst until settled)")
	if r.API.PerRestart == nil {
		p("  n/a (no metrics endpoint or no rest_client_requests_total)")
	} else {
		p("  %.1f per restart (%.0f calls for %d restarts: %s)", *r.API.PerRestart, r.API.BurstCalls, b.Restarted, byKey(r.API.ByMethod, "%.0f"))
	}

	p("\n── Controller log: %d lines, %d error lines (%s)", r.Log.Lines, r.Log.Errors, r.Log.Path)
	for _, e := range r.Log.Top {
		p("  %s", e)
	}

	p("\n── 6. Targets")
	t = tw()
	fmt.Fprintf(t, "  target\tresult\tgoal\tverdict\n")
	pass, measured := 0, 0
	for _, g := range r.Targets {
		fmt.Fprintf(t, "  %s\t%s\t%s\t%s\n", g.Name, g.Result, g.Goal, g.Verdict)
		if g.Verdict != "n/a" {
			measured++
		}
		if g.Verdict == "PASS" {
			pass++
		}
	}
	t.Flush()
	p("  %d of %d measured targets met", pass, measured)
	if r.HarnessError != "" {
		p("\n!! the run stopped early: %s", r.HarnessError)
	}
}

// printInternals shows what the controller's own metrics say about a phase.
func printInternals(w io.Writer, in *Internals) {
	if in == nil {
		return
	}
	fmt.Fprintf(w, "  inside the controller (its own metrics, same window):\n")
	latency := "n/a (rest_client_request_duration_seconds not exposed)"
	if len(in.APIMeanMSByVerb) > 0 {
		latency = fmtMS(in.APIMeanMS) + " (" + byKey(in.APIMeanMSByVerb, "%.1f ms") + ")"
	}
	fmt.Fprintf(w, "    API requests  %.0f (%s), mean latency %s\n", in.APICalls, byKey(in.APICallsByVerb, "%.0f"), latency)
	if len(in.Queues) == 0 {
		return
	}
	t := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(t, "    workqueue\tadds\tmean wait in queue\tmean work\t\n")
	for _, q := range in.Queues {
		fmt.Fprintf(t, "    %s\t%.0f\t%s\t%s\t\n", q.Name, q.Adds, fmtMS(q.MeanWaitMS), fmtMS(q.MeanWorkMS))
	}
	t.Flush()
}

// printServer shows kube-apiserver's own timing of the phase's requests.
func printServer(w io.Writer, calls map[string]ServerCall) {
	printByKey(w, "inside kube-apiserver (apiserver_request_duration_seconds, every client, same window)",
		"request\tcount\tmean", calls, func(c ServerCall) string {
			return fmt.Sprintf("%.0f\t%s", c.Count, fmtMS(c.MeanMS))
		})
}

// printWatches shows the watch events kube-apiserver sent in the phase.
func printWatches(w io.Writer, watches map[string]ServerWatch) {
	printByKey(w, "watch events kube-apiserver sent (every client's, same window)",
		"resource\twatches open\tevents sent\tKiB", watches, func(x ServerWatch) string {
			return fmt.Sprintf("%.0f\t%.0f\t%.0f", x.Watches, x.Events, x.KB)
		})
}

// printByKey prints a titled table of m, one row per key in key order;
// nothing when m is empty.
func printByKey[T any](w io.Writer, title, header string, m map[string]T, row func(T) string) {
	if len(m) == 0 {
		return
	}
	fmt.Fprintf(w, "  %s:\n", title)
	t := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(t, "    %s\t\n", header)
	for _, k := range slices.Sorted(maps.Keys(m)) {
		fmt.Fprintf(t, "    %s\t%s\t\n", k, row(m[k]))
	}
	t.Flush()
}

func byKey(m map[string]float64, format string) string {
	keys := slices.Sorted(maps.Keys(m))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + " " + fmt.Sprintf(format, m[k])
	}
	return strings.Join(parts, ", ")
}

func printKinds(w io.Writer, kinds []KindWrites) {
	if len(kinds) == 0 {
		return
	}
	t := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(t, "    resource\tobjects before\tafter\tcreated\tupdated\tdeleted\t\n")
	for _, k := range kinds {
		fmt.Fprintf(t, "    %s\t%d\t%d\t%d\t%d\t%d\t\n", k.Resource, k.ObjectsBefore, k.ObjectsAfter, k.Created, k.Updated, k.Deleted)
	}
	t.Flush()
}

// loadAvg returns the host's 1-minute load average.
func loadAvg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(data)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "?"
}

// writeJSON writes v, indented, to path.
func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

func fmtMS(v float64) string {
	if v >= 1000 {
		return fmt.Sprintf("%.2f s", v/1000)
	}
	return fmt.Sprintf("%.1f ms", v)
}

// fmtLatency formats a latency computed from n samples; "–" without any.
func fmtLatency(v float64, n int) string {
	if n == 0 {
		return "–"
	}
	return fmtMS(v)
}

func fmtCount(v *int64) string {
	if v == nil {
		return "n/a"
	}
	return fmt.Sprint(*v)
}

func fmtFloat(v *float64) string {
	if v == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.1f", *v)
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func missed(names []string) string {
	if len(names) == 0 {
		return "(none missing)"
	}
	return "— missing: " + listShort(names)
}

func listShort(names []string) string {
	if len(names) == 0 {
		return ""
	}
	if len(names) > 10 {
		return fmt.Sprintf("(%s, … %d more)", strings.Join(names[:10], ", "), len(names)-10)
	}
	return "(" + strings.Join(names, ", ") + ")"
}
