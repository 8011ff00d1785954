package sinks

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"testing"
	"time"
)

func TestRetryableStatus(t *testing.T) {
	for code, want := range map[int]bool{
		200: false, 301: false, 400: false, 401: false, 403: false, 404: false, 408: true,
		409: false, 410: false, 422: false, 429: true, 500: true, 501: false, 502: true,
		503: true, 504: true, 599: true,
	} {
		if got := retryableStatus(code); got != want {
			t.Errorf("retryableStatus(%d) = %v, want %v", code, got, want)
		}
	}
}

func TestRetryableError(t *testing.T) {
	wrap := func(err error) error {
		return &url.Error{Op: "Post", URL: "https://x", Err: &net.OpError{Op: "dial", Net: "tcp", Err: err}}
	}
	cases := map[string]struct {
		err  error
		want bool
	}{
		"connection refused": {wrap(errors.New("connect: connection refused")), true},
		"deadline":           {wrap(context.DeadlineExceeded), false},
		"canceled":           {context.Canceled, false},
		"guard":              {wrap(&RefusedError{Addr: netip.MustParseAddr("169.254.169.254")}), false},
		"unknown authority":  {&url.Error{Op: "Post", URL: "https://x", Err: x509.UnknownAuthorityError{}}, false},
		"hostname":           {&url.Error{Op: "Post", URL: "https://x", Err: x509.HostnameError{Host: "x"}}, false},
		"nil":                {nil, false},
	}
	for name, c := range cases {
		if got := retryableError(c.err); got != c.want {
			t.Errorf("%s: retryableError = %v, want %v", name, got, c.want)
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"1", time.Second, true},
		{" 120 ", 2 * time.Minute, true},
		{"0", 0, true},
		{"-3", 0, false},
		{"", 0, false},
		{"soon", 0, false},
		{"1.5", 0, false},
		{now.Add(30 * time.Second).Format(http.TimeFormat), 30 * time.Second, true},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0, true},
		{"Sun, 01 Mar 2026 12:00:10 GMT", 10 * time.Second, true},
		{"Sunday, 01-Mar-26 12:00:05 GMT", 5 * time.Second, true}, // RFC 850
		{"99999999999999999", time.Duration(1<<30) * time.Second, true},
	}
	for _, c := range cases {
		got, ok := parseRetryAfter(c.in, now)
		if got != c.want || ok != c.ok {
			t.Errorf("parseRetryAfter(%q) = %v, %v; want %v, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestRetryDelay(t *testing.T) {
	now := time.Now()
	resp := func(retryAfter string) *http.Response {
		r := &http.Response{Header: http.Header{}}
		if retryAfter != "" {
			r.Header.Set("Retry-After", retryAfter)
		}
		return r
	}
	base := 100 * time.Millisecond
	for i, want := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond} {
		if d, fromHeader := retryDelay(base, i, nil, now); d != want || fromHeader {
			t.Errorf("retry %d without response: %v, %v; want %v", i, d, fromHeader, want)
		}
		if d, _ := retryDelay(base, i, resp(""), now); d != want {
			t.Errorf("retry %d without Retry-After: %v; want %v", i, d, want)
		}
	}
	if d := backoffDelay(time.Second, 10); d != backoffMax {
		t.Errorf("backoff is not capped: %v", d)
	}
	if d := backoffDelay(0, 0); d != defaultBackoffBase {
		t.Errorf("default base: %v", d)
	}
	if d, fromHeader := retryDelay(base, 0, resp("2"), now); d != 2*time.Second || !fromHeader {
		t.Errorf("Retry-After 2: %v, %v", d, fromHeader)
	}
	if d, _ := retryDelay(base, 0, resp("3600"), now); d != retryAfterCap {
		t.Errorf("Retry-After 3600 not capped at %v: %v", retryAfterCap, d)
	}
	if d, _ := retryDelay(base, 0, resp(now.Add(time.Hour).UTC().Format(http.TimeFormat)), now); d != retryAfterCap {
		t.Errorf("a date an hour ahead is not capped: %v", d)
	}
}

// TestCheckRetry covers the decisions on the delivery's deadline and attempt count.
func TestCheckRetry(t *testing.T) {
	status := func(code int, retryAfter string) *http.Response {
		r := &http.Response{StatusCode: code, Header: http.Header{}}
		if retryAfter != "" {
			r.Header.Set("Retry-After", retryAfter)
		}
		return r
	}
	ctxWith := func(timeout time.Duration) (context.Context, *attempts, context.CancelFunc) {
		a := &attempts{backoffBase: 10 * time.Millisecond}
		ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), attemptsKey{}, a), timeout)
		return ctx, a, cancel
	}

	ctx, a, cancel := ctxWith(time.Minute)
	defer cancel()
	for i := 1; i <= maxRetries; i++ {
		if ok, err := checkRetry(ctx, status(503, ""), nil); !ok || err != nil {
			t.Fatalf("attempt %d: retry=%v err=%v", i, ok, err)
		}
	}
	if ok, _ := checkRetry(ctx, status(503, ""), nil); ok {
		t.Fatalf("retried after %d attempts", a.n)
	}

	ctx, _, cancel = ctxWith(time.Minute)
	defer cancel()
	if ok, _ := checkRetry(ctx, status(400, ""), nil); ok {
		t.Fatal("400 retried")
	}

	ctx, a, cancel = ctxWith(5 * time.Second)
	defer cancel()
	if ok, _ := checkRetry(ctx, status(429, "30"), nil); ok || a.giveUp == "" {
		t.Fatalf("Retry-After beyond the deadline: retry=%v giveUp=%q", ok, a.giveUp)
	}

	ctx, a, cancel = ctxWith(5 * time.Second)
	defer cancel()
	if ok, _ := checkRetry(ctx, status(503, "1"), nil); !ok || a.next != time.Second {
		t.Fatalf("Retry-After 1 within the deadline: retry=%v next=%v", ok, a.next)
	}
	req := (&http.Request{}).WithContext(ctx)
	if d := backoff(time.Millisecond, 0, 0, &http.Response{Request: req}); d != time.Second {
		t.Fatalf("backoff did not use the chosen wait: %v", d)
	}

	ctx, _, cancel = ctxWith(time.Minute)
	defer cancel()
	if ok, _ := checkRetry(ctx, nil, fmt.Errorf("wrapped: %w", &RefusedError{})); ok {
		t.Fatal("a refused destination was retried")
	}
	if ok, _ := checkRetry(ctx, nil, errors.New("connection reset by peer")); !ok {
		t.Fatal("a network error was not retried")
	}
}

func TestTLSAlertNotRetried(t *testing.T) {
	err := &url.Error{Op: "Post", URL: "https://x", Err: &net.OpError{Op: "remote error", Err: errors.New("tls: certificate required")}}
	if retryableError(err) {
		t.Fatal("a TLS alert from the endpoint was retried")
	}
}
