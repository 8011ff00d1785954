package sinks

import (
	"context"
	"net/netip"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/router"
)

const testNS = "team-a"

// wait bounds every wait in the tests, so a bug fails fast instead of hanging.
const wait = 10 * time.Second

// sentinel is a Secret value that must never appear in any message.
const sentinel = "SENTINEL-7f3a9c-do-not-leak"

func testScheme(t testing.TB) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, kickv1alpha1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// secret returns a Secret that opted in to notifications (see unlabeled).
func secret(name string, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: name,
		Labels: map[string]string{kickv1alpha1.NotificationSecretLabel: kickv1alpha1.NotificationSecretAllowed}}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

// unlabeled is s with its labels replaced: without the opt-in label by default.
func unlabeled(s *corev1.Secret, labels ...string) *corev1.Secret {
	s = s.DeepCopy()
	s.Labels = map[string]string{}
	for i := 0; i+1 < len(labels); i += 2 {
		s.Labels[labels[i]] = labels[i+1]
	}
	return s
}

func policy(url string, mutate ...func(*kickv1alpha1.WebhookSpec)) *kickv1alpha1.NotificationPolicy {
	p := &kickv1alpha1.NotificationPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "hook", UID: "uid-1", Generation: 1},
		Spec:       kickv1alpha1.NotificationPolicySpec{Webhook: kickv1alpha1.WebhookSpec{URL: url}},
	}
	for _, m := range mutate {
		m(&p.Spec.Webhook)
	}
	return p
}

// build runs buildConfig against a fake API server holding secrets.
func build(t testing.TB, p *kickv1alpha1.NotificationPolicy, g *guard, prev *deliveryConfig, secrets ...client.Object) (*deliveryConfig, *problem) {
	t.Helper()
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(secrets...).Build()
	if g == nil {
		g = newGuard(nil, nil)
	}
	cfg, prob, err := buildConfig(context.Background(), newSecretReader(c, testNS), p, g, prev)
	if err != nil {
		t.Fatal(err)
	}
	return cfg, prob
}

// mustBuild is build for a valid policy, with a short retry backoff.
func mustBuild(t testing.TB, p *kickv1alpha1.NotificationPolicy, g *guard, secrets ...client.Object) *deliveryConfig {
	t.Helper()
	cfg, prob := build(t, p, g, nil, secrets...)
	if prob != nil {
		t.Fatalf("policy rejected: %s: %s", prob.reason, prob.message)
	}
	cfg.backoffBase = 20 * time.Millisecond
	cfg.client = newRetryClient(cfg.transport, cfg.backoffBase)
	t.Cleanup(cfg.transport.CloseIdleConnections)
	return cfg
}

func denyLoopback() *guard {
	return newGuard([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, nil)
}

func phaseChanged(to string) router.PhaseChanged {
	return router.PhaseChanged{
		Request:      router.RequestRef{Namespace: testNS, Name: "web-1a2b", UID: "req-uid"},
		From:         "Executing",
		To:           to,
		Target:       router.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: testNS, Name: "web"},
		TargetLabels: map[string]string{"app": "web"},
		Provider:     "argocd",
		Time:         time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC),
		Outcome:      "RestartCompleted",
	}
}

// gateChanged is a gate decision about the request of phaseChanged: held back by the Argo CD
// sync window until 02:00 UTC, or allowed.
func gateChanged(allowed bool) router.GateChanged {
	ev := router.GateChanged{
		Request:      router.RequestRef{Namespace: testNS, Name: "web-1a2b", UID: "req-uid"},
		Target:       router.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: testNS, Name: "web"},
		TargetLabels: map[string]string{"app": "web"},
		Policy:       "nightly",
		Provider:     "argocd",
		Owner:        "Application argocd/web",
		Stage:        "GitOps",
		Reason:       "OutsideSchedule",
		Cause:        router.ObjectRef{APIVersion: "argoproj.io/v1alpha1", Kind: "AppProject", Namespace: "argocd", Name: "shop"},
		OpensAt:      time.Date(2026, 3, 2, 2, 0, 0, 0, time.UTC),
		Time:         time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC),
	}
	if allowed {
		ev.Allowed, ev.Stage, ev.Reason, ev.Cause, ev.OpensAt = true, "", "Allowed", router.ObjectRef{}, time.Time{}
		ev.Time = ev.Time.Add(time.Hour)
	}
	return ev
}

func keyOf(p *kickv1alpha1.NotificationPolicy) types.NamespacedName {
	return types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
}
