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
	var cache reviewCache
	return func(log logr.Logger, next http.Handler) (http.Handler, error) {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			code, why := cache.get(r, func() (int, string) { return review(r.Context(), cs, r) })
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

// reviewCache remembers answers per token and path (the token only as a
// hash): a minute when allowed, 30 seconds when refused; reviews that
// failed are not kept. A scraper every 15 s costs the API server two
// reviews a minute, not eight.
type reviewCache struct {
	mu      sync.Mutex
	answers map[[sha256.Size]byte]cachedReview
}

type cachedReview struct {
	code  int
	until time.Time
}

func (c *reviewCache) get(r *http.Request, review func() (int, string)) (int, string) {
	key := sha256.Sum256([]byte(r.Header.Get("Authorization") + "\x00" + r.Method + "\x00" + r.URL.Path))
	now := time.Now()
	c.mu.Lock()
	if a, ok := c.answers[key]; ok && now.Before(a.until) {
		c.mu.Unlock()
		return a.code, ""
	}
	c.mu.Unlock()
	code, why := review()
	ttl := time.Minute
	switch code {
	case http.StatusOK:
	case http.StatusUnauthorized, http.StatusForbidden:
		ttl = 30 * time.Second
	default:
		return code, why
	}
	c.mu.Lock()
	if c.answers == nil || len(c.answers) >= 1024 {
		c.answers = map[[sha256.Size]byte]cachedReview{}
	}
	c.answers[key] = cachedReview{code: code, until: now.Add(ttl)}
	c.mu.Unlock()
	return code, why
}

// review authenticates and authorizes one request; 200 lets it through.
func review(ctx context.Context, cs kubernetes.Interface, r *http.Request) (int, string) {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || strings.TrimSpace(token) == "" {
		return http.StatusUnauthorized, "no bearer token"
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	tr, err := cs.AuthenticationV1().TokenReviews().Create(ctx,
		&authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: strings.TrimSpace(token)}}, metav1.CreateOptions{})
	if err != nil {
		return http.StatusServiceUnavailable, "token review: " + err.Error()
	}
	if !tr.Status.Authenticated {
		return http.StatusUnauthorized, "token not authenticated"
	}
	u := tr.Status.User
	extra := make(map[string]authzv1.ExtraValue, len(u.Extra))
	for k, v := range u.Extra {
		extra[k] = authzv1.ExtraValue(v)
	}
	sar, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
		User: u.Username, UID: u.UID, Groups: u.Groups, Extra: extra,
		NonResourceAttributes: &authzv1.NonResourceAttributes{Path: r.URL.Path, Verb: strings.ToLower(r.Method)},
	}}, metav1.CreateOptions{})
	if err != nil {
		return http.StatusServiceUnavailable, "access review: " + err.Error()
	}
	if !sar.Status.Allowed {
		return http.StatusForbidden, "not allowed"
	}
	return http.StatusOK, ""
}
