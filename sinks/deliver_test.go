package sinks

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"github.com/kick-operator/kick/sinks/sinkstest"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/router"
	"github.com/kick-operator/kick/sinks/format"
	"github.com/kick-operator/kick/sinks/signing"
)

// hit is one request a test receiver saw.
type hit struct {
	at     time.Time
	header http.Header
	body   []byte
}

// receiver is an httptest server answering with respond(n) for the n-th request (from 0).
type receiver struct {
	*httptest.Server
	mu   sync.Mutex
	hits []hit
}

func newReceiver(t *testing.T, respond func(n int, w http.ResponseWriter, r *http.Request)) *receiver {
	t.Helper()
	rc := &receiver{}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		n := len(rc.hits)
		rc.hits = append(rc.hits, hit{at: time.Now(), header: r.Header.Clone(), body: body})
		rc.mu.Unlock()
		respond(n, w, r)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) seen() []hit {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]hit(nil), rc.hits...)
}

func status(code int) func(int, http.ResponseWriter, *http.Request) {
	return func(_ int, w http.ResponseWriter, _ *http.Request) { w.WriteHeader(code) }
}

// verifyHMAC checks a Standard Webhooks signature without the signing package.
func verifyHMAC(t *testing.T, key []byte, h http.Header, body []byte) {
	t.Helper()
	id, ts, sig := h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature")
	if id == "" || ts == "" || sig == "" {
		t.Fatalf("signature headers missing: %v", h)
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id + "." + ts + "."))
	m.Write(body)
	want := "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
	if sig != want {
		t.Fatalf("webhook-signature %q, want %q", sig, want)
	}
	if unix, err := strconv.ParseInt(ts, 10, 64); err != nil || time.Since(time.Unix(unix, 0)) > time.Minute {
		t.Fatalf("webhook-timestamp %q is not the current unix time", ts)
	}
}

// TestDeliverSignsEveryFormat: events and fan-out summaries, in every format, are signed and
// carry the policy's headers and credentials.
func TestDeliverSignsEveryFormat(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	secrets := []*corev1.Secret{
		secret("sig", map[string]string{"key": "whsec_" + base64.StdEncoding.EncodeToString(key)}),
		secret("creds", map[string]string{"api": sentinel, "token": sentinel + "-bearer", "pd": "routing-key-1"}),
	}
	for _, c := range []struct {
		format kickv1alpha1.PayloadFormat
		mode   kickv1alpha1.CloudEventsMode
		phase  string
	}{
		{kickv1alpha1.FormatJSON, "", "Succeeded"},
		{kickv1alpha1.FormatCloudEvents, kickv1alpha1.CloudEventsStructured, "Succeeded"},
		{kickv1alpha1.FormatCloudEvents, kickv1alpha1.CloudEventsBinary, "Succeeded"},
		{kickv1alpha1.FormatSlack, "", "Failed"},
		{kickv1alpha1.FormatPagerDuty, "", "Failed"},
	} {
		t.Run(string(c.format)+string(c.mode), func(t *testing.T) {
			rc := newReceiver(t, status(http.StatusAccepted))
			p := policy(rc.URL+"/hook?token=abc", func(w *kickv1alpha1.WebhookSpec) {
				w.Format = c.format
				if c.mode != "" {
					w.CloudEvents = &kickv1alpha1.CloudEventsSpec{Mode: c.mode}
				}
				if c.format == kickv1alpha1.FormatPagerDuty {
					w.PagerDuty = &kickv1alpha1.PagerDutySpec{RoutingKey: *ref("creds", "pd")}
				}
				w.Signing = &kickv1alpha1.WebhookSigning{SecretRef: *ref("sig", "key")}
				w.Headers = []kickv1alpha1.WebhookHeader{{Name: "X-Api-Key", ValueFrom: ref("creds", "api")}, {Name: "X-Team", Value: ptr.To("shop")}}
				w.Auth = &kickv1alpha1.WebhookAuth{BearerToken: ref("creds", "token")}
			})
			cfg := mustBuild(t, p, nil, secrets[0], secrets[1])
			ev := phaseChanged(c.phase)
			// A fan-out summary is signed and authenticated like an event.
			sum := format.Summary{Policy: "uid-1", Namespace: testNS, SourceKind: "Secret", SourceName: "web-tls",
				ChangedAt: ev.Time, Workloads: 2, Succeeded: 1, Failed: 1, LastCompletion: ev.Time.Add(time.Minute), Time: ev.Time.Add(time.Minute)}
			for i, send := range []struct {
				id      string
				deliver func() outcome
			}{
				{format.EventID(ev), func() outcome { return cfg.deliver(context.Background(), ev) }},
				{sum.ID(), func() outcome { return cfg.deliverSummary(context.Background(), sum) }},
			} {
				out := send.deliver()
				if out.kind != outcomeSuccess || out.attempts != 1 {
					t.Fatalf("delivery %d: outcome %+v", i, out)
				}
				hits := rc.seen()
				if len(hits) != i+1 {
					t.Fatalf("%d requests after delivery %d", len(hits), i)
				}
				h := hits[i].header
				verifyHMAC(t, key, h, hits[i].body)
				if err := signing.Verify(secrets[0].Data["key"], h, hits[i].body, 0); err != nil {
					t.Fatalf("delivery %d: signing.Verify: %v", i, err)
				}
				if got := h.Get("webhook-id"); got != send.id {
					t.Errorf("delivery %d: webhook-id %q, want %q", i, got, send.id)
				}
				if h.Get("X-Api-Key") != sentinel || h.Get("X-Team") != "shop" || h.Get("Authorization") != "Bearer "+sentinel+"-bearer" {
					t.Errorf("delivery %d: headers not sent: %v", i, h)
				}
				if h.Get("Content-Type") == "" {
					t.Errorf("delivery %d: no Content-Type", i)
				}
			}
		})
	}
}

func TestDeliverRetriesWithSameID(t *testing.T) {
	key := "whsec_" + base64.StdEncoding.EncodeToString([]byte("k"))
	rc := newReceiver(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n < 2 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	p := policy(rc.URL, func(w *kickv1alpha1.WebhookSpec) {
		w.Signing = &kickv1alpha1.WebhookSigning{SecretRef: *ref("sig", "key")}
	})
	cfg := mustBuild(t, p, nil, secret("sig", map[string]string{"key": key}))
	out := cfg.deliver(context.Background(), phaseChanged("Succeeded"))
	if out.kind != outcomeSuccess || out.attempts != 3 {
		t.Fatalf("outcome %+v", out)
	}
	hits := rc.seen()
	for i, h := range hits {
		if h.header.Get("webhook-id") != hits[0].header.Get("webhook-id") {
			t.Errorf("attempt %d has another id", i)
		}
		if err := signing.Verify([]byte(key), h.header, h.body, 0); err != nil {
			t.Errorf("attempt %d: %v", i, err)
		}
	}
	if gap := hits[2].at.Sub(hits[1].at); gap < 2*cfg.backoffBase {
		t.Errorf("second retry after %v, want the doubled backoff %v", gap, 2*cfg.backoffBase)
	}
}

func TestDeliverGivesUpAfterThreeRetries(t *testing.T) {
	rc := newReceiver(t, status(http.StatusBadGateway))
	cfg := mustBuild(t, policy(rc.URL), nil)
	out := cfg.deliver(context.Background(), phaseChanged("Succeeded"))
	if out.kind != outcomeFailure || len(rc.seen()) != 1+maxRetries {
		t.Fatalf("outcome %+v after %d requests", out, len(rc.seen()))
	}
	if !strings.Contains(out.message, "502 Bad Gateway after 4 attempts") {
		t.Errorf("message %q", out.message)
	}
}

func TestDeliverNoRetryOnClientErrors(t *testing.T) {
	for _, code := range []int{400, 401, 403, 404, 422, 501} {
		rc := newReceiver(t, func(_ int, w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(code)
			// An endpoint that echoes the request: the token must not reach the status.
			_, _ = io.WriteString(w, "bad request, you sent "+r.Header.Get("Authorization"))
		})
		p := policy(rc.URL+"/path/"+sentinel, func(w *kickv1alpha1.WebhookSpec) {
			w.Auth = &kickv1alpha1.WebhookAuth{BearerToken: ref("tok", "t")}
		})
		cfg := mustBuild(t, p, nil, secret("tok", map[string]string{"t": sentinel}))
		out := cfg.deliver(context.Background(), phaseChanged("Succeeded"))
		if out.kind != outcomeFailure || out.attempts != 1 || len(rc.seen()) != 1 {
			t.Fatalf("%d: outcome %+v after %d requests", code, out, len(rc.seen()))
		}
		if !strings.Contains(out.message, strconv.Itoa(code)) || !strings.Contains(out.message, http.StatusText(code)) {
			t.Errorf("%d: message %q", code, out.message)
		}
		if strings.Contains(out.message, "you sent") {
			t.Errorf("%d: message quotes the response body: %q", code, out.message)
		}
		if strings.Contains(out.message, sentinel) {
			t.Errorf("%d: message leaks the token: %q", code, out.message)
		}
	}
}

func TestDeliverRetryAfter(t *testing.T) {
	rc := newReceiver(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n == 0 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	cfg := mustBuild(t, policy(rc.URL), nil)
	out := cfg.deliver(context.Background(), phaseChanged("Succeeded"))
	hits := rc.seen()
	if out.kind != outcomeSuccess || len(hits) != 2 {
		t.Fatalf("outcome %+v after %d requests", out, len(hits))
	}
	if gap := hits[1].at.Sub(hits[0].at); gap < time.Second {
		t.Fatalf("retried after %v, before Retry-After", gap)
	}
}

func TestDeliverRetryAfterBeyondTimeout(t *testing.T) {
	rc := newReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	// The attempt gives up at once rather than sleep: a Retry-After of 30s
	// is beyond the 20s the delivery may take. Ending before those 20s is
	// the proof (a generous margin, not a speed claim).
	cfg := mustBuild(t, policy(rc.URL, func(w *kickv1alpha1.WebhookSpec) { w.TimeoutSeconds = 20 }), nil)
	start := time.Now()
	out := cfg.deliver(context.Background(), phaseChanged("Succeeded"))
	if took := time.Since(start); out.kind != outcomeFailure || len(rc.seen()) != 1 || took >= 20*time.Second {
		t.Fatalf("outcome %+v after %d requests and %v", out, len(rc.seen()), took)
	}
	if !strings.Contains(out.message, "Retry-After") || !strings.Contains(out.message, "30s") {
		t.Errorf("message %q", out.message)
	}
}

func TestDeliverTimeout(t *testing.T) {
	release := make(chan struct{})
	rc := newReceiver(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	cfg := mustBuild(t, policy(rc.URL, func(w *kickv1alpha1.WebhookSpec) { w.TimeoutSeconds = 1 }), nil)
	start := time.Now()
	out := cfg.deliver(context.Background(), phaseChanged("Succeeded"))
	// It ends at its timeout: not before (a timer never fires early), and
	// not when the receiver lets go, which is only at the end of the test
	// (the minute is a generous deadline for a busy machine, not a limit).
	if took := time.Since(start); took < time.Second || took > time.Minute {
		t.Errorf("the delivery took %v with a 1s timeout", took)
	}
	if out.kind != outcomeFailure || !strings.Contains(out.message, "within 1s") {
		t.Fatalf("outcome %+v", out)
	}
}

func TestDeliverGone(t *testing.T) {
	rc := newReceiver(t, status(http.StatusGone))
	cfg := mustBuild(t, policy(rc.URL), nil)
	if out := cfg.deliver(context.Background(), phaseChanged("Succeeded")); out.kind != outcomeGone || len(rc.seen()) != 1 {
		t.Fatalf("outcome %+v after %d requests", out, len(rc.seen()))
	}
}

func TestDeliverCapsResponseBody(t *testing.T) {
	chunk := strings.Repeat("x", 1<<20)
	for _, code := range []int{http.StatusOK, http.StatusInternalServerError} {
		rc := newReceiver(t, func(_ int, w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(code)
			for i := 0; i < 50 && r.Context().Err() == nil; i++ { // 50 MB
				if _, err := io.WriteString(w, chunk); err != nil {
					return
				}
			}
		})
		p := policy(rc.URL, func(w *kickv1alpha1.WebhookSpec) { w.TimeoutSeconds = 5 })
		cfg := mustBuild(t, p, nil)
		cfg.client.RetryMax = 0
		out := cfg.deliver(context.Background(), phaseChanged("Succeeded"))
		want := outcomeSuccess
		if code != http.StatusOK {
			want = outcomeFailure
		}
		if out.kind != want || len(out.message) > maxMessage {
			t.Fatalf("%d: outcome %v, message of %d bytes", code, out.kind, len(out.message))
		}
	}
}

func TestDeliverDoesNotFollowRedirects(t *testing.T) {
	target := newReceiver(t, status(http.StatusOK))
	rc := newReceiver(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL, http.StatusTemporaryRedirect)
	})
	cfg := mustBuild(t, policy(rc.URL), nil)
	out := cfg.deliver(context.Background(), phaseChanged("Succeeded"))
	if out.kind != outcomeFailure || len(target.seen()) != 0 || !strings.Contains(out.message, "redirect") {
		t.Fatalf("outcome %+v, target hit %d times", out, len(target.seen()))
	}
}

func TestDeliverRefusedAtDial(t *testing.T) {
	rc := newReceiver(t, status(http.StatusOK))
	_, port, _ := net.SplitHostPort(rc.Listener.Addr().String())
	// A name, so only the dial-time check can catch it.
	cfg := mustBuild(t, policy("http://localhost:"+port+"/hook?token="+sentinel), denyLoopback())
	out := cfg.deliver(context.Background(), phaseChanged("Succeeded"))
	if out.kind != outcomeRefused || len(rc.seen()) != 0 || out.attempts != 1 {
		t.Fatalf("outcome %+v, receiver hit %d times", out, len(rc.seen()))
	}
	if !strings.Contains(out.message, "127.0.0.0/8") || strings.Contains(out.message, sentinel) || strings.Contains(out.message, "/hook") {
		t.Errorf("message %q", out.message)
	}
}

func TestDeliverNetworkErrorNamesHostOnly(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	cfg := mustBuild(t, policy("http://"+addr+"/services/T0/B0/"+sentinel+"?key="+sentinel), nil)
	out := cfg.deliver(context.Background(), phaseChanged("Succeeded"))
	if out.kind != outcomeFailure || out.attempts != 1+maxRetries {
		t.Fatalf("outcome %+v", out)
	}
	if strings.Contains(out.message, sentinel) || strings.Contains(out.message, "/services") || !strings.Contains(out.message, addr) {
		t.Errorf("message %q", out.message)
	}
}

func TestDeliverTLS(t *testing.T) {
	ca := sinkstest.NewCA(t)
	serverPair, _, _ := ca.Issue(t, false)
	_, clientCert, clientKey := ca.Issue(t, true)
	pool := ca.Pool()

	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.TLS.PeerCertificates) == 0 {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{serverPair}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // refused handshakes are expected
	srv.StartTLS()
	defer srv.Close()

	caSecret := secret("ca", map[string]string{"ca.crt": string(ca.PEM)})
	tlsSecret := secret("client", map[string]string{corev1.TLSCertKey: string(clientCert), corev1.TLSPrivateKeyKey: string(clientKey)})
	tlsSecret.Type = corev1.SecretTypeTLS

	mtls := policy(srv.URL, func(w *kickv1alpha1.WebhookSpec) {
		w.TLS = &kickv1alpha1.WebhookTLS{CABundle: ref("ca", "ca.crt"), ClientCertificate: &kickv1alpha1.TLSSecretRef{Name: "client"}}
	})
	if out := mustBuild(t, mtls, nil, caSecret, tlsSecret).deliver(context.Background(), phaseChanged("Succeeded")); out.kind != outcomeSuccess {
		t.Fatalf("mutual TLS: %+v", out)
	}
	// clientCertificate.key picks the certificate; tls.key stays the private key. Here tls.crt
	// belongs to another key, so only the named certificate makes a pair.
	_, otherCert, _ := ca.Issue(t, true)
	chainSecret := secret("client-chain", map[string]string{
		corev1.TLSCertKey: string(otherCert), "client.crt": string(clientCert), corev1.TLSPrivateKeyKey: string(clientKey),
	})
	chainSecret.Type = corev1.SecretTypeTLS
	byKey := policy(srv.URL, func(w *kickv1alpha1.WebhookSpec) {
		w.TLS = &kickv1alpha1.WebhookTLS{CABundle: ref("ca", "ca.crt"), ClientCertificate: &kickv1alpha1.TLSSecretRef{Name: "client-chain", Key: "client.crt"}}
	})
	if out := mustBuild(t, byKey, nil, caSecret, chainSecret).deliver(context.Background(), phaseChanged("Succeeded")); out.kind != outcomeSuccess {
		t.Fatalf("mutual TLS with clientCertificate.key: %+v", out)
	}
	byKey.Spec.Webhook.TLS.ClientCertificate.Key = "absent.crt"
	if _, prob := build(t, byKey, nil, nil, caSecret, chainSecret); prob == nil || prob.reason != reasonKeyNotFound || !strings.Contains(prob.message, `"absent.crt"`) {
		t.Fatalf("a missing clientCertificate.key: %+v", prob)
	}
	byKey.Spec.Webhook.TLS.ClientCertificate.Key = ""
	if _, prob := build(t, byKey, nil, nil, caSecret, chainSecret); prob == nil || prob.reason != ReasonInvalidSecret || !strings.Contains(prob.message, "tls.crt and tls.key") {
		t.Fatalf("the default tls.crt with another key: %+v", prob)
	}
	noCert := policy(srv.URL, func(w *kickv1alpha1.WebhookSpec) {
		w.TLS = &kickv1alpha1.WebhookTLS{CABundle: ref("ca", "ca.crt")}
	})
	if out := mustBuild(t, noCert, nil, caSecret).deliver(context.Background(), phaseChanged("Succeeded")); out.kind == outcomeSuccess {
		t.Fatal("delivered without the required client certificate")
	}
	noCA := policy(srv.URL)
	out := mustBuild(t, noCA, nil).deliver(context.Background(), phaseChanged("Succeeded"))
	if out.kind != outcomeFailure || out.attempts != 1 || !strings.Contains(out.message, "certificate") {
		t.Fatalf("unknown authority: %+v", out)
	}
}

func TestDeliverSkip(t *testing.T) {
	rc := newReceiver(t, status(http.StatusOK))
	p := policy(rc.URL, func(w *kickv1alpha1.WebhookSpec) {
		w.Format = kickv1alpha1.FormatPagerDuty
		w.PagerDuty = &kickv1alpha1.PagerDutySpec{RoutingKey: *ref("pd", "k")}
	})
	cfg := mustBuild(t, p, nil, secret("pd", map[string]string{"k": "rk"}))
	for _, ev := range []router.Event{phaseChanged("DryRun"), gateChanged(false), gateChanged(true)} {
		if out := cfg.deliver(context.Background(), ev); out.kind != outcomeSkipped || len(rc.seen()) != 0 {
			t.Fatalf("%s: outcome %+v", ev.Kind(), out)
		}
	}
}

// TestDeliverNeverQuotesResponse plays a tenant who points a policy at an internal service
// that answers errors with data: neither the body nor the reason phrase of the status line
// reaches the outcome (and so the status and Events); the code and its standard text do.
func TestDeliverNeverQuotesResponse(t *testing.T) {
	const leak = "AKIAEXAMPLELEAK-internal"
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(wait))
				buf := make([]byte, 64<<10)
				_, _ = c.Read(buf)
				body := `{"AccessKeyId":"` + leak + `"}`
				_, _ = io.WriteString(c, "HTTP/1.1 403 "+leak+"\r\nContent-Type: application/json\r\nContent-Length: "+
					strconv.Itoa(len(body))+"\r\nConnection: close\r\n\r\n"+body)
			}()
		}
	}()
	cfg := mustBuild(t, policy("http://"+l.Addr().String()+"/"), nil)
	out := cfg.deliver(context.Background(), phaseChanged("Failed"))
	if out.kind != outcomeFailure || out.status != http.StatusForbidden {
		t.Fatalf("outcome %+v", out)
	}
	if strings.Contains(out.message, "AKIA") || strings.Contains(out.message, "internal") {
		t.Errorf("message quotes the response: %q", out.message)
	}
	if !strings.Contains(out.message, "403 Forbidden") || !strings.Contains(out.message, "response body is not shown") {
		t.Errorf("message %q", out.message)
	}
}
