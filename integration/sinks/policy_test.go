package sinks

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/sinks"
)

// TestDeniedDestination: loopback is denied by default; an endpoint there is refused, whether
// the URL names the address or a host that resolves to it.
func TestDeniedDestination(t *testing.T) {
	h := start(t, func(o *sinks.Options) { o.AllowCIDRs = nil })
	rc := newReceiver(t, nil)
	_, port, _ := net.SplitHostPort(rc.Listener.Addr().String())
	h.policy("literal", webhook(rc.URL+"/hook?token="+sentinel))
	h.policy("by-name", webhook("http://localhost:"+port+"/hook?token="+sentinel))
	h.ready("literal", metav1.ConditionFalse, sinks.ReasonDestinationRefused, "127.0.0.0/8")
	h.ready("by-name", metav1.ConditionTrue, kickv1alpha1.ReasonValid)
	h.policy("metadata", webhook("http://169.254.169.254/latest/meta-data/"))
	h.ready("metadata", metav1.ConditionFalse, sinks.ReasonDestinationRefused, "169.254.169.254/32")

	h.publish(h.event(kickv1alpha1.PhaseSucceeded, nil))
	p := h.ready("by-name", metav1.ConditionFalse, sinks.ReasonDestinationRefused, "127.0.0.0/8", "localhost:"+port)
	if strings.Contains(p.Status.LastError, "/hook") {
		t.Errorf("lastError shows the URL path: %q", p.Status.LastError)
	}
	h.counts("by-name", 0, 1, 0)
	h.counts("literal", 0, 1, 0)
	if n := len(rc.seen()); n != 0 {
		t.Errorf("the denied endpoint got %d requests", n)
	}
}

// TestFiltering: phases and workloadSelector decide what each policy receives.
func TestFiltering(t *testing.T) {
	h := start(t, nil)
	rc := newReceiver(t, nil)
	web := map[string]string{"app": "web"}
	spec := func(path string, phases []kickv1alpha1.KickRequestPhase, sel *metav1.LabelSelector) kickv1alpha1.NotificationPolicySpec {
		s := webhook(rc.URL + path)
		s.Phases, s.WorkloadSelector = phases, sel
		return s
	}
	h.policy("a-selector", spec("/a", []kickv1alpha1.KickRequestPhase{kickv1alpha1.PhaseFailed, kickv1alpha1.PhaseNoLongerRequired},
		&metav1.LabelSelector{MatchLabels: web}))
	h.policy("b-phases", spec("/b", []kickv1alpha1.KickRequestPhase{kickv1alpha1.PhaseExecuting}, nil))
	h.policy("c-defaults", spec("/c", nil, nil))
	h.policy("d-expression", spec("/d", nil, &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "app", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"web"}}}}))
	for _, n := range []string{"a-selector", "b-phases", "c-defaults", "d-expression"} {
		h.ready(n, metav1.ConditionTrue, kickv1alpha1.ReasonValid)
	}
	e1 := h.event(kickv1alpha1.PhaseSucceeded, map[string]string{"app": "db"})
	e2 := h.event(kickv1alpha1.PhaseExecuting, web)
	e3 := h.event(kickv1alpha1.PhaseFailed, web)
	e4 := h.event(kickv1alpha1.PhaseExecuting, map[string]string{"app": "other"})
	e5 := h.event(kickv1alpha1.PhaseNoLongerRequired, web)
	e6 := h.event(kickv1alpha1.PhaseDryRun, nil)
	h.publish(e1, e2, e3, e4, e5, e6)

	// Each policy's deliveries are in order, so once its last expected event arrived, any
	// earlier one it wrongly matched would have arrived too.
	for _, c := range []struct {
		path string
		want []string
	}{
		{"/a", []string{e3.Request.Name, e5.Request.Name}},
		{"/b", []string{e2.Request.Name, e4.Request.Name}},
		{"/c", []string{e1.Request.Name, e3.Request.Name, e5.Request.Name, e6.Request.Name}},
		{"/d", []string{e1.Request.Name, e6.Request.Name}},
	} {
		if got := names(rc.waitFor(t, c.path, len(c.want))); got != strings.Join(c.want, ",") {
			t.Errorf("%s received %s, want %s", c.path, got, strings.Join(c.want, ","))
		}
	}
}

// TestSuspend: a suspended policy sends nothing, and events from while it was suspended are
// not sent later.
func TestSuspend(t *testing.T) {
	h := start(t, nil)
	rc := newReceiver(t, nil)
	susp := webhook(rc.URL + "/a")
	susp.Suspend = true
	h.policy("a-suspended", susp)
	h.policy("b-witness", webhook(rc.URL+"/b"))
	h.ready("a-suspended", metav1.ConditionTrue, kickv1alpha1.ReasonSuspended, "spec.suspend")
	h.ready("b-witness", metav1.ConditionTrue, kickv1alpha1.ReasonValid)

	before := h.event(kickv1alpha1.PhaseSucceeded, nil)
	h.publish(before)
	// Publish offers an event to every policy's subscription before it returns, so the
	// suspended policy has already turned it down; b receiving it shows it was published.
	rc.waitFor(t, "/b", 1)
	h.update("a-suspended", func(s *kickv1alpha1.NotificationPolicySpec) { s.Suspend = false })
	h.ready("a-suspended", metav1.ConditionTrue, kickv1alpha1.ReasonValid)
	after := h.event(kickv1alpha1.PhaseSucceeded, nil)
	h.publish(after)
	if got := names(rc.waitFor(t, "/a", 1)); got != after.Request.Name {
		t.Errorf("the resumed policy received %s, want only %s", got, after.Request.Name)
	}
	h.counts("a-suspended", 1, 0, 0)
}

// TestSecretReferences: a missing Secret or key makes the policy not Ready, naming it; the
// policy follows the Secret as it is created and fixed.
func TestSecretReferences(t *testing.T) {
	h := start(t, nil)
	rc := newReceiver(t, nil)
	spec := webhook(rc.URL)
	spec.Webhook.Auth = &kickv1alpha1.WebhookAuth{BearerToken: ref("creds", "token")}
	h.policy("creds", spec)
	h.ready("creds", metav1.ConditionFalse, kickv1alpha1.ReasonSecretNotFound, `Secret "creds"`, "spec.webhook.auth.bearerToken")
	h.expectEvent("creds", corev1.EventTypeWarning, kickv1alpha1.ReasonSecretNotFound)

	h.publish(h.event(kickv1alpha1.PhaseSucceeded, nil))
	if p := h.counts("creds", 0, 1, 0); !strings.Contains(p.Status.LastError, `Secret "creds"`) {
		t.Errorf("lastError %q", p.Status.LastError)
	}

	s := h.secret("creds", corev1.SecretTypeOpaque, map[string]string{"other": sentinel})
	h.ready("creds", metav1.ConditionFalse, kickv1alpha1.ReasonSecretKeyNotFound, `Secret "creds"`, `key "token"`)

	s.StringData = map[string]string{"token": sentinel + "-token"}
	if err := h.env.Client.Update(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	h.ready("creds", metav1.ConditionTrue, kickv1alpha1.ReasonValid)
	h.expectEvent("creds", corev1.EventTypeNormal, kickv1alpha1.ReasonValid)
	h.publish(h.event(kickv1alpha1.PhaseSucceeded, nil))
	if got := rc.waitFor(t, "/", 1)[0].header.Get("Authorization"); got != "Bearer "+sentinel+"-token" {
		t.Errorf("Authorization %q", got)
	}
	h.counts("creds", 1, 1, 0)

	// A rotated token is used for the next delivery.
	s.StringData = map[string]string{"token": sentinel + "-rotated"}
	if err := h.env.Client.Update(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	rotatedUsed := func() bool {
		h.publish(h.event(kickv1alpha1.PhaseSucceeded, nil))
		hits := rc.waitFor(t, "/", len(rc.seen())+1)
		return hits[len(hits)-1].header.Get("Authorization") == "Bearer "+sentinel+"-rotated"
	}
	// Each delivery takes milliseconds; give the Secret's watch event and the
	// policy's re-read a deadline, not a number of tries.
	for deadline := time.Now().Add(30 * time.Second); !rotatedUsed(); {
		if time.Now().After(deadline) {
			t.Fatal("the rotated token was never used")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestNoSecretInStatus: an endpoint that echoes credentials, a URL holding a token, and a
// failing delivery leave no secret in status, Events or logs (the harness checks all three).
func TestNoSecretInStatus(t *testing.T) {
	h := start(t, nil)
	rc := newReceiver(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		http.Error(w, "rejected "+r.Header.Get("Authorization")+" and "+r.Header.Get("X-Api-Key")+" for "+r.URL.String(), http.StatusInternalServerError)
	})
	h.secret("creds", corev1.SecretTypeOpaque, map[string]string{"user": "kick", "password": sentinel + "-pw", "key": sentinel + "-key"})
	spec := webhook(rc.URL + "/services/T0/" + sentinel + "?token=" + sentinel)
	spec.Webhook.Auth = &kickv1alpha1.WebhookAuth{Basic: &kickv1alpha1.BasicAuth{Username: *ref("creds", "user"), Password: *ref("creds", "password")}}
	spec.Webhook.Headers = []kickv1alpha1.WebhookHeader{{Name: "X-Api-Key", ValueFrom: ref("creds", "key")}}
	spec.Webhook.TimeoutSeconds = 5
	h.policy("leaky", spec)
	h.ready("leaky", metav1.ConditionTrue, kickv1alpha1.ReasonValid)
	h.publish(h.event(kickv1alpha1.PhaseSucceeded, nil))
	p := h.counts("leaky", 0, 1, 0)
	if !strings.Contains(p.Status.LastError, "500 Internal Server Error after 4 attempts") || strings.Contains(p.Status.LastError, "rejected") {
		t.Errorf("lastError %q (the response body must not be quoted)", p.Status.LastError)
	}
	if got := rc.seen()[0].header.Get("Authorization"); !strings.HasPrefix(got, "Basic ") {
		t.Errorf("Authorization %q", got)
	}
}

// TestSecretOptIn plays a tenant who may create NotificationPolicies but not read Secrets, and
// points a policy's bearer token at a Secret of the namespace that did not opt in, with an
// endpoint of their own. Nothing is sent and the policy says which label is missing; once the
// Secret's owner labels it, deliveries carry it; when the label goes, they stop again. The
// harness checks that the value shows in no status, Event or log line.
func TestSecretOptIn(t *testing.T) {
	h := start(t, nil)
	rc := newReceiver(t, nil)
	db := h.secretLabelled("db", corev1.SecretTypeOpaque, map[string]string{"password": sentinel + "-db"}, nil)
	h.secretLabelled("other", corev1.SecretTypeOpaque, map[string]string{"password": sentinel + "-other"},
		map[string]string{kickv1alpha1.NotificationSecretLabel: "false"})
	spec := webhook(rc.URL + "/exfil")
	spec.Webhook.Auth = &kickv1alpha1.WebhookAuth{BearerToken: ref("db", "password")}
	h.policy("exfil", spec)
	other := webhook(rc.URL + "/other")
	other.Webhook.Headers = []kickv1alpha1.WebhookHeader{{Name: "X-Key", ValueFrom: ref("other", "guessed-key")}}
	h.policy("other", other)

	label := kickv1alpha1.NotificationSecretLabel + "=" + kickv1alpha1.NotificationSecretAllowed
	h.ready("exfil", metav1.ConditionFalse, sinks.ReasonSecretNotAllowed, `Secret "db"`, "spec.webhook.auth.bearerToken", label,
		"kubectl -n "+h.ns+" label secret db "+label)
	h.expectEvent("exfil", corev1.EventTypeWarning, sinks.ReasonSecretNotAllowed)
	// Not SecretKeyNotFound: a Secret that did not opt in tells nothing about its keys.
	h.ready("other", metav1.ConditionFalse, sinks.ReasonSecretNotAllowed, `Secret "other"`, label)
	h.publish(h.event(kickv1alpha1.PhaseSucceeded, nil))
	h.counts("exfil", 0, 1, 0)
	h.counts("other", 0, 1, 0)
	if n := len(rc.seen()); n != 0 {
		t.Fatalf("%d requests sent with a Secret that did not opt in", n)
	}

	// The Secret's owner consents.
	setLabels(t, h, db, map[string]string{kickv1alpha1.NotificationSecretLabel: kickv1alpha1.NotificationSecretAllowed})
	h.ready("exfil", metav1.ConditionTrue, kickv1alpha1.ReasonValid)
	h.publish(h.event(kickv1alpha1.PhaseSucceeded, nil))
	if got := rc.waitFor(t, "/exfil", 1)[0].header.Get("Authorization"); got != "Bearer "+sentinel+"-db" {
		t.Errorf("Authorization %q", got)
	}
	h.counts("exfil", 1, 1, 0)

	// And withdraws: a metadata-only change, which the policy follows at once.
	setLabels(t, h, db, map[string]string{"app": "db"})
	h.ready("exfil", metav1.ConditionFalse, sinks.ReasonSecretNotAllowed, `Secret "db"`)
	h.publish(h.event(kickv1alpha1.PhaseSucceeded, nil))
	h.counts("exfil", 1, 2, 0)
	if n := len(rc.seen()); n != 1 {
		t.Errorf("%d requests, want only the one sent while the Secret opted in", n)
	}
}

// setLabels replaces a Secret's labels.
func setLabels(t *testing.T, h *harness, s *corev1.Secret, labels map[string]string) {
	t.Helper()
	cluster.Eventually(t, wait, "labels of Secret "+s.Name, func() (bool, error) {
		var cur corev1.Secret
		if err := h.env.Client.Get(context.Background(), client.ObjectKeyFromObject(s), &cur); err != nil {
			return false, err
		}
		cur.Labels = labels
		err := h.env.Client.Update(context.Background(), &cur)
		return err == nil, err
	})
}
