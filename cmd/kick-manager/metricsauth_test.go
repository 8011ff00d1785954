package main

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	"k8s.io/client-go/rest"
)

// reviewEndpoint is a TokenReview and SubjectAccessReview endpoint on
// 127.0.0.1 that counts the reviews it answers: tokens starting with
// "good-" belong to alice (the rest of the token says which of her tokens),
// every other token is rejected, and alice may do everything. hold, when
// set, keeps each TokenReview waiting until it is closed.
type reviewEndpoint struct {
	srv          *httptest.Server
	tokenReviews atomic.Int64
	accessRevs   atomic.Int64
	fail         atomic.Bool
	hold         chan struct{}
	inFlight     chan struct{}
}

func newReviewEndpoint(t *testing.T) *reviewEndpoint {
	e := &reviewEndpoint{inFlight: make(chan struct{}, 100)}
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if strings.HasSuffix(r.URL.Path, "/tokenreviews") {
			e.tokenReviews.Add(1)
		}
		if e.fail.Load() {
			http.Error(w, "etcd is down", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.HasSuffix(r.URL.Path, "/tokenreviews"):
			if e.hold != nil {
				e.inFlight <- struct{}{}
				<-e.hold
			}
			var tr authnv1.TokenReview
			_ = json.Unmarshal(body, &tr)
			if strings.HasPrefix(tr.Spec.Token, "good-") {
				tr.Status = authnv1.TokenReviewStatus{Authenticated: true, User: authnv1.UserInfo{Username: "alice", Groups: []string{"system:authenticated"}}}
			}
			_ = json.NewEncoder(w).Encode(tr)
		case strings.HasSuffix(r.URL.Path, "/subjectaccessreviews"):
			e.accessRevs.Add(1)
			var sar authzv1.SubjectAccessReview
			_ = json.Unmarshal(body, &sar)
			sar.Status.Allowed = sar.Spec.User == "alice"
			_ = json.NewEncoder(w).Encode(sar)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(e.srv.Close)
	return e
}

// guardedMetrics serves a /metrics behind metricsAuth on 127.0.0.1, its
// reviews sent to e.
func guardedMetrics(t *testing.T, e *reviewEndpoint) string {
	t.Helper()
	// JSON, so the endpoint can read the reviews with encoding/json.
	filter, err := metricsAuth(&rest.Config{Host: e.srv.URL, ContentConfig: rest.ContentConfig{ContentType: "application/json"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h, err := filter(logr.Discard(), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "kick_up 1\n") }))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL + "/metrics"
}

func scrape(t *testing.T, url, authorization string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp
}

// TestTokenFloodIsLimited plays a pod that sends /metrics a new random
// token with every request: beyond the bucket it gets 429 with
// Retry-After, and the API server sees at most the bucket plus its refill
// in TokenReviews, however many requests arrive; a scraper whose answer is
// remembered keeps getting its metrics throughout.
func TestTokenFloodIsLimited(t *testing.T) {
	e := newReviewEndpoint(t)
	url := guardedMetrics(t, e)
	if resp := scrape(t, url, "Bearer good-scraper"); resp.StatusCode != http.StatusOK {
		t.Fatalf("the scraper: %d", resp.StatusCode)
	}
	before := e.tokenReviews.Load()
	start := time.Now()
	const flood = 500
	limited := 0
	for i := range flood {
		resp := scrape(t, url, fmt.Sprintf("Bearer random-%d", i))
		switch resp.StatusCode {
		case http.StatusTooManyRequests:
			limited++
			if resp.Header.Get("Retry-After") == "" {
				t.Fatal("429 without Retry-After")
			}
		case http.StatusUnauthorized:
		default:
			t.Fatalf("random token %d: %d", i, resp.StatusCode)
		}
		if i%50 == 0 {
			if resp := scrape(t, url, "Bearer good-scraper"); resp.StatusCode != http.StatusOK {
				t.Fatalf("the scraper during the flood: %d", resp.StatusCode)
			}
		}
	}
	reviews := e.tokenReviews.Load() - before
	allowed := int64(reviewBurst + reviewQPS*time.Since(start).Seconds() + 1)
	t.Logf("%d random tokens: %d TokenReviews, %d answered 429", flood, reviews, limited)
	if reviews > allowed || limited == 0 {
		t.Fatalf("%d random tokens cost %d TokenReviews (at most %d allowed), %d answered 429", flood, reviews, allowed, limited)
	}
}

// TestReviewConcurrencyIsLimited: while reviewConcurrency reviews wait for
// the API server, a further new token is answered 429 at once rather than
// adding to the queue.
func TestReviewConcurrencyIsLimited(t *testing.T) {
	e := newReviewEndpoint(t)
	e.hold = make(chan struct{})
	url := guardedMetrics(t, e)
	var wg sync.WaitGroup
	for i := range reviewConcurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			scrape(t, url, fmt.Sprintf("Bearer good-%d", i))
		}()
	}
	for range reviewConcurrency {
		<-e.inFlight
	}
	resp := scrape(t, url, "Bearer good-one-more")
	close(e.hold)
	wg.Wait()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a new token with %d reviews in flight: %d, want 429 with Retry-After", reviewConcurrency, resp.StatusCode)
	}
	if n := e.tokenReviews.Load(); n != reviewConcurrency {
		t.Fatalf("%d TokenReviews, want %d", n, reviewConcurrency)
	}
}

// TestReviewsAreRemembered: one token in different spellings (scheme case,
// spaces) costs one TokenReview; two tokens of one user share their
// SubjectAccessReview; a review that failed is not repeated at once.
func TestReviewsAreRemembered(t *testing.T) {
	e := newReviewEndpoint(t)
	url := guardedMetrics(t, e)
	for _, h := range []string{"Bearer good-a", "Bearer  good-a ", "bearer good-a", " Bearer good-a"} {
		if resp := scrape(t, url, h); resp.StatusCode != http.StatusOK {
			t.Fatalf("%q: %d", h, resp.StatusCode)
		}
	}
	if n := e.tokenReviews.Load(); n != 1 {
		t.Fatalf("one token in four spellings cost %d TokenReviews", n)
	}
	if resp := scrape(t, url, "Bearer good-b"); resp.StatusCode != http.StatusOK {
		t.Fatalf("alice's second token: %d", resp.StatusCode)
	}
	if n := e.accessRevs.Load(); n != 1 {
		t.Fatalf("two tokens of one user cost %d SubjectAccessReviews, want 1", n)
	}
	e.fail.Store(true)
	for range 3 {
		if resp := scrape(t, url, "Bearer good-c"); resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("with the API server failing: %d, want 503", resp.StatusCode)
		}
	}
	if n := e.tokenReviews.Load(); n != 3 {
		t.Fatalf("a failing review was repeated: %d TokenReviews, want 3", n)
	}
}

// TestAnswersEvictLeastRecentlyUsed: a full cache makes room by dropping
// the answer used longest ago, not by forgetting everything.
func TestAnswersEvictLeastRecentlyUsed(t *testing.T) {
	c := newAnswers[struct{}](3)
	key := func(s string) [sha256.Size]byte { return sha256.Sum256([]byte(s)) }
	now := time.Now()
	until := now.Add(time.Minute)
	for _, k := range []string{"a", "b", "c"} {
		c.put(key(k), struct{}{}, http.StatusOK, until)
	}
	if _, _, ok := c.get(key("a"), now); !ok {
		t.Fatal("a missing")
	}
	c.put(key("d"), struct{}{}, http.StatusOK, until)
	if _, _, ok := c.get(key("b"), now); ok {
		t.Fatal("b, the least recently used, was kept")
	}
	for _, k := range []string{"a", "c", "d"} {
		if _, _, ok := c.get(key(k), now); !ok {
			t.Fatalf("%s was dropped", k)
		}
	}
	if _, _, ok := c.get(key("a"), until); ok || c.len() != 2 {
		t.Fatalf("an expired answer was returned or kept (%d held)", c.len())
	}
}

// TestFloodingClientLeavesOthersRoom: a pod flooding /metrics with random
// tokens from one address uses up its own bucket, not the shared one: a
// caller from another address with a new valid token is let in at once.
func TestFloodingClientLeavesOthersRoom(t *testing.T) {
	e := newReviewEndpoint(t)
	url := guardedMetrics(t, e)
	for i := range 200 {
		scrape(t, url, fmt.Sprintf("Bearer random-%d", i))
	}
	if n := e.tokenReviews.Load(); n > perClientBurst+perClientQPS*2 {
		t.Fatalf("one client's flood cost %d TokenReviews", n)
	}
	// Another address: 127.0.0.2 is loopback too on Linux.
	other := &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}).DialContext}}
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer good-newcomer")
	resp, err := other.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("a new caller from another address during the flood: %d", resp.StatusCode)
	}
}
