package pipeline

import (
	"encoding/json"
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
