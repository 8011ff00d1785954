package admission

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/kick-operator/kick/restart/preflight/certs"
)

func withAPIServer(ctx context.Context) context.Context {
	return context.WithValue(ctx, apiServerKey{}, true)
}

// secretRequest is the admission request of w (an update of a Secret) by
// user.
func secretRequest(t testing.TB, w Write, user authenticationv1.UserInfo) admission.Request {
	t.Helper()
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{UID: types.UID("review-1"), Operation: admissionv1.Update,
		Kind:      metav1.GroupVersionKind{Version: "v1", Kind: "Secret"},
		Resource:  metav1.GroupVersionResource{Version: "v1", Resource: "secrets"},
		Namespace: w.Namespace, Name: w.Name, UserInfo: user,
		Object: runtime.RawExtension{Raw: w.Object}, OldObject: runtime.RawExtension{Raw: w.Old}}}
}

// reviewBody is the AdmissionReview JSON of req.
func reviewBody(t testing.TB, req admission.Request) []byte {
	t.Helper()
	return mustJSON(t, admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &req.AdmissionRequest})
}

// pki: the webhook's serving CA and certificate, the API server's client
// CA with a certificate for "kube-apiserver" and one for "curious-pod", and
// a stranger CA with a certificate for "kube-apiserver".
type pki struct {
	serving                  certs.Bundle
	apiServer, other, forged *certs.Pair
	clientCA                 *certs.Pair
}

func newPKI(t testing.TB) pki {
	t.Helper()
	now := time.Now()
	serving, _, err := certs.Plan(certs.Bundle{}, []string{"127.0.0.1"}, time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	p := pki{serving: serving}
	if p.clientCA, err = certs.NewClientCA("webhook-clients", now, time.Hour); err != nil {
		t.Fatal(err)
	}
	stranger, err := certs.NewClientCA("webhook-clients", now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		ca   *certs.Pair
		name string
		out  **certs.Pair
	}{{p.clientCA, "kube-apiserver", &p.apiServer}, {p.clientCA, "curious-pod", &p.other}, {stranger, "kube-apiserver", &p.forged}} {
		if *c.out, err = certs.NewClient(c.ca, c.name, now, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// serve starts the preflight as the manager serves it, on a real TLS
// listener on 127.0.0.1, with auth (nil: no client CA configured).
func serve(t testing.TB, p pki, c *Checker, auth *ClientAuth, maxInFlight int) string {
	t.Helper()
	cert, err := tls.X509KeyPair(p.serving.Serving.CertPEM, p.serving.Serving.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	wh := &Webhook{Handler: &Handler{Checker: c, Shares: NewShares(maxInFlight)}, Auth: auth}
	srv := httptest.NewUnstartedServer(NewGuard(wh, maxInFlight))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	auth.Configure(srv.TLS)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv.URL
}

// post sends body as a caller presenting cert (nil: none); it returns the
// status and the response, or the error.
func post(t testing.TB, p pki, url string, cert *certs.Pair, body []byte) (int, *admissionv1.AdmissionResponse, error) {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(p.serving.Published())
	cfg := &tls.Config{RootCAs: pool}
	if cert != nil {
		kp, err := tls.X509KeyPair(cert.CertPEM, cert.KeyPEM)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{kp}
	}
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
	defer hc.CloseIdleConnections()
	resp, err := hc.Post(url+Path, "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var out admissionv1.AdmissionReview
	if resp.StatusCode == http.StatusOK {
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			return resp.StatusCode, nil, err
		}
	}
	return resp.StatusCode, out.Response, nil
}

// revealing reports whether a response says anything at all.
func revealing(r *admissionv1.AdmissionResponse) bool {
	return r == nil || !r.Allowed || len(r.Warnings) > 0 || len(r.AuditAnnotations) > 0 || r.Result != nil && r.Result.Message != ""
}

// TestOnlyTheAPIServerHearsAboutANamespace plays a curious pod that posts a
// review naming team-b's Secret db: without the API server's client
// certificate it learns nothing, while the API server gets the full answer.
func TestOnlyTheAPIServerHearsAboutANamespace(t *testing.T) {
	p := newPKI(t)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(p.clientCA.CertPEM)
	body := reviewBody(t, secretRequest(t, guess(t, "db", "new", "old"), authenticationv1.UserInfo{Username: "mallory"}))

	withCA := serve(t, p, teamChecker(t), &ClientAuth{CAs: pool, Names: []string{"kube-apiserver"}}, 0)
	status, resp, err := post(t, p, withCA, p.apiServer, body)
	if err != nil || status != http.StatusOK || resp == nil || !resp.Allowed ||
		fmt.Sprint(resp.Warnings) != "[kick: restarts deployment/web now (policy default)]" ||
		resp.AuditAnnotations["consumers"] != "restarts deployment/web now (policy default)" {
		t.Fatalf("API server: %d %+v %v", status, resp, err)
	}
	for _, tc := range []struct {
		what string
		cert *certs.Pair
	}{{"no certificate", nil}, {"a certificate from another CA", p.forged}} {
		if status, resp, err := post(t, p, withCA, tc.cert, body); err == nil {
			t.Errorf("%s: the handshake succeeded: %d %+v", tc.what, status, resp)
		}
	}
	// Signed by the CA, but not the API server's name.
	if status, resp, err := post(t, p, withCA, p.other, body); err != nil || status != http.StatusOK || revealing(resp) {
		t.Errorf("curious pod's certificate: %d %+v %v", status, resp, err)
	}
	// No client CA configured: nobody is proven, everybody gets the empty allow.
	without := serve(t, p, teamChecker(t), nil, 0)
	for _, cert := range []*certs.Pair{nil, p.apiServer} {
		if status, resp, err := post(t, p, without, cert, body); err != nil || status != http.StatusOK || revealing(resp) {
			t.Errorf("without a client CA: %d %+v %v", status, resp, err)
		}
	}
}

// TestUnprovenCallerNeverDenied: in deny mode, a caller that is not the API
// server is never refused (and learns nothing); userInfo it sends is not
// believed either way.
func TestUnprovenCallerNeverDenied(t *testing.T) {
	c := teamChecker(t)
	c.DenyInDenyWindows = true
	h := &Handler{Checker: c}
	resp := h.Handle(context.Background(), secretRequest(t, guess(t, "batch-cfg", "new", "old"), authenticationv1.UserInfo{Username: "bob"}))
	if !resp.Allowed || len(resp.Warnings) > 0 || len(resp.AuditAnnotations) > 0 {
		t.Errorf("unproven caller: %+v", resp)
	}
	if resp := h.Handle(withAPIServer(context.Background()), secretRequest(t, guess(t, "batch-cfg", "new", "old"), authenticationv1.UserInfo{Username: "bob"})); resp.Allowed {
		t.Errorf("API server, bob inside the Deny window: allowed")
	}
}

// TestFloodIsBounded plays a pod flooding the webhook: a body over MaxBody
// is refused unread, and beyond MaxInFlight reviews at once the next is
// refused at once instead of queueing.
func TestFloodIsBounded(t *testing.T) {
	p := newPKI(t)
	url := serve(t, p, teamChecker(t), nil, 0)
	huge := append([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"x","object":{"data":{"k":"`),
		bytes.Repeat([]byte("A"), MaxBody)...)
	huge = append(huge, []byte(`"}}}}`)...)
	if status, _, err := post(t, p, url, nil, huge); err != nil || status != http.StatusRequestEntityTooLarge {
		t.Errorf("body of %d bytes: status %d, %v", len(huge), status, err)
	}

	// One slot, held by the first review, whose handler waits for
	// release; later ones return at once.
	entered, release := make(chan struct{}), make(chan struct{})
	blocking := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case entered <- struct{}{}:
			<-release
		default:
		}
	})
	srv := httptest.NewServer(NewGuard(blocking, 1))
	defer srv.Close()
	first := make(chan int)
	go func() {
		resp, err := http.Post(srv.URL, "application/json", strings.NewReader("{}"))
		if err != nil {
			first <- 0
			return
		}
		resp.Body.Close()
		first <- resp.StatusCode
	}()
	<-entered
	resp, err := http.Post(srv.URL, "application/json", strings.NewReader("{}"))
	if err != nil || resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("second review while the slot is held: %v %v", resp, err)
	}
	if resp != nil {
		resp.Body.Close()
	}
	close(release)
	if s := <-first; s != http.StatusOK {
		t.Errorf("first review: status %d", s)
	}
	// The slot is free again.
	if resp, err := http.Post(srv.URL, "application/json", strings.NewReader("{}")); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("after release: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
}
