package sinks

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
)

// TestSecretOptIn plays a tenant who may create NotificationPolicies but not read Secrets: every
// way a policy can reference a Secret is tried against a Secret that did not opt in. Each is
// refused with SecretNotAllowed naming the Secret and the label to add, nothing is built to
// send, and nothing about the Secret (value, keys, type, validity) shows in the message.
func TestSecretOptIn(t *testing.T) {
	const url = "https://collector.example.com/x"
	// The victim: an ordinary Secret holding a value, a key the tenant guesses, the wrong type
	// for a client certificate and content that would fail every validity check. Had it opted
	// in, each of these would give another reason or message.
	victim := secret("db", map[string]string{"password": sentinel, "ca.crt": sentinel, "v": sentinel + "\n1"})
	refs := map[string]func(*kickv1alpha1.WebhookSpec){
		"header": func(w *kickv1alpha1.WebhookSpec) {
			w.Headers = []kickv1alpha1.WebhookHeader{{Name: "X-Leak", ValueFrom: ref("db", "password")}}
		},
		"header, missing key": func(w *kickv1alpha1.WebhookSpec) {
			w.Headers = []kickv1alpha1.WebhookHeader{{Name: "X-Leak", ValueFrom: ref("db", "guess")}}
		},
		"header, control characters": func(w *kickv1alpha1.WebhookSpec) {
			w.Headers = []kickv1alpha1.WebhookHeader{{Name: "X-Leak", ValueFrom: ref("db", "v")}}
		},
		"bearer": func(w *kickv1alpha1.WebhookSpec) {
			w.Auth = &kickv1alpha1.WebhookAuth{BearerToken: ref("db", "password")}
		},
		"basic": func(w *kickv1alpha1.WebhookSpec) {
			w.Auth = &kickv1alpha1.WebhookAuth{Basic: &kickv1alpha1.BasicAuth{Username: *ref("db", "password"), Password: *ref("db", "password")}}
		},
		"ca bundle": func(w *kickv1alpha1.WebhookSpec) {
			w.TLS = &kickv1alpha1.WebhookTLS{CABundle: ref("db", "ca.crt")}
		},
		"client certificate": func(w *kickv1alpha1.WebhookSpec) {
			w.TLS = &kickv1alpha1.WebhookTLS{ClientCertificate: &kickv1alpha1.TLSSecretRef{Name: "db"}}
		},
		"pagerduty": func(w *kickv1alpha1.WebhookSpec) {
			w.Format = kickv1alpha1.FormatPagerDuty
			w.PagerDuty = &kickv1alpha1.PagerDutySpec{RoutingKey: *ref("db", "password")}
		},
		"signing": func(w *kickv1alpha1.WebhookSpec) {
			w.Signing = &kickv1alpha1.WebhookSigning{SecretRef: *ref("db", "password")}
		},
	}
	labels := map[string][]string{
		"no label":          nil,
		"label false":       {kickv1alpha1.NotificationSecretLabel, "false"},
		"label True":        {kickv1alpha1.NotificationSecretLabel, "True"},
		"label empty":       {kickv1alpha1.NotificationSecretLabel, ""},
		"other label":       {"notifications.kick.corewire.io/allowed", "true"},
		"other prefix":      {"kick.corewire.io/allow", "true"},
		"label in the name": {kickv1alpha1.NotificationSecretLabel + "-x", "true"},
	}
	for how, mutate := range refs {
		for what, l := range labels {
			t.Run(how+"/"+what, func(t *testing.T) {
				cfg, prob := build(t, policy(url, mutate), nil, nil, unlabeled(victim, l...))
				if cfg != nil || prob == nil {
					t.Fatal("a Secret that did not opt in was used")
				}
				if prob.reason != ReasonSecretNotAllowed {
					t.Fatalf("reason %s, want %s: %s", prob.reason, ReasonSecretNotAllowed, prob.message)
				}
				for _, want := range []string{`Secret "db"`, "spec.webhook.", kickv1alpha1.NotificationSecretLabel + "=" + kickv1alpha1.NotificationSecretAllowed,
					"kubectl -n " + testNS + " label secret db"} {
					if !strings.Contains(prob.message, want) {
						t.Errorf("message %q lacks %q", prob.message, want)
					}
				}
				for _, bad := range []string{sentinel, "7f3a9c", "guess", "password", "ca.crt", "kubernetes.io/tls", "PEM", "control"} {
					if strings.Contains(prob.message, bad) {
						t.Errorf("message %q tells something about the Secret: %q", prob.message, bad)
					}
				}
			})
		}
	}
}

// TestSecretOptInEveryReference: one Secret that opted in does not make another usable, and
// each refused Secret is named once.
func TestSecretOptInEveryReference(t *testing.T) {
	ok := secret("ok", map[string]string{"token": "good-token"})
	victim := unlabeled(secret("db", map[string]string{"password": sentinel}))
	p := policy("https://collector.example.com/x", func(w *kickv1alpha1.WebhookSpec) {
		w.Auth = &kickv1alpha1.WebhookAuth{BearerToken: ref("ok", "token")}
		w.Headers = []kickv1alpha1.WebhookHeader{{Name: "X-A", ValueFrom: ref("db", "password")}, {Name: "X-B", ValueFrom: ref("db", "password")}}
	})
	cfg, prob := build(t, p, nil, nil, ok, victim)
	if cfg != nil || prob == nil || prob.reason != ReasonSecretNotAllowed {
		t.Fatalf("config %v, problem %+v", cfg, prob)
	}
	if n := strings.Count(prob.message, `Secret "db"`); n != 1 {
		t.Errorf("db named %d times: %q", n, prob.message)
	}
	if strings.Contains(prob.message, `"ok"`) {
		t.Errorf("the allowed Secret is reported: %q", prob.message)
	}
}

// TestSecretOptInRevoked: a policy that delivered with a labelled Secret loses it when the label
// goes (the reconciler runs again on the Secret's metadata change and builds from scratch), and
// gets it back when the label returns.
func TestSecretOptInRevoked(t *testing.T) {
	tok := secret("tok", map[string]string{"t": sentinel})
	p := policy("https://collector.example.com/x", func(w *kickv1alpha1.WebhookSpec) {
		w.Auth = &kickv1alpha1.WebhookAuth{BearerToken: ref("tok", "t")}
	})
	first, prob := build(t, p, nil, nil, tok)
	if prob != nil {
		t.Fatal(prob.message)
	}
	for _, revoked := range []client.Object{unlabeled(tok), unlabeled(tok, kickv1alpha1.NotificationSecretLabel, "false")} {
		cfg, prob := build(t, p, nil, first, revoked)
		if cfg != nil || prob == nil || prob.reason != ReasonSecretNotAllowed {
			t.Fatalf("after the label went: config %v, problem %+v", cfg, prob)
		}
	}
	again, prob := build(t, p, nil, first, tok)
	if prob != nil || again != first {
		t.Fatalf("label back: config %p (was %p), problem %+v", again, first, prob)
	}
}

func TestSecretAllowed(t *testing.T) {
	s := &corev1.Secret{}
	if SecretAllowed(s) {
		t.Fatal("a Secret without labels is allowed")
	}
	s.Labels = map[string]string{kickv1alpha1.NotificationSecretLabel: kickv1alpha1.NotificationSecretAllowed}
	if !SecretAllowed(s) {
		t.Fatal("a labelled Secret is refused")
	}
}
