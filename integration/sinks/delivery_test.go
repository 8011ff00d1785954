package sinks

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"github.com/kick-operator/kick/sinks/sinkstest"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/router"
	"github.com/kick-operator/kick/sinks"
	"github.com/kick-operator/kick/sinks/format"
)

// TestJSONDelivery: the json receiver gets exactly the documented fields, the policy's headers
// and token, and the event id; status and metrics count the delivery.
func TestJSONDelivery(t *testing.T) {
	h := start(t, nil)
	rc := newReceiver(t, nil)
	h.secret("creds", corev1.SecretTypeOpaque, map[string]string{"api-key": sentinel + "-key", "token": sentinel + "-token\n"})
	spec := webhook(rc.URL + "/hook")
	spec.Webhook.Headers = []kickv1alpha1.WebhookHeader{
		{Name: "X-Team", Value: ptr.To("shop")},
		{Name: "X-Api-Key", ValueFrom: ref("creds", "api-key")},
	}
	spec.Webhook.Auth = &kickv1alpha1.WebhookAuth{BearerToken: ref("creds", "token")}
	h.policy("json", spec)
	h.ready("json", metav1.ConditionTrue, kickv1alpha1.ReasonValid, "json", strings.TrimPrefix(rc.URL, "http://"))

	ev := h.event(kickv1alpha1.PhaseSucceeded, map[string]string{"app": "web"})
	h.publish(ev)
	got := rc.waitFor(t, "/hook", 1)[0]

	var doc map[string]any
	if err := json.Unmarshal(got.body, &doc); err != nil {
		t.Fatalf("body %s: %v", got.body, err)
	}
	var keys []string
	for k := range doc {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if want := "gitOpsProvider,message,namespace,occurredAt,phase,reason,requestName,targetKind,targetName"; strings.Join(keys, ",") != want {
		t.Errorf("fields %v, want %s", keys, want)
	}
	want := map[string]any{
		"namespace": h.ns, "requestName": ev.Request.Name, "phase": "Succeeded", "reason": "RestartCompleted",
		"targetKind": "Deployment", "targetName": "web", "gitOpsProvider": "flux",
		"occurredAt": ev.Time.UTC().Format(time.RFC3339),
	}
	for k, v := range want {
		if doc[k] != v {
			t.Errorf("%s = %v, want %v", k, doc[k], v)
		}
	}
	if !strings.Contains(doc["message"].(string), "db password rotated") {
		t.Errorf("message %q lacks the requester's reason", doc["message"])
	}
	hd := got.header
	if hd.Get("Content-Type") != "application/json" || hd.Get("X-Team") != "shop" ||
		hd.Get("X-Api-Key") != sentinel+"-key" || hd.Get("Authorization") != "Bearer "+sentinel+"-token" {
		t.Errorf("headers %v", hd)
	}
	if hd.Get("webhook-id") != format.EventID(ev) {
		t.Errorf("webhook-id %q, want %q", hd.Get("webhook-id"), format.EventID(ev))
	}

	p := h.counts("json", 1, 0, 0)
	if p.Status.LastDeliveryTime == nil || p.Status.LastError != "" {
		t.Errorf("status %+v", p.Status)
	}
	if got := h.deliveries("json", "success"); got != 1 {
		t.Errorf("kick_notification_deliveries_total{outcome=success} = %v", got)
	}
}

// TestCloudEventsReceiver: a receiver built with the CloudEvents SDK accepts the events in
// structured and binary mode.
func TestCloudEventsReceiver(t *testing.T) {
	h := start(t, nil)
	for _, mode := range []kickv1alpha1.CloudEventsMode{kickv1alpha1.CloudEventsStructured, kickv1alpha1.CloudEventsBinary} {
		url, got := ceReceiver(t)
		name := "ce-" + string(mode)
		spec := webhook(url)
		spec.Webhook.Format = kickv1alpha1.FormatCloudEvents
		spec.Webhook.CloudEvents = &kickv1alpha1.CloudEventsSpec{Mode: mode}
		h.policy(name, spec)
		h.ready(name, metav1.ConditionTrue, kickv1alpha1.ReasonValid)

		ev := h.event(kickv1alpha1.PhaseFailed, nil)
		ev.Outcome, ev.OutcomeMessage = "RolloutTimeout", "rollout did not finish in 15m"
		h.publish(ev)
		e := nextCloudEvent(t, got)
		if err := e.Validate(); err != nil {
			t.Errorf("%s: invalid event: %v", mode, err)
		}
		if e.ID() != format.EventID(ev) || e.Type() != format.CloudEventType("Failed") ||
			e.Source() != format.CloudEventSource(h.ns, ev.Request.Name) || e.Subject() != "Deployment/web" {
			t.Errorf("%s: attributes %s", mode, e)
		}
		var payload format.Payload
		if err := e.DataAs(&payload); err != nil || payload.RequestName != ev.Request.Name || payload.Reason != "RolloutTimeout" {
			t.Errorf("%s: data %+v (%v)", mode, payload, err)
		}
		h.counts(name, 1, 0, 0)
		// The next policy is created in the same namespace: it must not receive this event.
		h.update(name, func(s *kickv1alpha1.NotificationPolicySpec) { s.Suspend = true })
		h.ready(name, metav1.ConditionTrue, kickv1alpha1.ReasonSuspended)
	}
}

// ceReceiver is a CloudEvents receiver built with the SDK on 127.0.0.1, running until the test
// ends; it returns its URL and the events it accepted.
func ceReceiver(t *testing.T) (string, <-chan cloudevents.Event) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c, err := cloudevents.NewClientHTTP(cehttp.WithListener(l))
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan cloudevents.Event, 8)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = c.StartReceiver(ctx, func(e cloudevents.Event) { got <- e })
	}()
	t.Cleanup(func() { cancel(); <-done })
	return "http://" + l.Addr().String() + "/", got
}

// nextCloudEvent waits for the next event a ceReceiver accepted.
func nextCloudEvent(t *testing.T, got <-chan cloudevents.Event) cloudevents.Event {
	t.Helper()
	select {
	case e := <-got:
		return e
	case <-time.After(wait):
		t.Fatal("no CloudEvent received")
		return cloudevents.Event{}
	}
}

// hmacOK checks a Standard Webhooks signature independently of the signing package.
func hmacOK(key []byte, hd http.Header, body []byte) bool {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(hd.Get("webhook-id") + "." + hd.Get("webhook-timestamp") + "."))
	m.Write(body)
	return hd.Get("webhook-signature") == "v1,"+base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// TestRetryAfterSigned: a 503 with Retry-After: 1 is retried no sooner than a second later,
// with the same event id, and each attempt is signed with its own timestamp.
func TestRetryAfterSigned(t *testing.T) {
	h := start(t, nil)
	rc := newReceiver(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n == 0 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	key := []byte("kick-integration-signing-key-" + sentinel)
	h.secret("signing", corev1.SecretTypeOpaque, map[string]string{"secret": "whsec_" + base64.StdEncoding.EncodeToString(key)})
	spec := webhook(rc.URL)
	spec.Webhook.Signing = &kickv1alpha1.WebhookSigning{SecretRef: *ref("signing", "secret")}
	h.policy("signed", spec)
	h.ready("signed", metav1.ConditionTrue, kickv1alpha1.ReasonValid)

	ev := h.event(kickv1alpha1.PhaseSucceeded, nil)
	h.publish(ev)
	hits := rc.waitFor(t, "/", 2)
	if gap := hits[1].at.Sub(hits[0].at); gap < time.Second {
		t.Errorf("retried after %v, before Retry-After", gap)
	}
	for i, hit := range hits {
		if id := hit.header.Get("webhook-id"); id != format.EventID(ev) {
			t.Errorf("attempt %d: webhook-id %q, want %q", i, id, format.EventID(ev))
		}
		if !hmacOK(key, hit.header, hit.body) {
			t.Errorf("attempt %d: the signature does not verify", i)
		}
	}
	ts0, _ := strconv.ParseInt(hits[0].header.Get("webhook-timestamp"), 10, 64)
	ts1, _ := strconv.ParseInt(hits[1].header.Get("webhook-timestamp"), 10, 64)
	if ts1 < ts0+1 {
		t.Errorf("the retry kept the first timestamp: %d then %d", ts0, ts1)
	}
	h.counts("signed", 1, 0, 0)
}

// TestClientErrorNotRetried: a 400 is not retried and is counted as a failure.
func TestClientErrorNotRetried(t *testing.T) {
	h := start(t, nil)
	rc := newReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "unknown channel", http.StatusBadRequest)
	})
	h.policy("bad", webhook(rc.URL))
	h.ready("bad", metav1.ConditionTrue, kickv1alpha1.ReasonValid)
	h.publish(h.event(kickv1alpha1.PhaseSucceeded, nil))
	p := h.counts("bad", 0, 1, 0)
	if n := len(rc.seen()); n != 1 {
		t.Errorf("%d attempts for a 400", n)
	}
	if !strings.Contains(p.Status.LastError, "400 Bad Request") || strings.Contains(p.Status.LastError, "unknown channel") {
		t.Errorf("lastError %q (the status code, never the response body)", p.Status.LastError)
	}
	if got := h.deliveries("bad", "failure"); got != 1 {
		t.Errorf("kick_notification_deliveries_total{outcome=failure} = %v", got)
	}
}

// TestGoneStopsDelivery: a 410 stops delivery and says so until the spec changes.
func TestGoneStopsDelivery(t *testing.T) {
	h := start(t, nil)
	var gone atomic.Bool
	gone.Store(true)
	rc := newReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		if gone.Load() {
			w.WriteHeader(http.StatusGone)
		}
	})
	h.policy("gone", webhook(rc.URL))
	h.ready("gone", metav1.ConditionTrue, kickv1alpha1.ReasonValid)
	h.publish(h.event(kickv1alpha1.PhaseSucceeded, nil))
	h.ready("gone", metav1.ConditionFalse, "Gone", "the endpoint answered 410 Gone; delivery stopped until the spec changes")

	h.publish(h.event(kickv1alpha1.PhaseSucceeded, nil))
	h.counts("gone", 0, 2, 0) // the second is counted without being sent
	if n := len(rc.seen()); n != 1 {
		t.Fatalf("%d requests after 410", n)
	}

	gone.Store(false)
	h.update("gone", func(s *kickv1alpha1.NotificationPolicySpec) { s.Webhook.TimeoutSeconds = 5 })
	h.ready("gone", metav1.ConditionTrue, kickv1alpha1.ReasonValid)
	ev := h.event(kickv1alpha1.PhaseSucceeded, nil)
	h.publish(ev)
	if got := rc.waitFor(t, "/", 2)[1].requestName(); got != ev.Request.Name {
		t.Errorf("delivered %s after the spec change, want %s", got, ev.Request.Name)
	}
	h.counts("gone", 1, 2, 0)
}

// TestSlowEndpointIsolated: an endpoint that hangs does not delay another
// policy. Proven by order, not by a clock: every event reaches the fast
// endpoint while the slow endpoint still holds the first request (its
// handler returns only when the test lets it go, and the slow policy's
// timeout is the longest allowed, so the slow delivery cannot have ended
// on its own in between).
func TestSlowEndpointIsolated(t *testing.T) {
	h := start(t, nil)
	release := make(chan struct{})
	var hanging atomic.Int32 // slow requests whose handler has not returned
	slow := newReceiver(t, func(_ int, _ http.ResponseWriter, r *http.Request) {
		hanging.Add(1)
		defer hanging.Add(-1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	t.Cleanup(func() { close(release) })
	fast := newReceiver(t, nil)
	slowSpec := webhook(slow.URL)
	slowSpec.Webhook.TimeoutSeconds = 120
	h.policy("a-slow", slowSpec)
	h.policy("b-fast", webhook(fast.URL))
	h.ready("a-slow", metav1.ConditionTrue, kickv1alpha1.ReasonValid)
	h.ready("b-fast", metav1.ConditionTrue, kickv1alpha1.ReasonValid)

	h.publish(h.event(kickv1alpha1.PhaseSucceeded, nil))
	slow.waitFor(t, "/", 1)
	cluster.Eventually(t, wait, "the slow endpoint to hang", func() (bool, error) {
		return hanging.Load() == 1, fmt.Errorf("%d requests in its handler", hanging.Load())
	})
	fast.waitFor(t, "/", 1)
	for i := 0; i < 3; i++ {
		h.publish(h.event(kickv1alpha1.PhaseSucceeded, nil))
		fast.waitFor(t, "/", 2+i)
		if n := hanging.Load(); n != 1 {
			t.Fatalf("event %d reached the fast endpoint, but the slow one no longer hangs (%d requests in its handler): the test proves nothing", i, n)
		}
	}
	if n := len(slow.seen()); n != 1 {
		t.Errorf("the slow endpoint saw %d requests, want the one still hanging", n)
	}
}

// TestQueueDropsOldest: with a full queue the oldest pending event is dropped and counted.
func TestQueueDropsOldest(t *testing.T) {
	h := start(t, func(o *sinks.Options) { o.QueueCapacity = 2 })
	release := make(chan struct{})
	rc := newReceiver(t, func(n int, _ http.ResponseWriter, r *http.Request) {
		if n == 0 {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
	})
	h.policy("busy", webhook(rc.URL))
	h.ready("busy", metav1.ConditionTrue, kickv1alpha1.ReasonValid)

	evs := make([]router.PhaseChanged, 5)
	for i := range evs {
		evs[i] = h.event(kickv1alpha1.PhaseSucceeded, nil)
	}
	h.publish(evs[0])
	rc.waitFor(t, "/", 1) // in flight: the queue is empty again
	for _, ev := range evs[1:] {
		h.publish(ev)
	}
	h.counts("busy", 0, 0, 2)
	if got := h.metric("kick_notification_dropped_total", nil); got != 2 {
		t.Errorf("kick_notification_dropped_total = %v", got)
	}
	close(release)
	hits := rc.waitFor(t, "/", 3)
	want := evs[0].Request.Name + "," + evs[3].Request.Name + "," + evs[4].Request.Name
	if got := names(hits); got != want {
		t.Errorf("delivered %s, want %s", got, want)
	}
	h.counts("busy", 3, 0, 2)
}

// TestTLS: a CA bundle from a Secret verifies the server; a kubernetes.io/tls Secret provides
// the client certificate for mutual TLS.
func TestTLS(t *testing.T) {
	h := start(t, nil)
	ca := sinkstest.NewCA(t)
	serverPair, _, _ := ca.Issue(t, false)
	_, clientCert, clientKey := ca.Issue(t, true)
	pool := ca.Pool()
	serve := func(clientAuth tls.ClientAuthType) *httptest.Server {
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
		srv.TLS = &tls.Config{Certificates: []tls.Certificate{serverPair}, ClientCAs: pool, ClientAuth: clientAuth}
		srv.Config.ErrorLog = log.New(io.Discard, "", 0) // refused handshakes are expected
		srv.StartTLS()
		t.Cleanup(srv.Close)
		return srv
	}
	plain, mutual := serve(tls.NoClientCert), serve(tls.RequireAndVerifyClientCert)

	h.secret("ca", corev1.SecretTypeOpaque, map[string]string{"ca.crt": string(ca.PEM)})
	h.secret("client", corev1.SecretTypeTLS, map[string]string{corev1.TLSCertKey: string(clientCert), corev1.TLSPrivateKeyKey: string(clientKey)})
	withTLS := func(url string, clientCert bool) kickv1alpha1.NotificationPolicySpec {
		s := webhook(url)
		s.Webhook.TLS = &kickv1alpha1.WebhookTLS{CABundle: ref("ca", "ca.crt")}
		if clientCert {
			s.Webhook.TLS.ClientCertificate = &kickv1alpha1.TLSSecretRef{Name: "client"}
		}
		return s
	}
	h.policy("tls", withTLS(plain.URL, false))
	h.policy("mtls", withTLS(mutual.URL, true))
	h.policy("mtls-no-cert", withTLS(mutual.URL, false))
	h.policy("no-ca", webhook(plain.URL))
	for _, name := range []string{"tls", "mtls", "mtls-no-cert", "no-ca"} {
		h.ready(name, metav1.ConditionTrue, kickv1alpha1.ReasonValid)
	}
	h.publish(h.event(kickv1alpha1.PhaseSucceeded, nil))
	h.counts("tls", 1, 0, 0)
	h.counts("mtls", 1, 0, 0)
	if p := h.counts("mtls-no-cert", 0, 1, 0); !strings.Contains(p.Status.LastError, "tls") {
		t.Errorf("mtls-no-cert lastError %q", p.Status.LastError)
	}
	if p := h.counts("no-ca", 0, 1, 0); !strings.Contains(p.Status.LastError, "certificate") {
		t.Errorf("no-ca lastError %q", p.Status.LastError)
	}
}
