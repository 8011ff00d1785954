// Command bench measures a restart controller from the outside, the same way
// for any tool, so results can be compared side by side.
//
// It starts a local control plane (or uses -kubeconfig), creates N
// Deployments that each consume one Secret through envFrom plus M Secrets
// nobody consumes, waits until every Deployment is Available, applies the
// -setup manifests and only then starts the controller given by -controller.
// It then measures:
//
//  1. install: what the controller writes when it first sees the cluster
//     (restarts, KickRequests, SourceObservations, write events per kind);
//  2. single-change latency: Secret Update returned → Deployment generation
//     bump seen on a watch, over -rounds distinct Deployments, with the
//     order in which other resources were written on the way;
//  3. burst: all N Secrets changed at once → last generation bump, -bursts
//     times (the median burst is reported);
//  4. memory: the controller's VmRSS (steady after install, peak overall);
//  5. API calls per restart, and workqueue waits, from the controller's
//     Prometheus metrics (client-go and controller-runtime) if it has them;
//
// and prints them next to KICK's targets. With -peers it runs the floor,
// KICK and stakater/Reloader one after another, each on a fresh control
// plane with the same fixture and seed, and prints KICK's ratios to them
// (latencies are medians over the -rounds single changes, so -rounds also
// sets how steady a ratio is; the peers' own figures move between runs on
// a shared machine).
// With -scales it does that at several multiples of the fixture and fits
// each cost against the fixture's size (scale.go). With -fanout it measures
// KICK on one Secret shared by every Deployment, once per restart budget
// (fanout.go). The exit code is 0 whenever the
// measurement ran, whatever the verdicts; non-zero only when the harness
// itself failed. Ctrl-C stops the controller and the control plane.
//
//	go run ./integration/bench -quick                  # smoke run, about a minute
//	go run ./integration/bench -json bench.json        # the full default run
//	go run ./integration/bench -peers floor,kick,reloader=/path/to/reloader   # one table with ratios
//	go run ./integration/bench -fanout 10,none -json fanout.json -plot fanout.png   # 500 Deployments, one Secret
//	go run ./integration/bench -scales 1,5,10 -peers floor,kick -json scale.json -plot scale.png   # the scale curve
//
// Placeholders in -controller, -ready-url and -metrics-url: {kubeconfig},
// {namespace} (the benchmark namespace), {metrics-addr} and {probe-addr}
// (free 127.0.0.1 ports). A URL whose address placeholder does not appear in
// the controller command is dropped, so KICK's default URLs do not apply to
// other tools (which then get -settle and "n/a"). {namespace} is also
// substituted in -setup manifests.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/kick-operator/kick/integration/cluster"
)

// defaultController is KICK's own manager; the harness runs it from the
// repository root.
const defaultController = "bin/kick-manager --kubeconfig {kubeconfig} --namespace kick-system" +
	" --metrics-bind-address {metrics-addr} --health-probe-bind-address {probe-addr}"

// builtinKickSetup names the embedded setup KICK needs (its namespace and a
// KickPolicy selecting every workload in the benchmark namespace).
const builtinKickSetup = "builtin:kick"

type config struct {
	kubeconfig   string
	binDir       string
	crdDirs      listFlag
	serverFlags  listFlag
	upstreamCRDs bool
	nodes        int
	namespace    string
	deployments  int
	unused       int
	shared       bool
	unusedCMs    int
	secretSize   int
	burstPart    float64
	rounds       int
	createWorker int
	burstWorker  int
	bursts       int
	image        string

	controller  string
	setup       listFlag
	labels      mapFlag
	annotations mapFlag
	readyURL    string
	metricsURL  string
	settle      time.Duration
	quiet       time.Duration
	quietMax    time.Duration
	roundWait   time.Duration
	burstWait   time.Duration
	countGroups listFlag

	jsonPath string
	logPath  string
	seed     int64
	quick    bool

	repoRoot string
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	var err error
	if spec, rest, ok := extractFlag(os.Args[1:], "fanout"); ok {
		_, err = runFanout(ctx, spec, rest, os.Stdout)
	} else if spec, rest, ok := extractFlag(os.Args[1:], "scales"); ok {
		_, err = runScales(ctx, spec, rest, os.Stdout)
	} else if spec, rest, ok := extractFlag(os.Args[1:], "peers"); ok {
		_, err = runPeers(ctx, spec, rest, os.Stdout)
	} else {
		_, err = run(ctx, os.Args[1:], os.Stdout)
	}
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string, out io.Writer) (*config, error) {
	c := &config{crdDirs: listFlag{"deploy/crds"}, setup: listFlag{builtinKickSetup},
		countGroups: listFlag{"kick.corewire.io"}, labels: mapFlag{}, annotations: mapFlag{}}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&c.kubeconfig, "kubeconfig", "", "use this existing cluster instead of starting a local control plane")
	fs.StringVar(&c.binDir, "bin-dir", "bin/k8s", "control-plane binaries (make control-plane)")
	fs.Var(&c.crdDirs, "crds", "comma-separated CRD directories installed into the local control plane")
	fs.Var(&c.serverFlags, "apiserver-flags", "comma-separated flags added to the local kube-apiserver's command line (e.g. --audit-policy-file=…,--audit-log-path=…, to see where a change's time goes on the server)")
	fs.BoolVar(&c.upstreamCRDs, "upstream-crds", false, "also install the upstream CRDs collected in -bin-dir/crds (Argo CD, Flux, Rollouts, Kargo, Secrets Store CSI)")
	fs.IntVar(&c.nodes, "nodes", 2, "kwok nodes")
	fs.StringVar(&c.namespace, "namespace", "bench", "namespace of the workloads and Secrets (created; must not exist)")
	fs.IntVar(&c.deployments, "deployments", 200, "Deployments, each consuming its own Secret")
	fs.BoolVar(&c.shared, "shared-secret", false, "every Deployment consumes one Secret, "+sharedName+", instead of its own (the -fanout fixture)")
	fs.IntVar(&c.unused, "unused-secrets", 10000, "Secrets no workload consumes")
	fs.IntVar(&c.unusedCMs, "unused-configmaps", 0, "ConfigMaps no workload consumes (-secret-size bytes each)")
	fs.IntVar(&c.secretSize, "secret-size", 4096, "bytes of data per Secret or ConfigMap")
	fs.Float64Var(&c.burstPart, "burst-fraction", 1, "fraction of the Deployments whose Secrets the burst changes at once (at least one)")
	fs.IntVar(&c.rounds, "rounds", 30, "single-change latency rounds (distinct Deployments)")
	fs.IntVar(&c.createWorker, "create-workers", 16, "concurrent creates while building the fixture")
	fs.IntVar(&c.burstWorker, "burst-workers", 32, "concurrent Secret updates in the burst")
	fs.IntVar(&c.bursts, "bursts", 3, "bursts in a run, one after the other; the report gives the median burst")
	fs.StringVar(&c.image, "image", "registry.k8s.io/pause:3.10", "container image of the workloads")
	fs.StringVar(&c.controller, "controller", defaultController, "controller command line, run by sh from the repository root")
	fs.Var(&c.setup, "setup", "comma-separated manifests applied (server-side) before the controller starts; "+builtinKickSetup+" is KICK's; empty for none")
	fs.Var(&c.labels, "workload-labels", "comma-separated k=v labels put on every Deployment")
	fs.Var(&c.annotations, "workload-annotations", "comma-separated k=v annotations put on every Deployment")
	fs.StringVar(&c.readyURL, "ready-url", "http://{probe-addr}/readyz", "URL that answers 200 once the controller is ready; empty: wait -settle")
	fs.StringVar(&c.metricsURL, "metrics-url", "http://{metrics-addr}/metrics", "Prometheus endpoint of the controller; empty: API calls n/a")
	fs.DurationVar(&c.settle, "settle", 15*time.Second, "fixed wait for readiness when there is no -ready-url")
	fs.DurationVar(&c.quiet, "quiet", 10*time.Second, "a phase ends after this long without writes")
	fs.DurationVar(&c.quietMax, "quiet-max", 3*time.Minute, "give up waiting for quiet after this long")
	fs.DurationVar(&c.roundWait, "round-timeout", 30*time.Second, "how long one single change may take to restart its Deployment")
	fs.DurationVar(&c.burstWait, "burst-timeout", 120*time.Second, "how long the burst may take before missing restarts are reported")
	fs.Var(&c.countGroups, "count-groups", "comma-separated API groups whose objects are counted and watched for writes")
	fs.StringVar(&c.jsonPath, "json", "", "also write the results as JSON to this file")
	fs.StringVar(&c.logPath, "controller-log", "", "controller log file (default: a new file under $TMPDIR)")
	fs.Int64Var(&c.seed, "seed", 0, "seed for choosing Deployments (0: time-based)")
	fs.BoolVar(&c.quick, "quick", false, "smoke-test size: 20 Deployments, 500 unused Secrets, 5 rounds, 1 burst (explicit flags win)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if c.quick {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if !set["deployments"] {
			c.deployments = 20
		}
		if !set["unused-secrets"] {
			c.unused = 500
		}
		if !set["unused-configmaps"] {
			c.unusedCMs = min(c.unusedCMs, 250)
		}
		if !set["rounds"] {
			c.rounds = 5
		}
		if !set["bursts"] {
			c.bursts = 1
		}
	}
	switch {
	case c.deployments < 1:
		return nil, errors.New("-deployments must be at least 1")
	case c.rounds > c.deployments:
		return nil, fmt.Errorf("-rounds (%d) needs as many Deployments, have %d", c.rounds, c.deployments)
	case c.burstPart <= 0 || c.burstPart > 1:
		return nil, errors.New("-burst-fraction must be in (0, 1]")
	case c.createWorker < 1 || c.burstWorker < 1:
		return nil, errors.New("worker counts must be at least 1")
	case c.bursts < 1:
		return nil, errors.New("-bursts must be at least 1")
	case strings.TrimSpace(c.controller) == "":
		return nil, errors.New("-controller must not be empty")
	}
	if c.seed == 0 {
		c.seed = time.Now().UnixNano()
	}
	root, err := cluster.RepoRoot()
	if err != nil {
		return nil, err
	}
	c.repoRoot = root
	c.binDir = c.abs(c.binDir)
	for i := range c.crdDirs {
		c.crdDirs[i] = c.abs(c.crdDirs[i])
	}
	return c, nil
}

// burstSize is how many consumed Secrets the burst changes.
func (c *config) burstSize() int {
	return min(max(int(math.Ceil(c.burstPart*float64(c.deployments)-1e-9)), 1), c.deployments)
}

// abs resolves a path relative to the repository root.
func (c *config) abs(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(c.repoRoot, p)
}

// run builds the fixture, runs every measurement and prints the report. It
// returns an error only when the harness itself failed.
func run(ctx context.Context, args []string, out io.Writer) (*Results, error) {
	c, err := parseFlags(args, out)
	if err != nil {
		return nil, err
	}
	logf := func(format string, a ...any) {
		fmt.Fprintf(os.Stderr, "%s  "+format+"\n", append([]any{time.Now().Format("15:04:05")}, a...)...)
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
	res, err := measure(ctx, c, fx, logf)
	if res == nil {
		return nil, err
	}
	if err != nil {
		// A partial run still prints what it measured.
		res.HarnessError = err.Error()
	}
	printReport(out, res)
	if c.jsonPath != "" {
		if werr := writeJSON(c.jsonPath, res); werr != nil && err == nil {
			err = werr
		}
	}
	return res, err
}

// listFlag is a comma-separated list; setting it replaces the default.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(v string) error {
	*l = nil
	for _, part := range strings.Split(v, ",") {
		if part = strings.TrimSpace(part); part != "" {
			*l = append(*l, part)
		}
	}
	return nil
}

// mapFlag is a comma-separated list of key=value pairs.
type mapFlag map[string]string

func (m mapFlag) String() string {
	parts := make([]string, 0, len(m))
	for k, v := range m {
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, ",")
}

func (m mapFlag) Set(v string) error {
	for _, part := range strings.Split(v, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		k, val, ok := strings.Cut(part, "=")
		if !ok || k == "" {
			return fmt.Errorf("%q is not key=value", part)
		}
		m[k] = val
	}
	return nil
}
