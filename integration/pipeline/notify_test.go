package pipeline

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/integration/fixture"
)

// TestRestartIsNotified: the whole path from a Secret change to a webhook —
// the restart's terminal phase reaches a NotificationPolicy's receiver as
// the documented JSON payload, once.
func TestRestartIsNotified(t *testing.T) {
	var mu sync.Mutex
	var got []map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var payload map[string]any
		if err := json.Unmarshal(body, &payload); err == nil {
			mu.Lock()
			got = append(got, payload)
			mu.Unlock()
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()

	f := fixture.Setup(t)
	f.Policy("all", selectAll)
	f.Create(&kickv1alpha1.NotificationPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "hook"},
		Spec:       kickv1alpha1.NotificationPolicySpec{Webhook: kickv1alpha1.WebhookSpec{URL: srv.URL + "/kick"}},
	})
	f.WebWithSecret()
	f.SetSecret("db", map[string]string{"password": "bravo"})
	f.WaitPhase("deployment-web", kickv1alpha1.PhaseSucceeded, 60*time.Second)
	cluster.Eventually(t, 30*time.Second, "the Succeeded notification", func() (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		return len(got) >= 1, nil
	})
	mu.Lock()
	defer mu.Unlock()
	p := got[0]
	if p["phase"] != "Succeeded" || p["reason"] != "RestartCompleted" || p["targetKind"] != "Deployment" || p["targetName"] != "web" || p["namespace"] != f.NS {
		t.Fatalf("unexpected payload %v", p)
	}
	if len(p) != 9 {
		t.Fatalf("payload has %d fields, want the 9 documented ones: %v", len(p), p)
	}
}

// receiver collects the JSON documents posted to it.
type receiver struct {
	mu   sync.Mutex
	docs []map[string]any
	srv  *httptest.Server
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		var doc map[string]any
		if err := json.Unmarshal(body, &doc); err == nil {
			r.mu.Lock()
			r.docs = append(r.docs, doc)
			r.mu.Unlock()
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// gateDocs returns the gate documents received so far.
func (r *receiver) gateDocs() []map[string]any {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []map[string]any
	for _, d := range r.docs {
		if d["event"] == "GateChanged" {
			out = append(out, d)
		}
	}
	return out
}

// TestGateChangesAreNotified: the reconciler publishes a request's gate
// decisions on the router; a NotificationPolicy that opted in hears "waits"
// and then "may run now", a default one hears neither.
func TestGateChangesAreNotified(t *testing.T) {
	gates, phases := newReceiver(t), newReceiver(t)
	f := fixture.Setup(t)
	f.Policy("all", selectAll+"\nsuspend: true")
	f.Create(&kickv1alpha1.NotificationPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "gates"},
		Spec:       kickv1alpha1.NotificationPolicySpec{GateChanges: true, Webhook: kickv1alpha1.WebhookSpec{URL: gates.srv.URL}},
	})
	f.Create(&kickv1alpha1.NotificationPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "phases"},
		Spec:       kickv1alpha1.NotificationPolicySpec{Webhook: kickv1alpha1.WebhookSpec{URL: phases.srv.URL}},
	})
	f.WebWithSecret()
	f.SetSecret("db", map[string]string{"password": "bravo"})
	f.WaitPhase("deployment-web", kickv1alpha1.PhaseWaitingForGate, 60*time.Second)
	cluster.Eventually(t, 30*time.Second, "the 'waits' gate notification", func() (bool, error) {
		return len(gates.gateDocs()) >= 1, nil
	})
	f.PatchPolicy("all", `{"spec":{"suspend":false}}`)
	f.WaitPhase("deployment-web", kickv1alpha1.PhaseSucceeded, 60*time.Second)
	cluster.Eventually(t, 30*time.Second, "the 'may run now' gate notification", func() (bool, error) {
		gates.mu.Lock()
		all := fmt.Sprint(gates.docs)
		gates.mu.Unlock()
		return len(gates.gateDocs()) >= 2, fmt.Errorf("documents so far: %s", all)
	})
	docs := gates.gateDocs()
	if d := docs[0]; d["allowed"] != false || d["reason"] != "Suspended" || d["stage"] != "Suspend" || d["targetName"] != "web" {
		t.Fatalf("first gate document: %v", d)
	}
	if d := docs[len(docs)-1]; d["allowed"] != true || d["reason"] != "Allowed" {
		t.Fatalf("last gate document: %v", d)
	}
	cluster.Eventually(t, 30*time.Second, "the default policy's Succeeded notification", func() (bool, error) {
		phases.mu.Lock()
		defer phases.mu.Unlock()
		return len(phases.docs) >= 1, nil
	})
	if n := len(phases.gateDocs()); n != 0 {
		t.Fatalf("a policy that did not opt in received %d gate documents", n)
	}
}
