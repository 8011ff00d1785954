package sinks

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hashicorp/go-retryablehttp"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/sinks/format"
	"github.com/kick-operator/kick/sinks/signing"
)

// Timeout bounds of spec.webhook.timeoutSeconds (the CRD enforces them too).
const (
	defaultTimeout = 10 * time.Second
	minTimeout     = time.Second
	maxTimeout     = 120 * time.Second
)

// deliveryConfig is everything one policy needs to send, built from its spec and Secrets. It is
// immutable once built; a change of spec or Secrets builds a new one, which keeps the old HTTP
// transport (and its idle connections) unless the TLS material changed.
type deliveryConfig struct {
	fingerprint    [sha256.Size]byte // spec and Secret values this config was built from
	tlsFingerprint [sha256.Size]byte // the part of it the transport depends on

	url       string
	host      string // the only part of the URL that is ever logged or shown
	method    string
	format    kickv1alpha1.PayloadFormat
	timeout   time.Duration
	formatter format.Formatter
	header    http.Header // static headers and Authorization, sent with every delivery
	signing   []byte      // Standard Webhooks secret, nil when not signing

	transport   *http.Transport
	client      *retryablehttp.Client
	backoffBase time.Duration
	scrub       scrubber
}

// buildConfig validates p's webhook and reads its Secrets. It returns either a config or the
// problems that prevent one (reason of the first, all messages); err is a failure to read from
// the API server. prev, the policy's current config, is returned unchanged when nothing it
// depends on changed, and lends its transport when the TLS material is the same.
func buildConfig(ctx context.Context, sr *secretReader, p *kickv1alpha1.NotificationPolicy, g *guard, prev *deliveryConfig) (*deliveryConfig, *problem, error) {
	w := p.Spec.Webhook
	var probs []problem
	u, urlProblem := checkURL(w.URL)
	if urlProblem != nil {
		probs = append(probs, *urlProblem)
	} else if err := g.checkHost(u.Hostname()); err != nil {
		probs = append(probs, problem{ReasonDestinationRefused, "spec.webhook.url points at a refused address: " + err.Error() + refusedHint})
	}

	c := &deliveryConfig{
		method:      string(w.Method),
		format:      w.Format,
		timeout:     defaultTimeout,
		header:      make(http.Header),
		backoffBase: defaultBackoffBase,
	}
	if c.method == "" {
		c.method = http.MethodPost
	}
	if c.format == "" {
		c.format = kickv1alpha1.FormatJSON
	}
	if w.TimeoutSeconds > 0 {
		c.timeout = min(max(time.Duration(w.TimeoutSeconds)*time.Second, minTimeout), maxTimeout)
	}

	// Secrets, in the order of the spec, so messages are stable.
	var secretValues []string
	for _, h := range w.Headers {
		switch {
		case h.ValueFrom != nil:
			v, ok, err := sr.headerValue(ctx, fmt.Sprintf("spec.webhook.headers[%s].valueFrom", h.Name), *h.ValueFrom)
			if err != nil {
				return nil, nil, err
			}
			if ok {
				c.header.Set(h.Name, v)
			}
		case h.Value != nil:
			c.header.Set(h.Name, *h.Value)
			if len(*h.Value) >= minPublicLen { // not secret, but never shown either
				secretValues = append(secretValues, *h.Value)
			}
		}
	}
	if a := w.Auth; a != nil {
		switch {
		case a.BearerToken != nil:
			tok, ok, err := sr.headerValue(ctx, "spec.webhook.auth.bearerToken", *a.BearerToken)
			if err != nil {
				return nil, nil, err
			}
			if ok {
				c.header.Set("Authorization", "Bearer "+tok)
			}
		case a.Basic != nil:
			user, uok, err := sr.headerValue(ctx, "spec.webhook.auth.basic.username", a.Basic.Username)
			if err != nil {
				return nil, nil, err
			}
			pass, pok, err := sr.headerValue(ctx, "spec.webhook.auth.basic.password", a.Basic.Password)
			if err != nil {
				return nil, nil, err
			}
			if uok && pok {
				c.header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(user+":"+pass)))
			}
		}
	}
	mark := len(sr.values)
	tlsConfig, err := buildTLS(ctx, sr, w.TLS)
	if err != nil {
		return nil, nil, err
	}
	tlsSum := sha256.New()
	for _, v := range sr.values[mark:] { // the CA bundle and client certificate
		fmt.Fprintf(tlsSum, "%d\x00", len(v))
		tlsSum.Write([]byte(v))
	}
	var routingKey string
	if w.PagerDuty != nil {
		v, ok, err := sr.value(ctx, "spec.webhook.pagerDuty.routingKey", w.PagerDuty.RoutingKey)
		if err != nil {
			return nil, nil, err
		}
		if ok {
			routingKey = strings.TrimSpace(string(v))
			if routingKey == "" {
				sr.add(ReasonInvalidSecret, "the PagerDuty routing key in Secret %q key %q is empty", w.PagerDuty.RoutingKey.Name, w.PagerDuty.RoutingKey.Key)
			}
		}
	}
	if s := w.Signing; s != nil {
		v, ok, err := sr.value(ctx, "spec.webhook.signing.secretRef", s.SecretRef)
		if err != nil {
			return nil, nil, err
		}
		if ok {
			if _, kerr := signing.Key(v); kerr != nil {
				sr.add(ReasonInvalidSecret, "Secret %q key %q is not a usable signing secret: %v", s.SecretRef.Name, s.SecretRef.Key, kerr)
			} else {
				c.signing = v
			}
		}
	}
	probs = append(probs, sr.problems...)
	if len(probs) == 0 {
		f, ferr := format.New(w, routingKey)
		if ferr != nil {
			probs = append(probs, problem{ReasonInvalidSpec, "spec.webhook: " + ferr.Error()})
		} else {
			c.formatter = f
		}
	}
	secretValues = append(secretValues, c.header.Values("Authorization")...)
	if u != nil {
		secretValues = append(secretValues, urlSecrets(u)...)
	}
	c.scrub = newScrubber(append(secretValues, sr.values...)...)
	if len(probs) > 0 {
		return nil, joinProblems(c.scrub, probs), nil
	}
	c.url, c.host = w.URL, u.Host

	// The fingerprint covers the spec's webhook and every value read; the spec's other fields
	// (phases, selector, suspend) do not affect delivery.
	spec, _ := json.Marshal(w)
	sum := sha256.New()
	sum.Write(spec)
	sum.Write(sr.sum.Sum(nil))
	copy(c.fingerprint[:], sum.Sum(nil))
	copy(c.tlsFingerprint[:], tlsSum.Sum(nil))
	if prev != nil && prev.fingerprint == c.fingerprint {
		return prev, nil, nil
	}
	if prev != nil && prev.tlsFingerprint == c.tlsFingerprint {
		c.transport, c.client = prev.transport, prev.client
	} else {
		c.transport = newTransport(g, tlsConfig)
		c.client = newRetryClient(c.transport, c.backoffBase)
	}
	return c, nil, nil
}

// checkURL parses spec.webhook.url. Messages never repeat the URL: its path or query may hold a
// token.
func checkURL(raw string) (*url.URL, *problem) {
	bad := func(why string) (*url.URL, *problem) {
		return nil, &problem{ReasonInvalidURL, "spec.webhook.url " + why}
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return bad("does not parse as a URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return bad("must start with http:// or https://")
	case u.Host == "" || u.Hostname() == "":
		return bad("has no host")
	case u.User != nil:
		return bad("must not carry credentials (user:password@); use spec.webhook.auth")
	}
	return u, nil
}

// minPublicLen is the shortest literal header value or URL part a scrubber replaces: shorter
// ones ("/", "1", "v2") are not credentials and would garble messages.
const minPublicLen = 6

// urlSecrets are the parts of the endpoint URL that may hold a token (Slack and many other
// services put it in the path, some in the query), so an endpoint that echoes its request
// line cannot bring them into a status message.
func urlSecrets(u *url.URL) []string {
	var out []string
	add := func(v string) {
		if len(v) >= minPublicLen {
			out = append(out, v)
		}
	}
	add(u.RequestURI())
	add(u.EscapedPath())
	add(u.RawQuery)
	for _, vs := range u.Query() {
		for _, v := range vs {
			add(v)
		}
	}
	for _, seg := range strings.Split(u.Path, "/") {
		add(seg)
	}
	return out
}

// joinProblems reports the first problem's reason with every message.
func joinProblems(s scrubber, probs []problem) *problem {
	msgs := make([]string, len(probs))
	for i, p := range probs {
		msgs[i] = p.message
	}
	return &problem{reason: probs[0].reason, message: s.clean(strings.Join(msgs, "; "))}
}
