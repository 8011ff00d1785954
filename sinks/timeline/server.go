package timeline

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/go-logr/logr"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/kick-operator/kick/restart/workload"
	"github.com/kick-operator/kick/router"
	"github.com/kick-operator/kick/sinks/timeline/entry"
)

//go:embed ui
var uiFiles embed.FS

// Access decides what the caller of r may see. A status other than 200
// refuses the request (401 without a valid bearer token, 429 when too many
// new callers are being checked, 503 when it cannot be checked). may
// answers per namespace: 200 (may see it), 403 (may not) or one of those
// refusals, which then refuses the whole request rather than leaving the
// namespace out silently. A nil Access lets everyone see everything
// (loopback only).
type Access func(r *http.Request) (may func(ctx context.Context, namespace string) int, status int)

// Options configure a Server.
type Options struct {
	// Addr is the listen address, e.g. 127.0.0.1:8082. Off loopback the
	// server needs CertDir (see CheckTLS).
	Addr string
	// CertDir holds tls.crt and tls.key (reloaded when they change); the
	// server speaks HTTPS with them. Empty: plain HTTP, loopback only.
	CertDir string
	// Cache is the manager's cache: every read comes from it.
	Cache cache.Cache
	Kinds *workload.Registry
	// History receives the router's events (from Subscription) and the rebuilt entries.
	History      *History
	Subscription *router.Subscription
	// Events lists and watches the Events to show (see EventSource); nil:
	// none.
	Events toolscache.ListerWatcher
	Access Access
	Log    logr.Logger
}

// Server is the timeline: recorder, rebuild and HTTP server. It is a
// controller-runtime Runnable that runs on every replica (it only reads).
type Server struct {
	opts Options
	cat  catalog
}

// New returns a server; call Start (the manager does) to run it.
func New(opts Options) *Server {
	return &Server{opts: opts, cat: catalog{reader: opts.Cache, kinds: opts.Kinds}}
}

// NeedLeaderElection is false: every replica serves its timeline.
func (s *Server) NeedLeaderElection() bool { return false }

// Start records router events, rebuilds the history from the cache once it
// is synced, watches Events and serves HTTP until ctx ends. A listen error
// is logged, not returned: the timeline must never stop restarts.
func (s *Server) Start(ctx context.Context) error {
	if s.opts.Subscription != nil {
		go func() { _ = Record(ctx, s.opts.Subscription, s.opts.History) }()
	}
	if !s.opts.Cache.WaitForCacheSync(ctx) {
		return nil
	}
	start := time.Now()
	if err := s.cat.rebuild(ctx, s.opts.History); err != nil {
		s.opts.Log.Error(err, "timeline: rebuilding from the cache was incomplete")
	}
	s.opts.Log.Info("timeline history rebuilt from the cache", "entries", s.opts.History.Len(), "took", time.Since(start).String())
	s.watchEvents(ctx)

	l, scheme, err := s.listen(ctx)
	if err != nil {
		s.opts.Log.Error(err, "timeline: cannot listen; the timeline is off", "address", s.opts.Addr)
		<-ctx.Done()
		return nil
	}
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	s.opts.Log.Info("timeline serving", "url", scheme+"://"+l.Addr().String()+"/timeline/ui", "authenticated", s.opts.Access != nil)
	if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		s.opts.Log.Error(err, "timeline server stopped")
	}
	return nil
}

// Handler serves the UI and the JSON API.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(uiFiles, "ui")
	files := http.StripPrefix("/timeline/ui/", http.FileServer(http.FS(static)))
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/timeline/ui", http.StatusFound)
	})
	mux.HandleFunc("GET /timeline/ui", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		http.ServeFileFS(w, r, static, "index.html")
	})
	mux.Handle("GET /timeline/ui/", files)
	mux.HandleFunc("GET /timeline/overview", s.api(s.overview))
	mux.HandleFunc("GET /timeline", s.api(s.workload))
	mux.HandleFunc("GET /timeline/discovery", s.api(s.discovery))
	mux.HandleFunc("GET /timeline/dag", s.api(s.dag))
	var h http.Handler = mux
	if LoopbackOnly(s.opts.Addr) {
		h = localHostOnly(h)
	}
	return securityHeaders(h)
}

// refuse answers a request Access did not let through.
func refuse(w http.ResponseWriter, status int) {
	switch status {
	case http.StatusUnauthorized:
		w.Header().Set("WWW-Authenticate", `Bearer realm="kick-timeline"`)
	case http.StatusTooManyRequests:
		w.Header().Set("Retry-After", "1")
	}
	http.Error(w, http.StatusText(status), status)
}

func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

// apiError is an API answer other than 200.
type apiError struct {
	status int
	msg    string
}

func (e *apiError) Error() string { return e.msg }

func badRequest(msg string) error { return &apiError{status: http.StatusBadRequest, msg: msg} }

// api wraps a JSON endpoint with the access check.
func (s *Server) api(fn func(r *http.Request, may func(string) bool) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		may := func(string) bool { return true }
		refused := 0 // a namespace check that could not be answered
		if s.opts.Access != nil {
			check, status := s.opts.Access(r)
			if status != http.StatusOK {
				refuse(w, status)
				return
			}
			memo := map[string]bool{}
			may = func(ns string) bool {
				ok, seen := memo[ns]
				if !seen && refused == 0 {
					code := check(r.Context(), ns)
					if code != http.StatusOK && code != http.StatusForbidden {
						refused = code
					}
					ok = code == http.StatusOK
					memo[ns] = ok
				}
				return ok
			}
		}
		body, err := fn(r, may)
		if refused != 0 {
			refuse(w, refused)
			return
		}
		if err != nil {
			status := http.StatusInternalServerError
			var ae *apiError
			if errors.As(err, &ae) {
				status = ae.status
			} else {
				s.opts.Log.Error(err, "timeline request failed", "path", r.URL.Path)
			}
			http.Error(w, err.Error(), status)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(body)
	}
}

// Lane is one workload of the overview.
type Lane struct {
	entry.Workload
	Policy  string        `json:"policy,omitempty"`
	State   string        `json:"state"`
	Entries []entry.Entry `json:"entries"`
}

// Overview is the answer of /timeline/overview.
type Overview struct {
	Generated time.Time `json:"generated"`
	From      time.Time `json:"from"`
	To        time.Time `json:"to"`
	Lanes     []Lane    `json:"lanes"`
}

func (s *Server) overview(r *http.Request, may func(string) bool) (any, error) {
	from, to, err := timeRange(r)
	if err != nil {
		return nil, err
	}
	managed, _, err := s.cat.discover(r.Context(), "", may)
	if err != nil {
		return nil, err
	}
	es := s.opts.History.Select(func(e *entry.Entry) bool {
		return !e.Time.Before(from) && !e.Time.After(to) && may(e.Namespace)
	})
	return buildOverview(from, to, managed, es), nil
}

// buildOverview groups entries into lanes: one per managed workload (even
// without entries) and one per other workload that has entries. Both come
// filtered by what the caller may see.
func buildOverview(from, to time.Time, managed []Discovered, es []entry.Entry) Overview {
	entry.Narrate(es)
	lanes := map[string]*Lane{}
	for _, d := range managed {
		lanes[d.Key()] = &Lane{Workload: d.Workload, Policy: d.Policy, Entries: []entry.Entry{}}
	}
	for _, e := range es {
		l := lanes[e.Key()]
		if l == nil {
			l = &Lane{Workload: e.Workload}
			lanes[e.Key()] = l
		}
		l.Entries = append(l.Entries, e)
	}
	o := Overview{Generated: time.Now().UTC(), From: from, To: to, Lanes: make([]Lane, 0, len(lanes))}
	for _, l := range lanes {
		l.State = entry.State(l.Entries)
		o.Lanes = append(o.Lanes, *l)
	}
	sort.Slice(o.Lanes, func(i, j int) bool { return o.Lanes[i].Key() < o.Lanes[j].Key() })
	return o
}

// timeRange reads from/to (RFC 3339) or since (a duration); the default is
// everything held.
func timeRange(r *http.Request) (time.Time, time.Time, error) {
	q := r.URL.Query()
	now := time.Now().UTC()
	from, to := time.Time{}, now.Add(time.Hour)
	if v := q.Get("since"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return from, to, badRequest("since: a positive duration such as 2h")
		}
		from = now.Add(-d)
	}
	for name, dst := range map[string]*time.Time{"from": &from, "to": &to} {
		if v := q.Get(name); v != "" {
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				return from, to, badRequest(name + ": an RFC 3339 time")
			}
			*dst = t
		}
	}
	return from, to, nil
}

// WorkloadTimeline is the answer of /timeline.
type WorkloadTimeline struct {
	entry.Workload
	State   string        `json:"state"`
	Entries []entry.Entry `json:"entries"`
}

func (s *Server) workload(r *http.Request, may func(string) bool) (any, error) {
	q := r.URL.Query()
	w := entry.Workload{Namespace: q.Get("namespace"), Kind: q.Get("kind"), Name: q.Get("name")}
	if w.Kind == "" || w.Name == "" {
		return nil, badRequest("namespace, kind and name are required")
	}
	if _, err := namespaceParam(r, may); err != nil {
		return nil, err
	}
	from, to, err := timeRange(r)
	if err != nil {
		return nil, err
	}
	key := w.Key()
	es := s.opts.History.Select(func(e *entry.Entry) bool {
		return e.Key() == key && !e.Time.Before(from) && !e.Time.After(to)
	})
	entry.Narrate(es)
	if es == nil {
		es = []entry.Entry{}
	}
	return WorkloadTimeline{Workload: w, State: entry.State(es), Entries: es}, nil
}

// Discovery is the answer of /timeline/discovery.
type Discovery struct {
	Namespace string       `json:"namespace"`
	Workloads []Discovered `json:"workloads"`
}

func (s *Server) discovery(r *http.Request, may func(string) bool) (any, error) {
	q := r.URL.Query()
	ns, err := namespaceParam(r, may)
	if err != nil {
		return nil, err
	}
	ws, _, err := s.cat.discover(r.Context(), ns, may)
	if err != nil {
		return nil, err
	}
	out := Discovery{Namespace: ns, Workloads: []Discovered{}}
	pol, kind, name := q.Get("policy"), q.Get("kind"), strings.ToLower(q.Get("name"))
	for _, w := range ws {
		if (pol == "" || contains(w.Policies, pol)) && (kind == "" || strings.EqualFold(w.Kind, kind)) &&
			(name == "" || strings.Contains(strings.ToLower(w.Name), name)) {
			out.Workloads = append(out.Workloads, w)
		}
	}
	return out, nil
}

// namespaceParam is the required namespace parameter, which the caller must
// be allowed to see.
func namespaceParam(r *http.Request, may func(string) bool) (string, error) {
	ns := r.URL.Query().Get("namespace")
	if ns == "" {
		return "", badRequest("namespace is required")
	}
	if !may(ns) {
		return "", &apiError{status: http.StatusForbidden, msg: "you may not list KickRequests in namespace " + ns}
	}
	return ns, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func (s *Server) dag(r *http.Request, may func(string) bool) (any, error) {
	ns, err := namespaceParam(r, may)
	if err != nil {
		return nil, err
	}
	ws, policies, err := s.cat.discover(r.Context(), ns, may)
	if err != nil {
		return nil, err
	}
	return buildDAG(ns, ws, policies), nil
}
