// Package sinks tests the NotificationPolicy controller and dispatcher (package sinks) on the
// local control plane: real NotificationPolicies and Secrets in the API server, phase changes
// published on a router the test owns, and real HTTP receivers on 127.0.0.1.
package sinks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/restart/observe"
	"github.com/kick-operator/kick/router"
	"github.com/kick-operator/kick/sinks"
)

func TestMain(m *testing.M) {
	cluster.Main(m, cluster.TestOptions{
		KickCRDs:    true,
		AddToScheme: []func(*runtime.Scheme) error{kickv1alpha1.AddToScheme},
	})
}

const (
	wait = 30 * time.Second
	// sentinel is in every Secret value and URL token the tests use; it must never show up in
	// a status, an Event or a log line.
	sentinel = "SENTINEL-c0ffee-do-not-leak"
)

// harness is one in-process manager running the NotificationPolicy controller for one
// namespace, fed by a router the test publishes on.
type harness struct {
	t    *testing.T
	env  *cluster.Env
	ns   string
	rt   *router.Router
	reg  *prometheus.Registry
	logs *syncBuffer
	seq  int
}

// start runs the controller until the test ends. The cache holds Secrets as metadata only, as
// the manager's does, so the controller has to read Secrets from the API server. When the test
// ends it checks that the sentinel appears in no status, Event or log line.
func start(t *testing.T, mutate func(*sinks.Options)) *harness {
	t.Helper()
	t.Parallel()
	env := cluster.Get(t)
	h := &harness{t: t, env: env, ns: env.Namespace(t), reg: prometheus.NewRegistry(), logs: &syncBuffer{}}
	t.Cleanup(h.checkNoLeak) // runs last: after the manager stopped

	logger := funcr.New(func(prefix, args string) {
		h.logs.WriteString(prefix + " " + args + "\n")
	}, funcr.Options{Verbosity: 10})
	mgr := env.InProcessManager(t, h.ns, func(o *ctrl.Options) {
		o.Logger = logger
		// Cache Secrets metadata-only, as the real manager does, so the
		// controller has to read Secrets from the API server.
		o.Cache.ByObject = observe.NewCacheOptions()
	})
	h.rt = router.New(router.Options{Registerer: prometheus.NewRegistry()})
	// The receivers listen on 127.0.0.1, which webhooks may not reach by default: open it, as
	// an operator would with --webhook-allow-cidrs=127.0.0.0/8.
	opts := sinks.Options{Router: h.rt, Registerer: h.reg, StatusInterval: 300 * time.Millisecond, MaxConcurrentReconciles: 2,
		AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	if mutate != nil {
		mutate(&opts)
	}
	if err := (&sinks.Reconciler{}).SetupWithManager(mgr, opts); err != nil {
		t.Fatal(err)
	}
	cluster.RunManager(t, mgr)
	t.Cleanup(func() {
		h.rt.Close()
		if t.Failed() {
			t.Logf("manager log:\n%s", h.logs.String())
		}
	})
	return h
}

// dumpColumn is the text column of one line of a hex dump in a log value.
var dumpColumn = regexp.MustCompile(`\|([^|]{1,16})\|\\n`)

// checkNoLeak fails the test when the sentinel is in a policy's status, an Event or the log.
func (h *harness) checkNoLeak() {
	ctx := context.Background()
	var policies kickv1alpha1.NotificationPolicyList
	if err := h.env.Client.List(ctx, &policies, client.InNamespace(h.ns)); err != nil {
		h.t.Errorf("list policies: %v", err)
	}
	for _, p := range policies.Items {
		b, _ := json.Marshal(p.Status)
		if strings.Contains(string(b), sentinel) {
			h.t.Errorf("the status of %s leaks a secret: %s", p.Name, b)
		}
	}
	var evs eventsv1.EventList
	if err := h.env.Client.List(ctx, &evs, client.InNamespace(h.ns)); err != nil {
		h.t.Errorf("list events: %v", err)
	}
	var coreEvs corev1.EventList
	if err := h.env.Client.List(ctx, &coreEvs, client.InNamespace(h.ns)); err != nil {
		h.t.Errorf("list events: %v", err)
	}
	for _, e := range evs.Items {
		if strings.Contains(e.Note, sentinel) {
			h.t.Errorf("an Event leaks a secret: %s", e.Note)
		}
	}
	for _, e := range coreEvs.Items {
		if strings.Contains(e.Message, sentinel) {
			h.t.Errorf("an Event leaks a secret: %s", e.Message)
		}
	}
	logs := h.logs.String()
	// client-go dumps bodies at high verbosity as hex with a 16-character text column: join
	// those columns too, so a value split across dump lines is found.
	var dumped strings.Builder
	for _, m := range dumpColumn.FindAllStringSubmatch(logs, -1) {
		dumped.WriteString(m[1])
	}
	if strings.Contains(logs, sentinel) || strings.Contains(dumped.String(), sentinel) {
		h.t.Errorf("the manager log leaks a secret:\n%s", logs)
	}
}

// secret creates a Secret in the test namespace that opted in to notifications.
func (h *harness) secret(name string, typ corev1.SecretType, data map[string]string) *corev1.Secret {
	h.t.Helper()
	return h.secretLabelled(name, typ, data, map[string]string{kickv1alpha1.NotificationSecretLabel: kickv1alpha1.NotificationSecretAllowed})
}

// secretLabelled creates a Secret in the test namespace with these labels.
func (h *harness) secretLabelled(name string, typ corev1.SecretType, data, labels map[string]string) *corev1.Secret {
	h.t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: name, Labels: labels}, Type: typ, StringData: data}
	if err := h.env.Client.Create(context.Background(), s); err != nil {
		h.t.Fatalf("create Secret %s: %v", name, err)
	}
	return s
}

// policy creates a NotificationPolicy in the test namespace.
func (h *harness) policy(name string, spec kickv1alpha1.NotificationPolicySpec) {
	h.t.Helper()
	p := &kickv1alpha1.NotificationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: name}, Spec: spec}
	if err := h.env.Client.Create(context.Background(), p); err != nil {
		h.t.Fatalf("create NotificationPolicy %s: %v", name, err)
	}
}

// update changes a policy's spec.
func (h *harness) update(name string, change func(*kickv1alpha1.NotificationPolicySpec)) {
	h.t.Helper()
	cluster.Eventually(h.t, wait, "update of NotificationPolicy "+name, func() (bool, error) {
		var p kickv1alpha1.NotificationPolicy
		if err := h.env.Client.Get(context.Background(), client.ObjectKey{Namespace: h.ns, Name: name}, &p); err != nil {
			return false, err
		}
		change(&p.Spec)
		if err := h.env.Client.Update(context.Background(), &p); err != nil {
			return false, err
		}
		return true, nil
	})
}

// event returns a phase change in the test namespace; every call gets its own request.
func (h *harness) event(to kickv1alpha1.KickRequestPhase, labels map[string]string) router.PhaseChanged {
	h.seq++
	name := fmt.Sprintf("req-%d", h.seq)
	return router.PhaseChanged{
		Request:      router.RequestRef{Namespace: h.ns, Name: name, UID: h.ns + "-" + name},
		From:         "Executing",
		To:           string(to),
		Target:       router.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: h.ns, Name: "web"},
		TargetLabels: labels,
		Provider:     "flux",
		Reason:       "db password rotated",
		Time:         time.Now().UTC().Truncate(time.Microsecond),
		Outcome:      "RestartCompleted",
	}
}

// gate returns a gate decision about a new request in the test namespace: held back by an Argo
// CD sync window, or allowed.
func (h *harness) gate(allowed bool, labels map[string]string) router.GateChanged {
	h.seq++
	name := fmt.Sprintf("req-%d", h.seq)
	now := time.Now().UTC().Truncate(time.Microsecond)
	ev := router.GateChanged{
		Request:      router.RequestRef{Namespace: h.ns, Name: name, UID: h.ns + "-" + name},
		Target:       router.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: h.ns, Name: "web"},
		TargetLabels: labels,
		Policy:       "nightly",
		Provider:     "argocd",
		Owner:        "Application argocd/web",
		Time:         now,
	}
	if allowed {
		ev.Allowed, ev.Reason = true, string(kickv1alpha1.GateAllowed)
	} else {
		ev.Stage, ev.Reason, ev.Message = "GitOps", string(kickv1alpha1.GateOutsideSchedule), "outside the sync windows of AppProject shop"
		ev.Cause = router.ObjectRef{APIVersion: "argoproj.io/v1alpha1", Kind: "AppProject", Namespace: "argocd", Name: "shop"}
		ev.OpensAt = now.Add(time.Hour).Truncate(time.Minute)
	}
	return ev
}

func (h *harness) publish(evs ...router.Event) {
	h.t.Helper()
	for _, ev := range evs {
		if err := h.rt.Publish(context.Background(), ev); err != nil {
			h.t.Fatalf("publish: %v", err)
		}
	}
}

// get reads a policy from the API server.
func (h *harness) get(name string) (*kickv1alpha1.NotificationPolicy, error) {
	var p kickv1alpha1.NotificationPolicy
	err := h.env.Client.Get(context.Background(), client.ObjectKey{Namespace: h.ns, Name: name}, &p)
	return &p, err
}

// ready waits until the policy's Ready condition, for its current generation, has this status
// and reason and its message contains every part.
func (h *harness) ready(name string, status metav1.ConditionStatus, reason string, parts ...string) *kickv1alpha1.NotificationPolicy {
	h.t.Helper()
	var p *kickv1alpha1.NotificationPolicy
	cluster.Eventually(h.t, wait, fmt.Sprintf("%s Ready=%s/%s", name, status, reason), func() (bool, error) {
		var err error
		if p, err = h.get(name); err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(p.Status.Conditions, kickv1alpha1.ConditionReady)
		switch {
		case p.Status.ObservedGeneration != p.Generation:
			return false, fmt.Errorf("observedGeneration %d of %d", p.Status.ObservedGeneration, p.Generation)
		case c == nil:
			return false, errors.New("no Ready condition")
		case c.ObservedGeneration != p.Generation || c.Status != status || c.Reason != reason:
			return false, fmt.Errorf("Ready=%s/%s (generation %d): %s", c.Status, c.Reason, c.ObservedGeneration, c.Message)
		}
		for _, part := range parts {
			if !strings.Contains(c.Message, part) {
				return false, fmt.Errorf("message %q lacks %q", c.Message, part)
			}
		}
		return true, nil
	})
	return p
}

// expectEvent waits for an Event about the policy with this type and reason.
func (h *harness) expectEvent(name, eventType, reason string) {
	h.t.Helper()
	cluster.Eventually(h.t, wait, fmt.Sprintf("a %s %s Event for %s", eventType, reason, name), func() (bool, error) {
		var list eventsv1.EventList
		if err := h.env.Client.List(context.Background(), &list, client.InNamespace(h.ns)); err != nil {
			return false, err
		}
		var seen []string
		for _, e := range list.Items {
			if e.Regarding.Kind == "NotificationPolicy" && e.Regarding.Name == name {
				if e.Type == eventType && e.Reason == reason && e.ReportingController == sinks.ControllerName {
					return true, nil
				}
				seen = append(seen, e.Type+"/"+e.Reason)
			}
		}
		return false, fmt.Errorf("events seen: %v", seen)
	})
}

// counts waits until the policy's status shows these counters.
func (h *harness) counts(name string, delivered, failed, dropped int64) *kickv1alpha1.NotificationPolicy {
	h.t.Helper()
	var p *kickv1alpha1.NotificationPolicy
	cluster.Eventually(h.t, wait, fmt.Sprintf("%s delivered=%d failed=%d dropped=%d", name, delivered, failed, dropped), func() (bool, error) {
		var err error
		if p, err = h.get(name); err != nil {
			return false, err
		}
		st := p.Status
		if st.Delivered != delivered || st.Failed != failed || st.Dropped != dropped {
			return false, fmt.Errorf("delivered=%d failed=%d dropped=%d lastError=%q", st.Delivered, st.Failed, st.Dropped, st.LastError)
		}
		return true, nil
	})
	return p
}

// metric returns the value of a counter with these labels (0 when absent).
func (h *harness) metric(name string, labels map[string]string) float64 {
	h.t.Helper()
	families, err := h.reg.Gather()
	if err != nil {
		h.t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if got[k] != v {
					continue next
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

func (h *harness) deliveries(policy, outcome string) float64 {
	return h.metric("kick_notification_deliveries_total", map[string]string{"namespace": h.ns, "policy": policy, "outcome": outcome})
}

func webhook(url string) kickv1alpha1.NotificationPolicySpec {
	return kickv1alpha1.NotificationPolicySpec{Webhook: kickv1alpha1.WebhookSpec{URL: url}}
}

func ref(name, key string) *kickv1alpha1.SecretKeyRef {
	return &kickv1alpha1.SecretKeyRef{Name: name, Key: key}
}

// hit is one request a receiver got.
type hit struct {
	at     time.Time
	path   string
	header http.Header
	body   []byte
}

// requestName is the payload's requestName (json format).
func (h hit) requestName() string {
	var p struct {
		RequestName string `json:"requestName"`
	}
	_ = json.Unmarshal(h.body, &p)
	return p.RequestName
}

// receiver is a real HTTP endpoint on 127.0.0.1 that records requests and answers with
// respond (200 when nil).
type receiver struct {
	*httptest.Server
	mu      sync.Mutex
	hits    []hit
	changed chan struct{} // closed and replaced on every hit
	respond func(n int, w http.ResponseWriter, r *http.Request)
}

func newReceiver(t *testing.T, respond func(n int, w http.ResponseWriter, r *http.Request)) *receiver {
	rc := &receiver{changed: make(chan struct{}), respond: respond}
	rc.Server = httptest.NewUnstartedServer(http.HandlerFunc(rc.serve))
	rc.Start()
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	n := len(rc.hits)
	rc.hits = append(rc.hits, hit{at: time.Now(), path: r.URL.Path, header: r.Header.Clone(), body: body})
	close(rc.changed)
	rc.changed = make(chan struct{})
	rc.mu.Unlock()
	if rc.respond != nil {
		rc.respond(n, w, r)
	}
}

func (rc *receiver) seen() []hit {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]hit(nil), rc.hits...)
}

// waitFor waits until the receiver has seen n requests whose path has the prefix and returns
// them.
func (rc *receiver) waitFor(t *testing.T, prefix string, n int) []hit {
	t.Helper()
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		rc.mu.Lock()
		var mine []hit
		for _, h := range rc.hits {
			if strings.HasPrefix(h.path, prefix) {
				mine = append(mine, h)
			}
		}
		changed := rc.changed
		rc.mu.Unlock()
		if len(mine) >= n {
			return mine
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("timed out waiting for %d requests to %s%s; got %d", n, rc.URL, prefix, len(mine))
		}
	}
}

func names(hits []hit) string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.requestName()
	}
	return strings.Join(out, ",")
}

// syncBuffer is a bytes.Buffer safe for concurrent writers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) WriteString(s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.WriteString(s)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
