package sinks

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/kick-operator/kick/router"
	"github.com/kick-operator/kick/sinks/format"
	"github.com/kick-operator/kick/sinks/signing"
)

// maxResponseBody is how much of a response body is read (and discarded: a body is never
// shown, since an endpoint, or whatever a tenant pointed the policy at, chooses what it says);
// the rest is discarded with the connection.
const maxResponseBody = 64 << 10

// userAgent identifies KICK's deliveries.
const userAgent = "kick-notifications/v1alpha1"

// outcomeKind classifies one delivery.
type outcomeKind int

const (
	outcomeSkipped  outcomeKind = iota // the format had nothing to send
	outcomeSuccess                     // a 2xx answer
	outcomeFailure                     // anything else, after the retries
	outcomeRefused                     // the destination guard refused the address
	outcomeGone                        // a 410 answer: stop until the spec changes
	outcomeCanceled                    // the manager is stopping
)

// outcome is the result of one delivery. message is for status and logs: it names the host
// only and is scrubbed of secret values.
type outcome struct {
	kind     outcomeKind
	message  string
	attempts int
	status   int // the last HTTP status, 0 without one
}

// deliver sends ev (a phase or gate change) with every retry allowed, all within the policy's
// timeout, and describes how it went. Every attempt carries the same event id; with signing,
// each is signed with its own timestamp.
func (c *deliveryConfig) deliver(ctx context.Context, ev router.Event) outcome {
	msg, err := c.formatter.Format(ev)
	return c.send(ctx, msg, err, format.EventID(ev))
}

// deliverSummary sends a fan-out summary as deliver sends an event, with the summary's id.
func (c *deliveryConfig) deliverSummary(ctx context.Context, s format.Summary) outcome {
	msg, err := c.formatter.Summarize(s)
	return c.send(ctx, msg, err, s.ID())
}

// send delivers msg, rendered with error err, under the delivery id.
func (c *deliveryConfig) send(ctx context.Context, msg format.Message, err error, id string) outcome {
	if errors.Is(err, format.ErrSkip) {
		return outcome{kind: outcomeSkipped}
	}
	if err != nil {
		return c.failed(outcome{}, "could not render the %s payload: %v", c.format, err)
	}

	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	a := &attempts{backoffBase: c.backoffBase}
	if c.signing != nil {
		secret, body := c.signing, msg.Body
		a.sign = func(h http.Header, unix int64) {
			for k, v := range signing.Sign(secret, id, time.Unix(unix, 0), body) {
				h[k] = v
			}
		}
	}
	ctx = context.WithValue(ctx, attemptsKey{}, a)
	req, err := retryablehttp.NewRequestWithContext(ctx, c.method, c.url, msg.Body)
	if err != nil {
		return c.failed(outcome{}, "could not build the request: %v", err)
	}
	req.Header = c.headers(msg.Header, id)
	if a.sign != nil {
		a.sign(req.Header, time.Now().Unix())
	}

	resp, err := c.client.Do(req)
	out := outcome{attempts: max(a.n, 1)}
	if resp != nil {
		defer resp.Body.Close()
		out.status = resp.StatusCode
	}
	switch {
	case a.giveUp != "":
		return c.failed(out, "%s answered HTTP %s; %s", c.host, statusText(resp), a.giveUp)
	case err != nil:
		return c.transportError(ctx, out, err)
	}
	// Read what is small enough to keep the connection; never look at it.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponseBody))
	switch code := resp.StatusCode; {
	case code >= 200 && code <= 299:
		out.kind = outcomeSuccess
		return out
	case code == http.StatusGone:
		out.kind, out.message = outcomeGone, c.scrub.clean(goneMessage+" ("+c.host+")")
		return out
	case code >= 300 && code <= 399:
		return c.failed(out, "%s answered HTTP %s, a redirect; KICK does not follow redirects, point spec.webhook.url at the final address", c.host, statusText(resp))
	}
	// The status code and its standard text only: the response body and reason phrase are the
	// endpoint's words, and a tenant could point a policy at something that answers with data
	// it should not see.
	text := fmt.Sprintf("%s answered HTTP %s", c.host, statusText(resp))
	if out.attempts > 1 {
		text += fmt.Sprintf(" after %d attempts", out.attempts)
	}
	return c.failed(out, "%s (the response body is not shown)", text)
}

// headers assembles one delivery's headers: the format's, the policy's static headers and
// Authorization, then KICK's own, which the policy cannot override.
func (c *deliveryConfig) headers(formatHeader http.Header, id string) http.Header {
	h := make(http.Header, len(formatHeader)+len(c.header)+4)
	for k, v := range formatHeader {
		h[k] = append([]string(nil), v...)
	}
	for k, v := range c.header {
		h[k] = append([]string(nil), v...)
	}
	h.Set("User-Agent", userAgent)
	h.Set(signing.HeaderID, id)
	return h
}

// transportError describes a delivery that ended without a usable response.
func (c *deliveryConfig) transportError(ctx context.Context, out outcome, err error) outcome {
	var refused *RefusedError
	switch {
	case errors.As(err, &refused):
		out.kind, out.message = outcomeRefused, c.scrub.clean("connecting to "+c.host+" was refused: "+refused.Error()+refusedHint)
		return out
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded):
		return c.failed(out, "no answer from %s within %s (spec.webhook.timeoutSeconds) after %d attempt(s)", c.host, c.timeout, out.attempts)
	case errors.Is(err, context.Canceled):
		out.kind, out.message = outcomeCanceled, "canceled"
		return out
	}
	var uerr *url.Error
	if errors.As(err, &uerr) {
		err = uerr.Err // its text quotes the whole URL
	}
	return c.failed(out, "sending to %s failed after %d attempt(s): %v", c.host, out.attempts, err)
}

func (c *deliveryConfig) failed(out outcome, format string, args ...any) outcome {
	out.kind = outcomeFailure
	out.message = c.scrub.clean(fmt.Sprintf(format, args...))
	return out
}

func statusText(resp *http.Response) string {
	if resp == nil {
		return "?"
	}
	if t := http.StatusText(resp.StatusCode); t != "" {
		return fmt.Sprintf("%d %s", resp.StatusCode, t)
	}
	return fmt.Sprint(resp.StatusCode)
}
