package main

import (
	"context"
	"crypto/sha256"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// metricsAuth is the filter in front of /metrics with --metrics-secure: the
// caller's bearer token must be one the API server authenticates
// (TokenReview), and that user must be allowed a get on the request's path
// (SubjectAccessReview, as for the API server's own /metrics). No token or a
// token the API server does not accept: 401; not allowed: 403; the reviews
// failing: 503. It needs only client-go, where controller-runtime's filter
// links the whole k8s.io/apiserver into the manager.
func metricsAuth(c *rest.Config, hc *http.Client) (metricsserver.Filter, error) {
	cs, err := kubernetes.NewForConfigAndClient(c, hc)
	if err != nil {
		return nil, err
	}
	rv := &reviewer{cs: cs}
	return func(log logr.Logger, next http.Handler) (http.Handler, error) {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			code, why := rv.check(r, authzv1.SubjectAccessReviewSpec{
				NonResourceAttributes: &authzv1.NonResourceAttributes{Path: r.URL.Path, Verb: strings.ToLower(r.Method)},
			})
			if code != http.StatusOK {
				if code == http.StatusServiceUnavailable {
					log.Info("cannot review a /metrics request", "error", why)
				}
				http.Error(w, http.StatusText(code), code)
				return
			}
			next.ServeHTTP(w, r)
		}), nil
	}, nil
}

// reviewer asks the API server who sent a request (TokenReview of its
// bearer token) and whether that user may do something
// (SubjectAccessReview), remembering both answers briefly.
type reviewer struct {
	cs    kubernetes.Interface
	users reviewCache[authnv1.UserInfo]
	votes reviewCache[struct{}]
}

// check authenticates r and authorizes attrs (without the user) for its
// caller: 200, 401, 403 or 503 with why.
func (rv *reviewer) check(r *http.Request, attrs authzv1.SubjectAccessReviewSpec) (int, string) {
	u, code, why := rv.user(r)
	if code != http.StatusOK {
		return code, why
	}
	return rv.allowed(r, u, attrs)
}

// user authenticates the bearer token of r.
func (rv *reviewer) user(r *http.Request) (authnv1.UserInfo, int, string) {
	return rv.users.get(r, "authn", func() (authnv1.UserInfo, int, string) {
		return authenticate(r.Context(), rv.cs, r)
	})
}

// allowed authorizes attrs for u, the authenticated caller of r.
func (rv *reviewer) allowed(r *http.Request, u authnv1.UserInfo, attrs authzv1.SubjectAccessReviewSpec) (int, string) {
	_, code, why := rv.votes.get(r, question(attrs), func() (struct{}, int, string) {
		code, why := authorize(r.Context(), rv.cs, u, attrs)
		return struct{}{}, code, why
	})
	return code, why
}

// question is the cache key of attrs.
func question(attrs authzv1.SubjectAccessReviewSpec) string {
	if a := attrs.NonResourceAttributes; a != nil {
		return a.Verb + " " + a.Path
	}
	if a := attrs.ResourceAttributes; a != nil {
		return a.Verb + " " + a.Resource + "." + a.Group + " " + a.Name + " in " + a.Namespace
	}
	return ""
}

// reviewCache remembers answers per token (only as a hash) and question:
// a minute when allowed, 30 seconds when refused; reviews that failed are
// not kept. A scraper every 15 s costs the API server two reviews a
// minute, not eight.
type reviewCache[T any] struct {
	mu      sync.Mutex
	answers map[[sha256.Size]byte]cachedReview[T]
}

type cachedReview[T any] struct {
	value T
	code  int
	until time.Time
}

func (c *reviewCache[T]) get(r *http.Request, question string, review func() (T, int, string)) (T, int, string) {
	key := sha256.Sum256([]byte(r.Header.Get("Authorization") + "\x00" + r.Method + "\x00" + question))
	now := time.Now()
	c.mu.Lock()
	if a, ok := c.answers[key]; ok && now.Before(a.until) {
		c.mu.Unlock()
		return a.value, a.code, ""
	}
	c.mu.Unlock()
	value, code, why := review()
	ttl := time.Minute
	switch code {
	case http.StatusOK:
	case http.StatusUnauthorized, http.StatusForbidden:
		ttl = 30 * time.Second
	default:
		return value, code, why
	}
	c.mu.Lock()
	if c.answers == nil || len(c.answers) >= 1024 {
		c.answers = map[[sha256.Size]byte]cachedReview[T]{}
	}
	c.answers[key] = cachedReview[T]{value: value, code: code, until: now.Add(ttl)}
	c.mu.Unlock()
	return value, code, why
}

// authenticate reviews the bearer token of r; 200 with the user when the
// API server accepts it.
func authenticate(ctx context.Context, cs kubernetes.Interface, r *http.Request) (authnv1.UserInfo, int, string) {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || strings.TrimSpace(token) == "" {
		return authnv1.UserInfo{}, http.StatusUnauthorized, "no bearer token"
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	tr, err := cs.AuthenticationV1().TokenReviews().Create(ctx,
		&authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: strings.TrimSpace(token)}}, metav1.CreateOptions{})
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
