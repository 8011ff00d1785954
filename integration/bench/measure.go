package main

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/kick-operator/kick/cmd/kick-devcluster/controlplane"
)

// measure runs the phases in order. It returns what it measured so far
// together with an error when the harness (or the controller process)
// failed part-way.
func measure(ctx context.Context, c *config, fx *fixture, logf func(string, ...any)) (*Results, error) {
	res := &Results{
		Started:     time.Now(),
		Controller:  c.controller,
		Setup:       c.setup.String(),
		Cluster:     fmt.Sprintf("local control plane, %d kwok nodes", c.nodes),
		Deployments: c.deployments, UnusedSecrets: c.unused, UnusedConfigMaps: c.unusedCMs, SecretBytes: c.secretSize, Rounds: c.rounds, Seed: c.seed,
	}
	if c.kubeconfig != "" {
		res.Cluster = "existing cluster " + c.kubeconfig
	}
	stopInformers := make(chan struct{})
	defer close(stopInformers)
	tr, err := startTracker(ctx, fx, stopInformers)
	if err != nil {
		return nil, err
	}
	wc, err := startWriteCounter(ctx, fx, stopInformers)
	if err != nil {
		return nil, err
	}

	m := &phaseRunner{c: c, fx: fx, tr: tr, wc: wc, logf: logf, res: res}
	// Let the fixture's writes (and the control plane's own clean-up) die
	// down, so the install phase counts only what the controller causes.
	logf("waiting for %s without writes before starting the controller", c.quiet)
	if _, err := m.waitQuiet(ctx, c.quiet); err != nil {
		return nil, err
	}

	// 1. Install.
	gens0 := tr.generations()
	w0 := wc.snapshot()
	logf("starting the controller: %s", c.controller)
	ctrl, err := startController(c, fx.kubeconfig)
	if err != nil {
		return nil, err
	}
	defer ctrl.stop()
	m.ctrl = ctrl
	res.ControllerLog = ctrl.logPath
	started := time.Now()
	res.LoadAvg[0] = loadAvg()
	err = m.install(ctx, started, gens0, w0)
	installed := time.Now()
	if err == nil {
		err = m.single(ctx)
	}
	singled := time.Now()
	if err == nil {
		err = m.burst(ctx)
	}
	end := time.Now()
	res.LoadAvg[1] = loadAvg()
	for _, s := range ctrl.allSamples() {
		res.Memory.PeakMB = max(res.Memory.PeakMB, mb(s.mem.rss))
	}
	peakOf := func(from, to time.Time) PhasePeak {
		var peak memStat
		for _, s := range ctrl.memBetween(from, to) {
			if s.rss > peak.rss {
				peak = s
			}
		}
		return PhasePeak{MB: mb(peak.rss), AnonMB: mb(peak.anon), FileMB: mb(peak.file)}
	}
	res.Memory.PeakByPhase = PhasePeaks{
		Install: peakOf(started, installed),
		Single:  peakOf(installed, singled),
		Burst:   peakOf(singled, end),
	}
	res.Memory.Samples = len(ctrl.allSamples())
	res.Duration = ms(end.Sub(res.Started))
	ctrl.stop()
	res.Log = scanLog(ctrl.logPath)
	res.Targets = evaluate(res)
	return res, err
}

type phaseRunner struct {
	c    *config
	fx   *fixture
	tr   *tracker
	wc   *writeCounter
	ctrl *controllerProc
	logf func(string, ...any)
	res  *Results
}

func (m *phaseRunner) install(ctx context.Context, started time.Time, gens0 map[string]int64, w0 map[string]kindCount) error {
	r := &m.res.Install
	how, err := m.ctrl.waitReady(ctx, m.c.settle)
	if err != nil {
		return err
	}
	r.ReadyBy, r.ReadyAfterMS = how, ms(time.Since(started))
	m.logf("controller ready after %s (%s); waiting for %s without writes", time.Since(started).Round(time.Millisecond), how, m.c.quiet)
	quiet, err := m.waitQuiet(ctx, m.c.quiet)
	if err != nil {
		return err
	}
	// A controller that writes nothing on install (or has no readiness
	// endpoint) may still be listing and caching the cluster: its steady
	// memory is read once it idles.
	idle, err := m.waitIdle(ctx)
	if err != nil {
		return err
	}
	end := time.Now()
	r.Quiet, r.Idle, r.SettledAfterMS = quiet, idle, ms(end.Sub(started))
	r.CPUSeconds = m.ctrl.cpuSeconds()
	if steady := m.ctrl.memBetween(end.Add(-idleFor), end); len(steady) > 0 {
		pick := func(f func(memStat) int64) float64 {
			v := make([]int64, len(steady))
			for i, s := range steady {
				v[i] = f(s)
			}
			return mb(median(v))
		}
		m.res.Memory.SteadyMB = pick(func(s memStat) int64 { return s.rss })
		m.res.Memory.SteadyAnonMB = pick(func(s memStat) int64 { return s.anon })
		m.res.Memory.SteadyFileMB = pick(func(s memStat) int64 { return s.file })
	}
	if prom := m.scrape(); prom.has("go_memstats_heap_inuse_bytes") {
		m.res.Memory.GoHeap = &GoHeap{
			InuseMB:    prom.sum("go_memstats_heap_inuse_bytes") / 1e6,
			IdleMB:     prom.sum("go_memstats_heap_idle_bytes") / 1e6,
			ReleasedMB: prom.sum("go_memstats_heap_released_bytes") / 1e6,
		}
	}
	for name, gen := range m.tr.generations() {
		if gen != gens0[name] {
			r.Restarted = append(r.Restarted, name)
		}
	}
	sort.Strings(r.Restarted)
	r.Restarts = len(r.Restarted)
	r.Kinds = diff(w0, m.wc.snapshot())
	for _, k := range r.Kinds {
		r.Writes += k.Created + k.Updated + k.Deleted
		switch k.Resource {
		case "kickrequests.kick.corewire.io":
			r.KickRequests = ptr.To(k.Created)
		case "sourceobservations.kick.corewire.io":
			r.SourceObservations = ptr.To(int64(k.ObjectsAfter))
		}
	}
	m.logf("install: %d restarts, %d writes, settled after %s", r.Restarts, r.Writes, time.Duration(r.SettledAfterMS*1e6).Round(time.Millisecond))
	return nil
}

// A controller idles when it used at most idleCPU seconds of CPU per second
// over idleFor.
const (
	idleFor = 3 * time.Second
	idleCPU = 0.05
)

// waitIdle waits until the controller idles, giving up (not idle) after
// -quiet-max.
func (m *phaseRunner) waitIdle(ctx context.Context) (bool, error) {
	deadline := time.Now().Add(m.c.quietMax)
	for {
		before := m.ctrl.cpuSeconds()
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(idleFor):
		}
		if err := m.ctrl.exited(); err != nil {
			return false, err
		}
		if m.ctrl.cpuSeconds()-before <= idleCPU*idleFor.Seconds() {
			return true, nil
		}
		if time.Now().After(deadline) {
			m.logf("the controller still uses CPU after %s; carrying on", m.c.quietMax)
			return false, nil
		}
	}
}

// waitQuiet waits until nothing watched was written for d, giving up (not
// quiet) after -quiet-max.
func (m *phaseRunner) waitQuiet(ctx context.Context, d time.Duration) (bool, error) {
	deadline := time.Now().Add(m.c.quietMax)
	for {
		if m.ctrl != nil {
			if err := m.ctrl.exited(); err != nil {
				return false, err
			}
		}
		if time.Since(m.wc.lastWrite()) >= d {
			return true, nil
		}
		if time.Now().After(deadline) {
			m.logf("still writing after %s; carrying on", m.c.quietMax)
			return false, nil
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// settle waits until every Deployment is Available and writes have stopped.
func (m *phaseRunner) settle(ctx context.Context, quiet time.Duration) error {
	if !m.tr.waitAll(ctx, 3*time.Minute, func(s *depState) bool { return s.available }) {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		m.logf("not every Deployment became Available within 3m; carrying on")
	}
	_, err := m.waitQuiet(ctx, quiet)
	return err
}

// single changes one Secret at a time, each of a different Deployment, and
// times the update's return to the generation bump seen on the watch.
func (m *phaseRunner) single(ctx context.Context) error {
	r := &m.res.Single
	if err := m.settle(ctx, m.c.quiet); err != nil {
		return err
	}
	prom0, server0 := m.scrape(), m.scrapeServer(ctx)
	cpu0 := m.ctrl.cpuSeconds()
	rng := rand.New(rand.NewPCG(uint64(m.c.seed), 0))
	order := rng.Perm(m.c.deployments)
	timeline := timeline{}
	secrets := m.fx.cs.CoreV1().Secrets(m.c.namespace)
	for round := 0; round < m.c.rounds; round++ {
		name := consumedName(order[round])
		s, err := secrets.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		s.Data = m.fx.payload()
		gen := m.tr.generation(name)
		m.wc.startTrace()
		if _, err := secrets.Update(ctx, s, metav1.UpdateOptions{}); err != nil {
			return err
		}
		t0 := time.Now()
		at, ok := m.tr.waitGenAbove(ctx, name, gen, m.c.roundWait)
		if err := ctx.Err(); err != nil {
			return err
		}
		// The metadata watches may see the restart a moment after the
		// typed Deployment watch does.
		time.Sleep(50 * time.Millisecond)
		trace := m.wc.stopTrace()
		if !ok {
			r.Missed = append(r.Missed, name)
			m.logf("round %d/%d: %s not restarted within %s", round+1, m.c.rounds, name, m.c.roundWait)
			continue
		}
		lat := max(at.Sub(t0), 0)
		r.SamplesMS = append(r.SamplesMS, ms(lat))
		timeline.add(trace, t0, at)
		m.logf("round %d/%d: %s restarted %s after its Secret changed", round+1, m.c.rounds, name, lat.Round(10*time.Microsecond))
		// Let the rollout finish and the controller's bookkeeping settle.
		m.tr.waitOne(ctx, name, time.Minute, func(s *depState) bool { return s.available })
		if _, err := m.waitQuiet(ctx, time.Second); err != nil {
			return err
		}
	}
	r.Restarts = len(r.SamplesMS)
	r.stats()
	r.Timeline = timeline.stages()
	server1 := m.scrapeServer(ctx)
	r.Server, r.Watches = serverCalls(server0, server1), serverWatches(server0, server1)
	if err := m.settle(ctx, 2*time.Second); err != nil {
		return err
	}
	r.CPUSeconds = m.ctrl.cpuSeconds() - cpu0
	if r.Internals = internals(prom0, m.scrape()); r.Internals != nil && r.Restarts > 0 {
		r.APICallsPerRestart = ptr.To(r.Internals.APICalls / float64(r.Restarts))
	}
	return nil
}

// burst changes every consumed Secret at once and waits for every
// Deployment to restart, -bursts times. One burst's time to its last
// restart varies a lot on a small machine (a third between identical
// builds), so the phase reports the median burst and keeps each one.
func (m *phaseRunner) burst(ctx context.Context) error {
	r := &m.res.Burst
	n := m.c.burstSize()
	// A part of the Deployments (-burst-fraction), chosen by the seed;
	// every burst changes the same ones.
	names := make([]string, n)
	for i, d := range rand.New(rand.NewPCG(uint64(m.c.seed), 1)).Perm(m.c.deployments)[:n] {
		names[i] = consumedName(d)
	}
	if err := m.settle(ctx, m.c.quiet); err != nil {
		return err
	}
	prom0 := m.scrape()
	w0 := m.wc.snapshot()
	var runs []BurstRun
	for i := 0; i < m.c.bursts; i++ {
		if i > 0 {
			if err := m.settle(ctx, m.c.quiet); err != nil {
				return err
			}
		}
		run, perDeployment, err := m.burstOnce(ctx, names)
		if err != nil {
			return err
		}
		m.logf("burst %d/%d: %d/%d restarted, last after %s", i+1, m.c.bursts, run.Restarted, n, time.Duration(run.TotalMS*1e6).Round(time.Millisecond))
		runs = append(runs, run)
		r.Changed += n
		r.Restarted += run.Restarted
		r.ExtraRestarts += run.ExtraRestarts
		r.Missing = append(r.Missing, run.Missing...)
		r.PerDeploymentMS = append(r.PerDeploymentMS, perDeployment...)
	}
	r.Runs = runs
	medianOf := func(v func(BurstRun) float64) float64 {
		vs := make([]float64, len(runs))
		for i, run := range runs {
			vs[i] = v(run)
		}
		return medianOfRounds(vs)
	}
	r.UpdatesMS = medianOf(func(b BurstRun) float64 { return b.UpdatesMS })
	r.TotalMS = medianOf(func(b BurstRun) float64 { return b.TotalMS })
	r.SettledMS = medianOf(func(b BurstRun) float64 { return b.SettledMS })
	r.CPUSeconds = medianOf(func(b BurstRun) float64 { return b.CPUSeconds })
	sort.Float64s(r.PerDeploymentMS)
	r.PerDeploymentP50MS, r.PerDeploymentP99MS = percentile(r.PerDeploymentMS, 50), percentile(r.PerDeploymentMS, 99)
	r.Kinds = diff(w0, m.wc.snapshot())
	for _, k := range r.Kinds {
		r.Writes += k.Created + k.Updated + k.Deleted
	}
	r.Internals = internals(prom0, m.scrape())
	if in := r.Internals; in != nil {
		m.res.API.BurstCalls = in.APICalls
		m.res.API.ByMethod = in.APICallsByVerb
		if r.Restarted > 0 {
			m.res.API.PerRestart = ptr.To(in.APICalls / float64(r.Restarted))
		}
	}
	return nil
}

// burstOnce updates the named Secrets at once, waits for their
// Deployments to restart and for the cluster to settle. It returns the
// burst and each restarted Deployment's time from its own update.
func (m *phaseRunner) burstOnce(ctx context.Context, names []string) (BurstRun, []float64, error) {
	var r BurstRun
	n := len(names)
	changed := make(map[string]bool, n)
	for _, name := range names {
		changed[name] = true
	}
	secretsAPI := m.fx.cs.CoreV1().Secrets(m.c.namespace)
	secrets := make([]*corev1.Secret, n)
	err := parallel(ctx, n, m.c.burstWorker, "reading Secrets for the burst", m.logf, func(i int) error {
		s, err := secretsAPI.Get(ctx, names[i], metav1.GetOptions{})
		if err == nil {
			s.Data = m.fx.payload()
			secrets[i] = s
		}
		return err
	})
	if err != nil {
		return r, nil, err
	}
	cpu0 := m.ctrl.cpuSeconds()
	gens := m.tr.generations()
	returned := make([]time.Time, n)
	var first sync.Once
	var t0 time.Time
	m.logf("burst: updating %d Secrets with %d workers", n, m.c.burstWorker)
	err = parallel(ctx, n, m.c.burstWorker, "burst updates", m.logf, func(i int) error {
		if _, err := secretsAPI.Update(ctx, secrets[i], metav1.UpdateOptions{}); err != nil {
			return err
		}
		now := time.Now()
		first.Do(func() { t0 = now })
		returned[i] = now
		return nil
	})
	if err != nil {
		return r, nil, err
	}
	var lastUpdate time.Time
	for _, t := range returned {
		if t.After(lastUpdate) {
			lastUpdate = t
		}
	}
	r.UpdatesMS = ms(lastUpdate.Sub(t0))
	m.tr.waitAll(ctx, m.c.burstWait, func(s *depState) bool { return !changed[s.name] || s.firstAbove(gens[s.name]) != nil })
	if err := ctx.Err(); err != nil {
		return r, nil, err
	}
	var last time.Time
	var perDeployment []float64
	for i, name := range names {
		changes := m.tr.changesAbove(name, gens[name])
		if len(changes) == 0 {
			r.Missing = append(r.Missing, name)
			continue
		}
		r.Restarted++
		r.ExtraRestarts += len(changes) - 1
		at := changes[0].at
		if at.After(last) {
			last = at
		}
		perDeployment = append(perDeployment, ms(max(at.Sub(returned[i]), 0)))
	}
	if r.Restarted > 0 {
		r.TotalMS = ms(max(last.Sub(t0), 0))
	}
	if err := m.settle(ctx, m.c.quiet); err != nil {
		return r, nil, err
	}
	r.SettledMS = ms(time.Since(t0))
	r.CPUSeconds = m.ctrl.cpuSeconds() - cpu0
	for _, st := range m.ctrl.memBetween(t0, time.Now()) {
		r.PeakMB = max(r.PeakMB, mb(st.rss))
	}
	return r, perDeployment, nil
}

// scrape reads the controller's metrics; nil (logged) when it cannot.
func (m *phaseRunner) scrape() promSnapshot {
	s, err := m.ctrl.scrape()
	if err != nil {
		m.logf("metrics: %v", err)
	}
	return s
}

// scrapeServer reads kube-apiserver's metrics; nil (logged) when it cannot.
func (m *phaseRunner) scrapeServer(ctx context.Context) promSnapshot {
	raw, err := m.fx.cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err == nil {
		var s promSnapshot
		if s, err = parseProm(bytes.NewReader(raw)); err == nil {
			return s
		}
	}
	m.logf("kube-apiserver metrics: %v", err)
	return nil
}

// timeline collects, over the rounds, when each resource was first written
// after the Secret update returned and how often it was written up to the
// restart: an outside view of where a controller spends the latency.
type timeline map[string]*stageSamples

type stageSamples struct {
	first  []float64
	writes []float64
}

func (tl timeline) add(trace []traced, t0, restart time.Time) {
	round := map[string]*struct {
		first  time.Time
		writes int
	}{}
	for _, ev := range trace {
		if ev.at.After(restart.Add(50 * time.Millisecond)) {
			continue
		}
		st := round[ev.resource]
		if st == nil {
			st = &struct {
				first  time.Time
				writes int
			}{first: ev.at}
			round[ev.resource] = st
		}
		st.writes++
	}
	for res, st := range round {
		if tl[res] == nil {
			tl[res] = &stageSamples{}
		}
		tl[res].first = append(tl[res].first, ms(st.first.Sub(t0)))
		tl[res].writes = append(tl[res].writes, float64(st.writes))
	}
}

// stages summarises the timeline by resource, in order of first write.
func (tl timeline) stages() []Stage {
	var out []Stage
	for res, s := range tl {
		sort.Float64s(s.first)
		sort.Float64s(s.writes)
		out = append(out, Stage{Resource: res, Rounds: len(s.first), FirstWriteMS: percentile(s.first, 50), Writes: percentile(s.writes, 50)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].FirstWriteMS < out[j].FirstWriteMS })
	return out
}

// depState is what the tracker knows about one Deployment.
type depState struct {
	name      string
	gen       int64
	available bool
	changes   []genChange // every generation increase seen on the watch
}

type genChange struct {
	gen int64
	at  time.Time
}

func (s *depState) firstAbove(gen int64) *genChange {
	for i := range s.changes {
		if s.changes[i].gen > gen {
			return &s.changes[i]
		}
	}
	return nil
}

// tracker follows the benchmark Deployments through an informer and stamps
// every generation increase with the time its watch event arrived.
type tracker struct {
	mu     sync.Mutex
	deps   map[string]*depState
	notify chan struct{}
}

func startTracker(ctx context.Context, fx *fixture, stop <-chan struct{}) (*tracker, error) {
	t := &tracker{deps: map[string]*depState{}, notify: make(chan struct{})}
	f := informers.NewSharedInformerFactoryWithOptions(fx.cs, 0, informers.WithNamespace(fx.c.namespace))
	inf := f.Apps().V1().Deployments().Informer()
	reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { t.observe(obj) },
		UpdateFunc: func(_, obj any) { t.observe(obj) },
	})
	if err != nil {
		return nil, err
	}
	f.Start(stop)
	if !cache.WaitForCacheSync(ctx.Done(), reg.HasSynced) {
		return nil, fmt.Errorf("the Deployment informer did not sync: %w", ctx.Err())
	}
	return t, nil
}

func (t *tracker) observe(obj any) {
	now := time.Now()
	d, ok := obj.(*appsv1.Deployment)
	if !ok {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.deps[d.Name]
	if s == nil {
		s = &depState{name: d.Name, gen: d.Generation}
		t.deps[d.Name] = s
	}
	if d.Generation > s.gen {
		s.changes = append(s.changes, genChange{gen: d.Generation, at: now})
		s.gen = d.Generation
	}
	s.available = controlplane.DeploymentAvailable(d)
	close(t.notify)
	t.notify = make(chan struct{})
}

func (t *tracker) generations() map[string]int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]int64, len(t.deps))
	for name, s := range t.deps {
		out[name] = s.gen
	}
	return out
}

func (t *tracker) generation(name string) int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := t.deps[name]; s != nil {
		return s.gen
	}
	return 0
}

func (t *tracker) changesAbove(name string, gen int64) []genChange {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []genChange
	if s := t.deps[name]; s != nil {
		for _, c := range s.changes {
			if c.gen > gen {
				out = append(out, c)
			}
		}
	}
	return out
}

// waitAll waits until cond holds for every tracked Deployment.
func (t *tracker) waitAll(ctx context.Context, timeout time.Duration, cond func(*depState) bool) bool {
	return t.wait(ctx, timeout, func() bool {
		for _, s := range t.deps {
			if !cond(s) {
				return false
			}
		}
		return true
	})
}

func (t *tracker) waitOne(ctx context.Context, name string, timeout time.Duration, cond func(*depState) bool) bool {
	return t.wait(ctx, timeout, func() bool { s := t.deps[name]; return s != nil && cond(s) })
}

// waitGenAbove returns when the Deployment's generation first rose above gen.
func (t *tracker) waitGenAbove(ctx context.Context, name string, gen int64, timeout time.Duration) (time.Time, bool) {
	var at time.Time
	ok := t.wait(ctx, timeout, func() bool {
		if s := t.deps[name]; s != nil {
			if c := s.firstAbove(gen); c != nil {
				at = c.at
				return true
			}
		}
		return false
	})
	return at, ok
}

// wait evaluates cond (under the lock) after every watch event.
func (t *tracker) wait(ctx context.Context, timeout time.Duration, cond func() bool) bool {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		t.mu.Lock()
		ok, ch := cond(), t.notify
		t.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-timer.C:
			return false
		case <-ch:
		}
	}
}

// writeCounter watches Secrets, ConfigMaps, Events, Deployments and every
// resource of -count-groups in all namespaces (metadata only) and counts
// the objects and their create/update/delete events.
type writeCounter struct {
	kinds []*kindCounter
	last  atomic.Int64 // unix nanoseconds of the last event

	mu      sync.Mutex
	tracing bool
	trace   []traced
}

// traced is one write event seen while tracing.
type traced struct {
	at       time.Time
	resource string
}

type kindCounter struct {
	name                      string
	store                     cache.Store
	created, updated, deleted atomic.Int64
}

type kindCount struct {
	objects                   int
	created, updated, deleted int64
}

func startWriteCounter(ctx context.Context, fx *fixture, stop <-chan struct{}) (*writeCounter, error) {
	gvrs := []schema.GroupVersionResource{
		{Version: "v1", Resource: "secrets"},
		{Version: "v1", Resource: "configmaps"},
		{Version: "v1", Resource: "events"},
		{Group: "apps", Version: "v1", Resource: "deployments"},
	}
	// -setup may have installed CRDs; partial discovery results are fine.
	fx.disco.Invalidate()
	lists, _ := fx.disco.ServerPreferredResources()
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil || !contains(fx.c.countGroups, gv.Group) {
			continue
		}
		for _, r := range list.APIResources {
			if !strings.Contains(r.Name, "/") && contains(r.Verbs, "watch") && contains(r.Verbs, "list") {
				gvrs = append(gvrs, gv.WithResource(r.Name))
			}
		}
	}
	w := &writeCounter{}
	w.last.Store(time.Now().UnixNano())
	f := metadatainformer.NewSharedInformerFactory(fx.meta, 0)
	var regs []cache.InformerSynced
	var counting atomic.Bool
	for _, gvr := range gvrs {
		k := &kindCounter{name: gvr.GroupResource().String()}
		inf := f.ForResource(gvr).Informer()
		k.store = inf.GetStore()
		bump := func(n *atomic.Int64) {
			if !counting.Load() {
				return
			}
			now := time.Now()
			n.Add(1)
			w.last.Store(now.UnixNano())
			w.mu.Lock()
			if w.tracing {
				w.trace = append(w.trace, traced{now, k.name})
			}
			w.mu.Unlock()
		}
		reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { bump(&k.created) },
			UpdateFunc: func(any, any) { bump(&k.updated) },
			DeleteFunc: func(any) { bump(&k.deleted) },
		})
		if err != nil {
			return nil, err
		}
		regs = append(regs, reg.HasSynced)
		w.kinds = append(w.kinds, k)
	}
	f.Start(stop)
	if !cache.WaitForCacheSync(ctx.Done(), regs...) {
		return nil, fmt.Errorf("the write-counting informers did not sync: %w", ctx.Err())
	}
	counting.Store(true)
	return w, nil
}

func (w *writeCounter) lastWrite() time.Time { return time.Unix(0, w.last.Load()) }

// startTrace records every write event from now on, until stopTrace.
func (w *writeCounter) startTrace() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.tracing, w.trace = true, nil
}

func (w *writeCounter) stopTrace() []traced {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.tracing = false
	return w.trace
}

func (w *writeCounter) snapshot() map[string]kindCount {
	out := map[string]kindCount{}
	for _, k := range w.kinds {
		out[k.name] = kindCount{objects: len(k.store.ListKeys()), created: k.created.Load(), updated: k.updated.Load(), deleted: k.deleted.Load()}
	}
	return out
}

// diff lists, per resource, the objects before and after and the events in
// between, skipping resources nothing happened to (except kick.corewire.io
// ones, which are always shown).
func diff(before, after map[string]kindCount) []KindWrites {
	var out []KindWrites
	for name, a := range after {
		b := before[name]
		k := KindWrites{Resource: name, ObjectsBefore: b.objects, ObjectsAfter: a.objects,
			Created: a.created - b.created, Updated: a.updated - b.updated, Deleted: a.deleted - b.deleted}
		if k.Created+k.Updated+k.Deleted > 0 || strings.HasSuffix(name, ".kick.corewire.io") {
			out = append(out, k)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Resource < out[j].Resource })
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func mb(bytes int64) float64 { return float64(bytes) / 1e6 }

func median(v []int64) int64 {
	s := append([]int64(nil), v...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// percentile is the nearest-rank percentile of sorted values.
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(float64(len(sorted))*p/100)) - 1
	return sorted[min(max(rank, 0), len(sorted)-1)]
}
