package sinks

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Retry policy of one delivery: the first attempt plus up to maxRetries retries, all within the
// policy's timeoutSeconds.
const (
	maxRetries = 3
	// retryAfterCap bounds how long a Retry-After header can make a delivery wait.
	retryAfterCap = 60 * time.Second
	// defaultBackoffBase is the wait before the first retry when the endpoint gives no
	// Retry-After; it doubles for each further retry, up to backoffMax.
	defaultBackoffBase = 500 * time.Millisecond
	backoffMax         = 8 * time.Second
)

// retryableStatus reports whether a response status is worth another attempt: request timeout,
// too many requests, and server errors other than 501 Not Implemented.
func retryableStatus(code int) bool {
	switch {
	case code == http.StatusRequestTimeout, code == http.StatusTooManyRequests:
		return true
	case code == http.StatusNotImplemented:
		return false
	case code >= 500 && code <= 599:
		return true
	}
	return false
}

// retryableError reports whether a transport error is worth another attempt. Errors that would
// repeat identically (a refused destination, a certificate that does not verify) and the end
// of the delivery's deadline are not.
func retryableError(err error) bool {
	var (
		refused *RefusedError
		verify  *tls.CertificateVerificationError
		unknown x509.UnknownAuthorityError
		invalid x509.CertificateInvalidError
		host    x509.HostnameError
	)
	switch {
	case err == nil:
		return false
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return false
	case errors.As(err, &refused), errors.As(err, &verify), errors.As(err, &unknown),
		errors.As(err, &invalid), errors.As(err, &host):
		return false
	}
	// A TLS alert from the endpoint (for example "certificate required") repeats on every try.
	var op *net.OpError
	return !errors.As(err, &op) || op.Op != "remote error"
}

// parseRetryAfter reads a Retry-After value: delay seconds or an HTTP date. A date in the past
// means no wait.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		const limit = 1 << 30 // about 34 years: keeps the multiplication from overflowing
		return time.Duration(min(secs, limit)) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return max(t.Sub(now), 0), true
}

// backoffDelay is the wait before retry number retry (0 for the first retry) when the endpoint
// did not say: base, doubled per retry, at most backoffMax.
func backoffDelay(base time.Duration, retry int) time.Duration {
	if base <= 0 {
		base = defaultBackoffBase
	}
	d := base
	for i := 0; i < retry && d < backoffMax; i++ {
		d *= 2
	}
	return min(d, backoffMax)
}

// retryDelay is the wait before retry number retry after resp (nil after a transport error).
// A Retry-After header wins over the backoff, capped at retryAfterCap; the second result
// reports whether the header decided.
func retryDelay(base time.Duration, retry int, resp *http.Response, now time.Time) (time.Duration, bool) {
	if resp != nil {
		if d, ok := parseRetryAfter(resp.Header.Get("Retry-After"), now); ok {
			return min(d, retryAfterCap), true
		}
	}
	return backoffDelay(base, retry), false
}
