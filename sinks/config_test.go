package sinks

import (
	"github.com/kick-operator/kick/sinks/sinkstest"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
)

func ref(name, key string) *kickv1alpha1.SecretKeyRef {
	return &kickv1alpha1.SecretKeyRef{Name: name, Key: key}
}

func TestBuildConfigProblems(t *testing.T) {
	creds := secret("creds", map[string]string{"token": sentinel, "other": sentinel + "-2"})
	cases := []struct {
		name    string
		p       *kickv1alpha1.NotificationPolicy
		reason  string
		mention []string
	}{
		{"missing secret", policy("https://hooks.example.com/x", func(w *kickv1alpha1.WebhookSpec) {
			w.Auth = &kickv1alpha1.WebhookAuth{BearerToken: ref("absent", "token")}
		}), reasonSecretNotFound, []string{`"absent"`, "spec.webhook.auth.bearerToken", testNS}},
		{"missing key", policy("https://hooks.example.com/x", func(w *kickv1alpha1.WebhookSpec) {
			w.Headers = []kickv1alpha1.WebhookHeader{{Name: "X-Key", ValueFrom: ref("creds", "nope")}}
		}), reasonKeyNotFound, []string{`"creds"`, `"nope"`, "headers[X-Key]"}},
		{"both, in spec order", policy("https://hooks.example.com/x", func(w *kickv1alpha1.WebhookSpec) {
			w.Headers = []kickv1alpha1.WebhookHeader{{Name: "X-Key", ValueFrom: ref("creds", "nope")}}
			w.Signing = &kickv1alpha1.WebhookSigning{SecretRef: *ref("absent", "k")}
		}), reasonKeyNotFound, []string{`"nope"`, `"absent"`}},
		{"bad url", policy("ftp://hooks.example.com/x?token=" + sentinel), ReasonInvalidURL, []string{"http://"}},
		{"url credentials", policy("https://u:" + sentinel + "@hooks.example.com/"), ReasonInvalidURL, []string{"credentials"}},
		{"literal ip refused", policy("http://169.254.169.254/latest"), ReasonDestinationRefused, []string{"169.254.169.254/32"}},
		{"tls secret type", policy("https://hooks.example.com/", func(w *kickv1alpha1.WebhookSpec) {
			w.TLS = &kickv1alpha1.WebhookTLS{ClientCertificate: &kickv1alpha1.TLSSecretRef{Name: "creds"}}
		}), ReasonInvalidSecret, []string{`"creds"`, "kubernetes.io/tls"}},
		{"ca bundle not pem", policy("https://hooks.example.com/", func(w *kickv1alpha1.WebhookSpec) {
			w.TLS = &kickv1alpha1.WebhookTLS{CABundle: ref("creds", "token")}
		}), ReasonInvalidSecret, []string{"PEM"}},
		{"signing secret not base64", policy("https://hooks.example.com/", func(w *kickv1alpha1.WebhookSpec) {
			w.Signing = &kickv1alpha1.WebhookSigning{SecretRef: *ref("sig", "key")}
		}), ReasonInvalidSecret, []string{`"sig"`, "signing secret"}},
		{"header with line break", policy("https://hooks.example.com/", func(w *kickv1alpha1.WebhookSpec) {
			w.Headers = []kickv1alpha1.WebhookHeader{{Name: "X-Key", ValueFrom: ref("multi", "v")}}
		}), ReasonInvalidSecret, []string{"control characters"}},
		{"pagerduty key missing", policy("https://events.pagerduty.com/v2/enqueue", func(w *kickv1alpha1.WebhookSpec) {
			w.Format = kickv1alpha1.FormatPagerDuty
			w.PagerDuty = &kickv1alpha1.PagerDutySpec{RoutingKey: *ref("pd", "routingKey")}
		}), reasonSecretNotFound, []string{`"pd"`, "pagerDuty.routingKey"}},
	}
	others := []*corev1.Secret{
		creds,
		secret("sig", map[string]string{"key": "whsec_!!" + sentinel}),
		secret("multi", map[string]string{"v": sentinel + "\nX-Injected: 1"}),
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, prob := build(t, c.p, newGuard(DefaultDenyCIDRs(), nil), nil, others[0], others[1], others[2])
			if cfg != nil || prob == nil {
				t.Fatalf("accepted: %+v", cfg)
			}
			if prob.reason != c.reason {
				t.Errorf("reason %s, want %s (%s)", prob.reason, c.reason, prob.message)
			}
			for _, m := range c.mention {
				if !strings.Contains(prob.message, m) {
					t.Errorf("message %q does not mention %q", prob.message, m)
				}
			}
			if strings.Contains(prob.message, sentinel) || strings.Contains(prob.message, "7f3a9c") {
				t.Errorf("message leaks a secret value: %q", prob.message)
			}
		})
	}
}

func TestBuildConfigReuse(t *testing.T) {
	tok := secret("tok", map[string]string{"t": "token-1"})
	p := policy("https://hooks.example.com/x", func(w *kickv1alpha1.WebhookSpec) {
		w.Auth = &kickv1alpha1.WebhookAuth{BearerToken: ref("tok", "t")}
		w.Headers = []kickv1alpha1.WebhookHeader{{Name: "X-Team", Value: ptr.To("shop")}}
	})
	first, prob := build(t, p, nil, nil, tok)
	if prob != nil {
		t.Fatal(prob.message)
	}
	if got := first.header.Get("Authorization"); got != "Bearer token-1" {
		t.Fatalf("Authorization %q", got)
	}
	if first.method != "POST" || first.timeout != defaultTimeout || first.format != kickv1alpha1.FormatJSON || first.host != "hooks.example.com" {
		t.Fatalf("defaults: %s %s %s %s", first.method, first.timeout, first.format, first.host)
	}
	same, _ := build(t, p, nil, first, tok)
	if same != first {
		t.Fatal("an unchanged policy got a new config")
	}
	tok2 := secret("tok", map[string]string{"t": "token-2\n"})
	changed, _ := build(t, p, nil, first, tok2)
	if changed == first || changed.transport != first.transport {
		t.Fatal("a changed token must give a new config on the same transport")
	}
	if got := changed.header.Get("Authorization"); got != "Bearer token-2" {
		t.Fatalf("Authorization %q (a trailing newline must be trimmed)", got)
	}
	withCA := p.DeepCopy()
	withCA.Spec.Webhook.TLS = &kickv1alpha1.WebhookTLS{CABundle: ref("ca", "ca.crt")}
	ca := secret("ca", map[string]string{"ca.crt": string(sinkstest.NewCA(t).PEM)})
	rebuilt, prob := build(t, withCA, nil, changed, tok2, ca)
	if prob != nil {
		t.Fatal(prob.message)
	}
	if rebuilt.transport == changed.transport {
		t.Fatal("new TLS material must give a new transport")
	}
	if rebuilt.transport.TLSClientConfig.MinVersion < 0x0303 || rebuilt.transport.TLSClientConfig.RootCAs == nil {
		t.Fatal("TLS config lacks the minimum version or the CA pool")
	}
	if rebuilt.transport.Proxy == nil {
		t.Fatal("the transport ignores proxy settings")
	}
}

func TestReferencedSecrets(t *testing.T) {
	p := policy("https://x", func(w *kickv1alpha1.WebhookSpec) {
		w.Headers = []kickv1alpha1.WebhookHeader{{Name: "A", ValueFrom: ref("h", "k")}, {Name: "B", Value: ptr.To("v")}}
		w.Auth = &kickv1alpha1.WebhookAuth{Basic: &kickv1alpha1.BasicAuth{Username: *ref("u", "k"), Password: *ref("h", "p")}}
		w.TLS = &kickv1alpha1.WebhookTLS{CABundle: ref("ca", "k"), ClientCertificate: &kickv1alpha1.TLSSecretRef{Name: "cert"}}
		w.PagerDuty = &kickv1alpha1.PagerDutySpec{RoutingKey: *ref("pd", "k")}
		w.Signing = &kickv1alpha1.WebhookSigning{SecretRef: *ref("sig", "k")}
	})
	got := strings.Join(ReferencedSecrets(p), ",")
	if got != "ca,cert,h,pd,sig,u" {
		t.Fatalf("ReferencedSecrets = %s", got)
	}
}
