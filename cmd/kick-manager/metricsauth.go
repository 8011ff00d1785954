package main

import (
	"container/list"
	"context"
	"crypto/sha256"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// metricsAuth is the filter in front of /metrics with --metrics-secure: the
// caller's bearer token must be one the API server authenticates
// (TokenReview), and that user must be allowed a get on the request's path
// (SubjectAccessReview, as for the API server's own /metrics). No token or a
// token the API server does not accept: 401; not allowed: 403; too many new
// callers at once: 429 with Retry-After; the reviews failing: 503. It needs
// only client-go, where controller-runtime's filter links the whole
// k8s.io/apiserver into the manager. The reviews go through a client of
// their own (see newReviewer), not the manager's hc.
func metricsAuth(c *rest.Config, _ *http.Client) (metricsserver.Filter, error) {
	rv, err := newReviewer(c)
	if err != nil {
		return nil, err
	}
	return func(log logr.Logger, next http.Handler) (http.Handler, error) {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			code, why := rv.check(r, authzv1.SubjectAccessReviewSpec{
				NonResourceAttributes: &authzv1.NonResourceAttributes{Path: r.URL.Path, Verb: strings.ToLower(r.Method)},
			})
			if code != http.StatusOK {
				if code == http.StatusServiceUnavailable {
					log.Info("cannot review a /metrics request", "error", why)
				}
				refuse(w, code)
				return
			}
			next.ServeHTTP(w, r)
		}), nil
	}, nil
}

// refuse answers a request the reviewer did not let through.
func refuse(w http.ResponseWriter, code int) {
	switch code {
	case http.StatusTooManyRequests:
		w.Header().Set("Retry-After", "1")
	case http.StatusUnauthorized:
		w.Header().Set("WWW-Authenticate", `Bearer realm="kick"`)
	}
	http.Error(w, http.StatusText(code), code)
}

// The reviewer's bounds. Every TokenReview or SubjectAccessReview it has
// no remembered answer for takes a token from a bucket of reviewBurst,
// refilled at reviewQPS a second, and one of reviewConcurrency slots while
// it runs; without either the request gets 429 at once. A caller sending a
// new random token with every request therefore costs the API server at
// most reviewBurst reviews, then reviewQPS a second, however fast it
// sends; callers with remembered answers are not held up by it. A new
// token also takes a token from its client address's own bucket
// (perClientBurst, refilled at perClientQPS), so one flooding pod leaves
// most of the shared bucket to callers elsewhere.
const (
	reviewQPS         = 5
	reviewBurst       = 20
	reviewConcurrency = 4
	perClientQPS      = 1
	perClientBurst    = 5
	// perClientIdle is how long a client's bucket is kept after it was
	// made; at most reviewCacheSize are kept.
	perClientIdle = 10 * time.Minute
	// reviewCacheSize bounds each of the two answer caches; the least
	// recently used answer makes room for a new one.
	reviewCacheSize = 1024
	// How long answers are remembered: allowed, refused (401, 403), and
	// reviews that failed (503), so a broken API server is not asked again
	// for every request.
	allowedTTL = time.Minute
	refusedTTL = 30 * time.Second
	failedTTL  = 5 * time.Second
)

// reviewer asks the API server who sent a request (TokenReview of its
// bearer token) and whether that user may do something
// (SubjectAccessReview), remembering both answers briefly.
type reviewer struct {
	cs    kubernetes.Interface
	limit flowcontrol.RateLimiter
	slots chan struct{}
	users *answers[authnv1.UserInfo]
	votes *answers[struct{}]
	// clients are the per-address buckets for new tokens.
	clients *answers[flowcontrol.RateLimiter]
}

// newReviewer reviews through a client of its own: its own connection
// (client-go shares a transport between equal configurations unless Dial
// is set) and its own client-side limit, so reviews never queue behind or
// in front of the manager's restart writes on the same connection.
func newReviewer(c *rest.Config) (*reviewer, error) {
	rc := rest.CopyConfig(c)
	rc.QPS, rc.Burst = reviewQPS, reviewBurst
	rc.RateLimiter = nil
	rc.Dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("review client: %w", err)
	}
	return newReviewerFor(cs), nil
}

func newReviewerFor(cs kubernetes.Interface) *reviewer {
	return &reviewer{
		cs:      cs,
		limit:   flowcontrol.NewTokenBucketRateLimiter(reviewQPS, reviewBurst),
		slots:   make(chan struct{}, reviewConcurrency),
		users:   newAnswers[authnv1.UserInfo](reviewCacheSize),
		votes:   newAnswers[struct{}](reviewCacheSize),
		clients: newAnswers[flowcontrol.RateLimiter](reviewCacheSize),
	}
}

// check authenticates r and authorizes attrs (without the user) for its
// caller: 200, 401, 403, 429 or 503 with why.
func (rv *reviewer) check(r *http.Request, attrs authzv1.SubjectAccessReviewSpec) (int, string) {
	u, code, why := rv.user(r)
	if code != http.StatusOK {
		return code, why
	}
	return rv.allowed(r.Context(), u, attrs)
}

// user authenticates the bearer token of r. Answers are remembered under a
// hash of the token alone (scheme and surrounding spaces do not make a new
// key); the token itself is kept no longer than the request.
func (rv *reviewer) user(r *http.Request) (authnv1.UserInfo, int, string) {
	token, ok := bearerToken(r)
	if !ok {
		return authnv1.UserInfo{}, http.StatusUnauthorized, "no bearer token"
	}
	key := sha256.Sum256([]byte("authn\x00" + token))
	return remembered(rv, rv.users, key, rv.client(r), func() (authnv1.UserInfo, int, string) {
		return authenticate(r.Context(), rv.cs, token)
	})
}

// client is the bucket of r's client address.
func (rv *reviewer) client(r *http.Request) flowcontrol.RateLimiter {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	key := sha256.Sum256([]byte("client\x00" + host))
	now := time.Now()
	if b, _, ok := rv.clients.get(key, now); ok {
		return b
	}
	b := flowcontrol.NewTokenBucketRateLimiter(perClientQPS, perClientBurst)
	rv.clients.put(key, b, http.StatusOK, now.Add(perClientIdle))
	return b
}

// allowed authorizes attrs for u. Answers are remembered per user (name,
// UID, groups, extra) and question, so all tokens of one user share them.
func (rv *reviewer) allowed(ctx context.Context, u authnv1.UserInfo, attrs authzv1.SubjectAccessReviewSpec) (int, string) {
	_, code, why := remembered(rv, rv.votes, userQuestion(u, attrs), nil, func() (struct{}, int, string) {
		code, why := authorize(ctx, rv.cs, u, attrs)
		return struct{}{}, code, why
	})
	return code, why
}

// remembered returns the answer a holds for key or, within rv's limits
// (and the caller's, unless nil), asks review and remembers what it says.
func remembered[T any](rv *reviewer, a *answers[T], key [sha256.Size]byte, caller flowcontrol.RateLimiter, review func() (T, int, string)) (T, int, string) {
	now := time.Now()
	if v, code, ok := a.get(key, now); ok {
		return v, code, ""
	}
	var zero T
	if caller != nil && !caller.TryAccept() {
		return zero, http.StatusTooManyRequests, "too many new tokens from this client"
	}
	if !rv.limit.TryAccept() {
		return zero, http.StatusTooManyRequests, "too many reviews"
	}
	select {
	case rv.slots <- struct{}{}:
		defer func() { <-rv.slots }()
	default:
		return zero, http.StatusTooManyRequests, "too many reviews at once"
	}
	v, code, why := review()
	ttl := failedTTL
	switch code {
	case http.StatusOK:
		ttl = allowedTTL
	case http.StatusUnauthorized, http.StatusForbidden:
		ttl = refusedTTL
	}
	a.put(key, v, code, now.Add(ttl))
	return v, code, why
}

// bearerToken is the token of r's Authorization header, without the
// scheme (any case) and surrounding spaces.
func bearerToken(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return "", false
	}
	return token, true
}

// userQuestion is the cache key of u asking attrs.
func userQuestion(u authnv1.UserInfo, attrs authzv1.SubjectAccessReviewSpec) [sha256.Size]byte {
	h := sha256.New()
	field := func(s string) { h.Write([]byte(s)); h.Write([]byte{0}) }
	field(u.Username)
	field(u.UID)
	for _, g := range u.Groups {
		field("g:" + g)
	}
	keys := make([]string, 0, len(u.Extra))
	for k := range u.Extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		field("x:" + k)
		for _, v := range u.Extra[k] {
			field(v)
		}
	}
	field(question(attrs))
	var key [sha256.Size]byte
	h.Sum(key[:0])
	return key
}

// question is the cache key of attrs.
func question(attrs authzv1.SubjectAccessReviewSpec) string {
	if a := attrs.NonResourceAttributes; a != nil {
		return "nonresource\x00" + a.Verb + "\x00" + a.Path
	}
	if a := attrs.ResourceAttributes; a != nil {
		return "resource\x00" + a.Verb + "\x00" + a.Resource + "\x00" + a.Group + "\x00" + a.Name + "\x00" + a.Namespace
	}
	return ""
}

// answers is a bounded cache of review answers keyed by hash: at most size
// of them; when it is full, the least recently used one makes room.
type answers[T any] struct {
	size  int
	mu    sync.Mutex
	order *list.List // front: most recently used; values *answer[T]
	byKey map[[sha256.Size]byte]*list.Element
}

type answer[T any] struct {
	key   [sha256.Size]byte
	value T
	code  int
	until time.Time
}

func newAnswers[T any](size int) *answers[T] {
	return &answers[T]{size: size, order: list.New(), byKey: map[[sha256.Size]byte]*list.Element{}}
}

// get returns the answer for key unless it is missing or expired.
func (c *answers[T]) get(key [sha256.Size]byte, now time.Time) (T, int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var zero T
	el, ok := c.byKey[key]
	if !ok {
		return zero, 0, false
	}
	a := el.Value.(*answer[T])
	if !now.Before(a.until) {
		c.order.Remove(el)
		delete(c.byKey, key)
		return zero, 0, false
	}
	c.order.MoveToFront(el)
	return a.value, a.code, true
}

// put remembers an answer until the given time.
func (c *answers[T]) put(key [sha256.Size]byte, value T, code int, until time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	a := &answer[T]{key: key, value: value, code: code, until: until}
	if el, ok := c.byKey[key]; ok {
		el.Value = a
		c.order.MoveToFront(el)
		return
	}
	for c.order.Len() >= c.size {
		oldest := c.order.Back()
		c.order.Remove(oldest)
		delete(c.byKey, oldest.Value.(*answer[T]).key)
	}
	c.byKey[key] = c.order.PushFront(a)
}

// len is the number of answers held.
func (c *answers[T]) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

// authenticate reviews token; 200 with the user when the API server
// accepts it.
func authenticate(ctx context.Context, cs kubernetes.Interface, token string) (authnv1.UserInfo, int, string) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	tr, err := cs.AuthenticationV1().TokenReviews().Create(ctx,
		&authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return authnv1.UserInfo{}, http.StatusServiceUnavailable, "token review: " + err.Error()
	}
	if !tr.Status.Authenticated {
		return authnv1.UserInfo{}, http.StatusUnauthorized, "token not authenticated"
	}
	return tr.Status.User, http.StatusOK, ""
}

// authorize asks whether u may do attrs; 200 when allowed.
func authorize(ctx context.Context, cs kubernetes.Interface, u authnv1.UserInfo, attrs authzv1.SubjectAccessReviewSpec) (int, string) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	extra := make(map[string]authzv1.ExtraValue, len(u.Extra))
	for k, v := range u.Extra {
		extra[k] = authzv1.ExtraValue(v)
	}
	attrs.User, attrs.UID, attrs.Groups, attrs.Extra = u.Username, u.UID, u.Groups, extra
	sar, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authzv1.SubjectAccessReview{Spec: attrs}, metav1.CreateOptions{})
	if err != nil {
		return http.StatusServiceUnavailable, "access review: " + err.Error()
	}
	if !sar.Status.Allowed {
		return http.StatusForbidden, "not allowed"
	}
	return http.StatusOK, ""
}
