package chart_test

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/restart/observe"
	"github.com/kick-operator/kick/restart/request"
	"github.com/kick-operator/kick/router"
	"github.com/kick-operator/kick/sinks"
)

// recorder is a prometheus.Registerer that remembers the name and type of
// every metric registered through it. Describe, unlike Gather, also reports
// vectors that have no series yet.
type recorder struct {
	reg   *prometheus.Registry
	types map[string]string // metric name → "histogram", "summary" or "other"
}

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

func (r *recorder) Register(c prometheus.Collector) error {
	if err := r.reg.Register(c); err != nil {
		return err
	}
	typ := "other"
	switch c.(type) {
	case *prometheus.HistogramVec:
		typ = "histogram"
	case *prometheus.SummaryVec:
		typ = "summary"
	default:
		// A plain Histogram and Summary share their method set: tell them
		// apart by what they collect.
		ms := make(chan prometheus.Metric)
		go func() { c.Collect(ms); close(ms) }()
		for m := range ms {
			var pb dto.Metric
			switch {
			case m.Write(&pb) != nil:
			case pb.Histogram != nil:
				typ = "histogram"
			case pb.Summary != nil:
				typ = "summary"
			}
		}
	}
	ch := make(chan *prometheus.Desc)
	go func() { c.Describe(ch); close(ch) }()
	for d := range ch {
		if m := fqName.FindStringSubmatch(d.String()); m != nil {
			r.types[m[1]] = typ
		}
	}
	return nil
}

func (r *recorder) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

func (r *recorder) Unregister(c prometheus.Collector) bool { return r.reg.Unregister(c) }

// registeredMetrics wires the metric-registering parts of the manager the
// way cmd/kick-manager does (router, source observer, notification
// dispatcher, restart driver) onto an unstarted manager, and returns the
// metrics they registered.
func registeredMetrics(t *testing.T) map[string]string {
	t.Helper()
	env := cluster.Get(t)
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:                 env.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{reg: prometheus.NewRegistry(), types: map[string]string{}}
	rt := router.New(router.Options{Registerer: rec})
	t.Cleanup(rt.Close)
	observer := &observe.SourceReconciler{
		Client: mgr.GetClient(), Router: rt, Keys: observe.NewFingerprinter([]byte("dashboard-test-key")), IsManaged: observe.ManageAll,
	}
	if err := observer.SetupWithManager(mgr, observe.Options{Registerer: rec}); err != nil {
		t.Fatal(err)
	}
	if err := (&sinks.Reconciler{}).SetupWithManager(mgr, sinks.Options{Router: rt, Registerer: rec}); err != nil {
		t.Fatal(err)
	}
	request.NewMetrics(rec)
	return rec.types
}

// sourceMetricNames finds "kick_..." string literals in the non-test Go
// sources: a cross-check that the wiring above misses no package.
func sourceMetricNames(t *testing.T) map[string]bool {
	t.Helper()
	lit := regexp.MustCompile(`"(kick_[a-z0-9_]+)"`)
	names := map[string]bool{}
	root := repoPath(t)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "bin", "integration", "hack", "docs", "deploy", "node_modules":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range lit.FindAllStringSubmatch(string(data), -1) {
			names[m[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// dashboardMetricNames returns every kick_* name anywhere in the dashboard's
// strings (queries, variable definitions, descriptions).
func dashboardMetricNames(t *testing.T, dash any) map[string]bool {
	t.Helper()
	re := regexp.MustCompile(`\bkick_[a-z0-9_]+`)
	names := map[string]bool{}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		case string:
			for _, m := range re.FindAllString(v, -1) {
				names[m] = true
			}
		}
	}
	walk(dash)
	return names
}

// TestDashboardQueriesRegisteredMetrics: every kick_* metric the Grafana
// dashboard names is one the code registers (a histogram's _bucket, _sum
// and _count series included), and the dashboard covers the main ones.
func TestDashboardQueriesRegisteredMetrics(t *testing.T) {
	data, err := os.ReadFile(repoPath(t, "deploy", "grafana", "kick-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash map[string]any
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("the dashboard is not valid JSON: %v", err)
	}
	if dash["uid"] == "" || dash["title"] == "" {
		t.Errorf("the dashboard needs a uid and a title")
	}
	panels, _ := dash["panels"].([]any)
	queries := 0
	for _, p := range panels {
		panel := p.(map[string]any)
		if panel["type"] == "row" {
			continue
		}
		targets, _ := panel["targets"].([]any)
		if len(targets) == 0 {
			t.Errorf("panel %q has no queries", panel["title"])
		}
		for _, tg := range targets {
			if expr, _ := tg.(map[string]any)["expr"].(string); strings.TrimSpace(expr) == "" {
				t.Errorf("panel %q has a target without expr", panel["title"])
			}
			queries++
		}
	}
	if queries == 0 {
		t.Fatal("the dashboard has no queries")
	}

	registered := registeredMetrics(t)
	if len(registered) == 0 {
		t.Fatal("no metrics were registered")
	}
	for name := range sourceMetricNames(t) {
		if _, ok := registered[name]; !ok {
			// Not an error by itself; it becomes one when the dashboard
			// uses the name.
			t.Logf("the sources mention %s, which the wiring in registeredMetrics does not register: wire its package there before the dashboard uses it", name)
		}
	}
	used := dashboardMetricNames(t, dash)
	for _, name := range sortedKeys(used) {
		if _, ok := registered[name]; ok {
			continue
		}
		ok := false
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			base, found := strings.CutSuffix(name, suffix)
			if typ := registered[base]; found && (typ == "histogram" || (typ == "summary" && suffix != "_bucket")) {
				ok = true
			}
		}
		if !ok {
			t.Errorf("the dashboard queries %s, which KICK does not register (registered: %v)", name, sortedKeys(registered))
		}
	}
	for _, name := range []string{
		"kick_restarts_total", "kick_requests_total", "kick_change_to_restart_seconds_bucket", "kick_gate_wait_seconds_bucket",
		"kick_controller_errors_total", "kick_router_queue_depth", "kick_router_dropped_total",
		"kick_notification_deliveries_total", "kick_notification_dropped_total",
	} {
		if !used[name] {
			t.Errorf("the dashboard does not show %s", name)
		}
	}
	var unused []string
	for name := range registered {
		if !used[name] && !used[name+"_bucket"] {
			unused = append(unused, name)
		}
	}
	slices.Sort(unused)
	if len(unused) > 0 {
		t.Logf("registered but not on the dashboard: %v", unused)
	}
}
