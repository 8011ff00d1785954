package timeline

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/router"
	"github.com/kick-operator/kick/sinks/timeline/entry"
)

func testServer(t *testing.T, access Access, objs ...client.Object) (*Server, *History) {
	t.Helper()
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = kickv1alpha1.AddToScheme(scheme)
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
	h := NewHistory(1000, 0)
	return &Server{opts: Options{History: h, Access: access}, cat: catalog{reader: c}}, h
}

func managedDeployment(ns, name string) []client.Object {
	p := &kickv1alpha1.KickPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "restart-all"},
		Spec: kickv1alpha1.KickPolicySpec{Discovery: &kickv1alpha1.DiscoverySpec{WorkloadSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}}}}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": name}}}
	d.Spec.Template.Spec.Volumes = nil
	return []client.Object{p, d}
}

func get(t *testing.T, h http.Handler, path string, out any) int {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	if out != nil && rec.Code == http.StatusOK {
		if err := json.Unmarshal(rec.Body.Bytes(), out); err != nil {
			t.Fatalf("%s: %v\n%s", path, err, rec.Body)
		}
	}
	return rec.Code
}

// TestAccessFiltersNamespaces: a caller who may read namespace a sees a's
// lanes and not b's, and is refused b's workload and graph; a caller
// without a token gets 401.
func TestAccessFiltersNamespaces(t *testing.T) {
	access := func(r *http.Request) (func(context.Context, string) int, int) {
		switch r.Header.Get("Authorization") {
		case "":
			return nil, http.StatusUnauthorized
		}
		return func(_ context.Context, ns string) int {
			if ns == "a" {
				return http.StatusOK
			}
			return http.StatusForbidden
		}, http.StatusOK
	}
	objs := append(managedDeployment("a", "web"), managedDeployment("b", "api")...)
	s, h := testServer(t, access, objs...)
	now := time.Now()
	h.Add(FromRouter(router.SourceChanged{Source: router.ObjectRef{Kind: "Secret", Namespace: "a", Name: "db"}, Class: router.ClassRelevant,
		ChangeTime: now, Consumers: []router.ObjectRef{{Kind: "Deployment", Namespace: "a", Name: "web"}}})...)
	h.Add(FromRouter(router.SourceChanged{Source: router.ObjectRef{Kind: "Secret", Namespace: "b", Name: "db"}, Class: router.ClassRelevant,
		ChangeTime: now, Consumers: []router.ObjectRef{{Kind: "Deployment", Namespace: "b", Name: "api"}}})...)

	srv := s.Handler()
	if code := get(t, srv, "/timeline/overview", nil); code != http.StatusUnauthorized {
		t.Fatalf("no token: %d, want 401", code)
	}
	withToken := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Set("Authorization", "Bearer reader-of-a")
		srv.ServeHTTP(w, r)
	})
	var o Overview
	if code := get(t, withToken, "/timeline/overview", &o); code != http.StatusOK {
		t.Fatalf("overview: %d", code)
	}
	if len(o.Lanes) != 1 || o.Lanes[0].Namespace != "a" || len(o.Lanes[0].Entries) != 1 || o.Lanes[0].State != entry.StateChanged {
		t.Fatalf("lanes = %+v, want a/web alone with its change", o.Lanes)
	}
	for _, p := range []string{"/timeline?namespace=b&kind=Deployment&name=api", "/timeline/dag?namespace=b", "/timeline/discovery?namespace=b"} {
		if code := get(t, withToken, p, nil); code != http.StatusForbidden {
			t.Fatalf("%s: %d, want 403", p, code)
		}
	}
	var d DAG
	if code := get(t, withToken, "/timeline/dag?namespace=a", &d); code != http.StatusOK || len(d.Nodes) != 2 || len(d.Edges) != 1 {
		t.Fatalf("dag of a: %d %+v", code, d)
	}
	var disc Discovery
	if code := get(t, withToken, "/timeline/discovery?namespace=a&name=WE", &disc); code != http.StatusOK || len(disc.Workloads) != 1 || disc.Workloads[0].Policy != "restart-all" {
		t.Fatalf("discovery of a: %d %+v", code, disc)
	}
}

// listCounter records the namespaces in which workloads are listed.
type listCounter struct {
	client.Reader
	workloadLists map[string]int
}

func (l *listCounter) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if _, ok := list.(*appsv1.DeploymentList); ok {
		o := (&client.ListOptions{}).ApplyOptions(opts)
		l.workloadLists[o.Namespace]++
	}
	return l.Reader.List(ctx, list, opts...)
}

// TestOverviewListsOnlyVisibleNamespaces plays a viewer of one namespace in
// a cluster of many: the overview reads the workloads of that namespace
// only, not every workload before filtering.
func TestOverviewListsOnlyVisibleNamespaces(t *testing.T) {
	access := func(*http.Request) (func(context.Context, string) int, int) {
		return func(_ context.Context, ns string) int {
			if ns == "a" {
				return http.StatusOK
			}
			return http.StatusForbidden
		}, http.StatusOK
	}
	var objs []client.Object
	for _, ns := range []string{"a", "b", "c", "d"} {
		objs = append(objs, managedDeployment(ns, "web")...)
	}
	s, _ := testServer(t, access, objs...)
	lc := &listCounter{Reader: s.cat.reader, workloadLists: map[string]int{}}
	s.cat.reader = lc
	var o Overview
	if code := get(t, s.Handler(), "/timeline/overview", &o); code != http.StatusOK || len(o.Lanes) != 1 {
		t.Fatalf("overview: %d, %d lanes", code, len(o.Lanes))
	}
	for ns, n := range lc.workloadLists {
		if ns != "a" {
			t.Errorf("listed the Deployments of %s (%d times), which the viewer may not see", ns, n)
		}
	}
}

// TestNamespaceCheckLimitedRefusesRequest: when a namespace's access check
// is rate limited, the overview answers 429 with Retry-After rather than a
// partial overview that silently leaves the namespace out.
func TestNamespaceCheckLimitedRefusesRequest(t *testing.T) {
	access := func(*http.Request) (func(context.Context, string) int, int) {
		return func(_ context.Context, ns string) int {
			if ns == "a" {
				return http.StatusOK
			}
			return http.StatusTooManyRequests
		}, http.StatusOK
	}
	s, _ := testServer(t, access, append(managedDeployment("a", "web"), managedDeployment("b", "web")...)...)
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/timeline/overview", nil))
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("overview with a limited check: %d %q, want 429 with Retry-After", rec.Code, rec.Header().Get("Retry-After"))
	}
}

// TestUIServed: the root redirects to the UI, which loads its script and
// style from the binary.
func TestUIServed(t *testing.T) {
	s, _ := testServer(t, nil)
	srv := s.Handler()
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if rec.Code != http.StatusFound || rec.Header().Get("Location") != "/timeline/ui" {
		t.Fatalf("/: %d %v", rec.Code, rec.Header())
	}
	for path, want := range map[string]string{"/timeline/ui": "<svg id=\"lanes\"", "/timeline/ui/app.js": "drawDAG", "/timeline/ui/app.css": ".marker"} {
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), want) {
			t.Fatalf("%s: %d, body without %q", path, rec.Code, want)
		}
		if strings.Contains(rec.Body.String(), "https://") {
			t.Fatalf("%s refers to another origin", path)
		}
	}
}

// TestHistoryBounds: the history keeps its newest size entries, forgets
// entries older than its age, and counts an occurrence once.
func TestHistoryBounds(t *testing.T) {
	h := NewHistory(3, time.Hour)
	now := time.Now()
	w := entry.Workload{Namespace: "a", Kind: "Deployment", Name: "web"}
	h.Add(entry.NewRestart(w, "r", now.Add(-2*time.Hour), 0)) // too old
	for i := range 5 {
		h.Add(entry.NewRestart(w, "r", now.Add(time.Duration(i)*time.Second), 0))
	}
	h.Add(entry.NewRestart(w, "r", now.Add(4*time.Second), 0)) // duplicate
	es := h.Select(nil)
	if len(es) != 3 || !es[0].Time.Equal(now.Add(2*time.Second)) {
		t.Fatalf("entries = %d, first %v", len(es), es[0].Time)
	}
	h.now = func() time.Time { return now.Add(time.Hour + 3500*time.Millisecond) }
	if es := h.Select(nil); len(es) != 1 {
		t.Fatalf("after an hour: %d entries, want 1", len(es))
	}
}

func TestFromRouterGate(t *testing.T) {
	es := FromRouter(router.GateChanged{Request: router.RequestRef{Namespace: "a", Name: "deployment-web"},
		Target: router.ObjectRef{Kind: "Deployment", Namespace: "a", Name: "web"}, Stage: "Schedule",
		Reason: "OutsideSchedule", Message: "outside", Time: time.Now()})
	if len(es) != 1 || es[0].Type != entry.Gate || es[0].Key() != "a/Deployment/web" || !strings.Contains(es[0].Summary, "Schedule") {
		t.Fatalf("entries = %+v", es)
	}
}

// TestLiveEntriesKeepTheirOrderWithinASecond: a gate decision and a request
// creation stored to the whole second, recorded after the change that
// caused them, come after it on the timeline; an entry of another workload,
// one more than a second older and a precise one keep their times; the
// gate still counts once when rebuilt from the request.
func TestLiveEntriesKeepTheirOrderWithinASecond(t *testing.T) {
	second := time.Date(2026, 12, 1, 12, 0, 7, 0, time.UTC)
	web := router.ObjectRef{Kind: "Deployment", Namespace: "a", Name: "web"}
	other := router.ObjectRef{Kind: "Deployment", Namespace: "a", Name: "other"}
	req := router.RequestRef{Namespace: "a", Name: "deployment-web"}
	gate := router.GateChanged{Request: req, Target: web, Stage: "Schedule", Reason: "OutsideSchedule", Time: second}
	h := NewHistory(100, 0)
	var seq arrival
	for _, ev := range []router.Event{
		router.SourceChanged{Source: router.ObjectRef{Kind: "Secret", Namespace: "a", Name: "db"}, Class: router.ClassRelevant,
			ChangeTime: second.Add(531 * time.Millisecond), Consumers: []router.ObjectRef{web}},
		gate,
		router.PhaseChanged{Request: req, To: "WaitingForGate", Target: web, Time: second},
		router.GateChanged{Request: req, Target: other, Stage: "Schedule", Reason: "OutsideSchedule", Time: second},
		router.GateChanged{Request: req, Target: web, Stage: "Schedule", Reason: "Allowed", Allowed: true, Time: second.Add(-2 * time.Second)},
		router.PhaseChanged{Request: req, From: "WaitingForGate", To: "Executing", Target: web, Time: second.Add(100 * time.Millisecond)},
	} {
		h.Add(seq.order(FromRouter(ev))...)
	}
	h.Add(FromRouter(gate)...) // the same decision again, as a rebuild would add it
	var got []string
	for _, e := range h.Select(nil) {
		got = append(got, fmt.Sprintf("%s %s %s", e.Time.Format("05.000000"), e.Name, e.Type))
	}
	want := []string{
		"05.000000 web gate",    // more than a second before the latest: left alone
		"07.000000 other gate",  // another workload's
		"07.100000 web restart", // precise
		"07.531000 web change",
		"07.531001 web gate",
		"07.531002 web request",
	}
	if !slices.Equal(got, want) {
		t.Errorf("timeline:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestFromRouterMarksUnreadKeys: a change event's consumers that read only
// keys it left alone get a marked change entry (no restart awaits it: the
// lane stays idle and no later restart is dated from it); the reader of
// the changed key gets the usual one. No entry names a key.
func TestFromRouterMarksUnreadKeys(t *testing.T) {
	at := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	reads := router.ObjectRef{Kind: "Deployment", Namespace: "a", Name: "reads-b"}
	other := router.ObjectRef{Kind: "Deployment", Namespace: "a", Name: "reads-a"}
	es := FromRouter(router.SourceChanged{Source: router.ObjectRef{Kind: "Secret", Namespace: "a", Name: "db"}, Class: router.ClassRelevant,
		ChangeTime: at, Consumers: []router.ObjectRef{other, reads}, KeysUnread: []router.ObjectRef{other}})
	if len(es) != 2 {
		t.Fatalf("entries %+v", es)
	}
	byName := map[string]entry.Entry{}
	for _, e := range es {
		byName[e.Name] = e
	}
	if e := byName["reads-b"]; e.KeysUnread || e.Summary != "Secret db changed" || entry.State([]entry.Entry{e}) != entry.StateChanged {
		t.Errorf("the reader of the changed key: %+v", e)
	}
	e := byName["reads-a"]
	if !e.KeysUnread || e.Summary != "Secret db changed, but none of the keys it reads" {
		t.Errorf("the reader of an untouched key: %+v", e)
	}
	if s := entry.State([]entry.Entry{e}); s != entry.StateIdle {
		t.Errorf("a change of keys it does not read leaves the lane %s, want idle", s)
	}
	restart := entry.NewRestart(e.Workload, "deployment-reads-a", at.Add(time.Second), 0)
	both := []entry.Entry{e, restart}
	entry.Narrate(both)
	if both[1].Note != "" {
		t.Errorf("a later restart is dated from a change of keys it does not read: %q", both[1].Note)
	}
}
