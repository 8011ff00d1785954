package sinks

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"time"

	"github.com/hashicorp/go-retryablehttp"
)

// newTransport returns a policy's own keep-alive transport: proxies from the environment
// (HTTPS_PROXY, HTTP_PROXY, NO_PROXY), TLS 1.2 or newer with the policy's CA bundle and client
// certificate, and the destination guard on every dial. A request handed to a proxy has its
// host resolved and checked first (guard.proxyFunc); the dial to the proxy itself, whose address
// the operator chose, is not guarded. Use it through newRetryClient, which gives each request
// what the guard needs for that.
func newTransport(g *guard, tlsConfig *tls.Config) *http.Transport {
	if tlsConfig == nil {
		tlsConfig = &tls.Config{}
	}
	tlsConfig = tlsConfig.Clone()
	if tlsConfig.MinVersion < tls.VersionTLS12 {
		tlsConfig.MinVersion = tls.VersionTLS12
	}
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy:                  g.proxyFunc,
		DialContext:            g.dialContext(dialer),
		TLSClientConfig:        tlsConfig,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           4,
		MaxIdleConnsPerHost:    4,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    10 * time.Second,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: 64 << 10,
	}
}

// newRetryClient wraps a transport in go-retryablehttp with KICK's retry policy. It never logs
// (the library's logs would carry the URL) and never follows redirects (a redirect would carry
// the policy's credentials elsewhere); errors come back unchanged for deliver to describe.
func newRetryClient(t *http.Transport, backoffBase time.Duration) *retryablehttp.Client {
	return &retryablehttp.Client{
		HTTPClient: &http.Client{
			Transport:     guardedRoundTripper{t},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		Logger:       nil,
		RetryMax:     maxRetries,
		RetryWaitMin: backoffBase,
		RetryWaitMax: backoffMax,
		CheckRetry:   checkRetry,
		Backoff:      backoff,
		ErrorHandler: retryablehttp.PassthroughErrorHandler,
		PrepareRetry: prepareRetry,
	}
}

// attempts is the state of one delivery shared by the retry hooks, carried in the request's
// context (the hooks are client-wide). The hooks of one delivery run on one goroutine.
type attempts struct {
	n           int                      // attempts made so far
	backoffBase time.Duration            // wait before the first retry without Retry-After
	next        time.Duration            // wait chosen by checkRetry for the coming retry
	giveUp      string                   // why retrying stopped early, for the status
	sign        func(http.Header, int64) // adds signature headers for an attempt at a unix time; nil when not signing
}

type attemptsKey struct{}

func attemptsFrom(ctx context.Context) *attempts {
	a, _ := ctx.Value(attemptsKey{}).(*attempts)
	return a
}

// checkRetry decides after each attempt whether to try again: on transport errors worth it
// and on 408, 429 and 5xx other than 501, at most maxRetries times, and only if the wait fits
// in the delivery's deadline. A Retry-After that does not fit ends the delivery as a failure.
func checkRetry(ctx context.Context, resp *http.Response, err error) (bool, error) {
	a := attemptsFrom(ctx)
	if a == nil {
		a = &attempts{}
	}
	a.n++
	if ctxErr := ctx.Err(); ctxErr != nil {
		return false, ctxErr
	}
	switch {
	case err != nil:
		if !retryableError(err) {
			return false, nil
		}
	case !retryableStatus(resp.StatusCode):
		return false, nil
	}
	if a.n > maxRetries {
		return false, nil
	}
	now := time.Now()
	wait, fromHeader := retryDelay(a.backoffBase, a.n-1, resp, now)
	if deadline, ok := ctx.Deadline(); ok && now.Add(wait).After(deadline) {
		if fromHeader {
			a.giveUp = "it asked to retry after " + wait.String() + " (Retry-After), which does not fit in spec.webhook.timeoutSeconds"
		}
		return false, nil
	}
	a.next = wait
	return true, nil
}

// backoff returns the wait checkRetry chose; after a transport error (no response to find the
// delivery's state through) it recomputes the same backoff from the client's RetryWaitMin.
func backoff(base, _ time.Duration, attemptNum int, resp *http.Response) time.Duration {
	if resp != nil && resp.Request != nil {
		if a := attemptsFrom(resp.Request.Context()); a != nil && a.next > 0 {
			return a.next
		}
	}
	return backoffDelay(base, attemptNum)
}

// prepareRetry signs each retry anew with its own timestamp (the id stays the same).
func prepareRetry(req *http.Request) error {
	if a := attemptsFrom(req.Context()); a != nil && a.sign != nil {
		req.Header = req.Header.Clone()
		a.sign(req.Header, time.Now().Unix())
	}
	return nil
}
