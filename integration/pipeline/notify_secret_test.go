package pipeline

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/integration/fixture"
)

// TestNotificationPolicyFollowsItsSecret: the manager caches only the Secrets something
// follows; a Secret no workload consumes but a NotificationPolicy reads its token from is one
// of them. The policy sees the Secret appear, gain its key, and the restart's notification
// carries that token.
func TestNotificationPolicyFollowsItsSecret(t *testing.T) {
	var mu sync.Mutex
	var auth []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization"))
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()

	f := fixture.Setup(t)
	f.Policy("all", selectAll)
	f.Create(&kickv1alpha1.NotificationPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "hook"},
		Spec: kickv1alpha1.NotificationPolicySpec{Webhook: kickv1alpha1.WebhookSpec{
			URL:  srv.URL + "/kick",
			Auth: &kickv1alpha1.WebhookAuth{BearerToken: &kickv1alpha1.SecretKeyRef{Name: "hook-token", Key: "token"}},
		}},
	})
	ready := func(status metav1.ConditionStatus, reason string) {
		t.Helper()
		cluster.Eventually(t, 30*time.Second, "NotificationPolicy hook Ready="+string(status)+" "+reason, func() (bool, error) {
			var p kickv1alpha1.NotificationPolicy
			if err := f.Env.Client.Get(f.Ctx, client.ObjectKey{Namespace: f.NS, Name: "hook"}, &p); err != nil {
				return false, err
			}
			c := apimeta.FindStatusCondition(p.Status.Conditions, kickv1alpha1.ConditionReady)
			return c != nil && c.Status == status && c.Reason == reason, nil
		})
	}
	ready(metav1.ConditionFalse, kickv1alpha1.ReasonSecretNotFound)

	optIn := map[string]string{kickv1alpha1.NotificationSecretLabel: kickv1alpha1.NotificationSecretAllowed}
	f.Secret("hook-token", map[string]string{"other": "x"}, optIn)
	ready(metav1.ConditionFalse, kickv1alpha1.ReasonSecretKeyNotFound)
	f.SetSecret("hook-token", map[string]string{"token": "t0ken-two"})
	ready(metav1.ConditionTrue, kickv1alpha1.ReasonValid)

	f.WebWithSecret()
	f.SetSecret("db", map[string]string{"password": "bravo"})
	f.WaitPhase("deployment-web", kickv1alpha1.PhaseSucceeded, 60*time.Second)
	cluster.Eventually(t, 30*time.Second, "the notification of the restart", func() (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		return len(auth) > 0, nil
	})
	mu.Lock()
	defer mu.Unlock()
	if auth[0] != "Bearer t0ken-two" {
		t.Errorf("the notification carried Authorization %q, want the token the Secret holds now", auth[0])
	}
}
