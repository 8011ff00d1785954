package admission

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/preflight"
)

// TestSharedSecretIsAnsweredForTheFirstConsumers: a write of a Secret that
// 1,000 Deployments consume assesses the first MaxAssessed (each restarts
// now) and counts the rest as not assessed; deny mode assesses them all.
// Both answer within the budget instead of "cannot assess".
func TestSharedSecretIsAnsweredForTheFirstConsumers(t *testing.T) {
	c := benchChecker(t)
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "shared", UID: "uid-shared", ResourceVersion: "9"},
		Data: map[string][]byte{"k": []byte("v")}}
	for _, tc := range []struct {
		deny    bool
		summary string
	}{
		{false, "kick: … and 197 more (197 of them restart) and 800 not assessed (over 200 consumers); see the audit annotation"},
		{true, "kick: … and 997 more (997 of them restart; see the audit annotation)"},
	} {
		c.DenyInDenyWindows = tc.deny
		a := c.Check(context.Background(), updateOf(t, s, nil))
		if len(a.Warnings) != preflight.MaxWarnings || !strings.HasPrefix(a.Warnings[0], "kick: plan of policy default: restarts ") ||
			a.Warnings[1] != "kick: restarts deployment/web-0000 now (policy default)" ||
			a.Warnings[preflight.MaxWarnings-1] != tc.summary {
			t.Errorf("deny mode %v: warnings %q", tc.deny, a.Warnings)
		}
		if a.Audit[preflight.AuditDecision] != "Restart" || !strings.HasPrefix(a.Audit[preflight.AuditConsumers], "restarts deployment/web-0000 now") ||
			len(a.Audit[preflight.AuditConsumers]) > preflight.MaxAudit {
			t.Errorf("deny mode %v: audit %.200q", tc.deny, a.Audit)
		}
	}
	// A Secret one of them consumes: one sentence.
	one := s.DeepCopy()
	one.Name, one.UID = "s-04711", types.UID("uid-s-04711")
	if a := c.Check(context.Background(), updateOf(t, one, nil)); len(a.Warnings) != 1 || a.Warnings[0] != "kick: restarts deployment/web-0471 now (policy default)" {
		t.Errorf("warnings %q", a.Warnings)
	}
}

// TestFanOutPlan: under a policy with a budget and a canary wave, the
// answer starts with the plan of the fan-out, and the consumers after the
// canary restart after it.
func TestFanOutPlan(t *testing.T) {
	c := benchChecker(t)
	ten := intstr.FromInt32(10)
	c.Client.(*memReader).add(&kickv1alpha1.KickPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "default"},
		Spec: kickv1alpha1.KickPolicySpec{Discovery: &kickv1alpha1.DiscoverySpec{WorkloadSelector: &metav1.LabelSelector{}},
			Restart: &kickv1alpha1.RestartSpec{MaxConcurrent: &ten, Waves: []kickv1alpha1.RestartWave{{Name: "canary",
				Selector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web-0000"}}, Bake: &metav1.Duration{Duration: 2 * time.Minute}}}}}})
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "shared", UID: "uid-shared", ResourceVersion: "9"},
		Data: map[string][]byte{"k": []byte("v")}}
	a := c.Check(context.Background(), updateOf(t, s, nil))
	if want := "plan of policy default: restarts 200 workloads, 10 at a time, wave canary (1) first (bake 2m), then 199 more, and 800 consumers not assessed"; a.Audit[preflight.AuditPlan] != want {
		t.Errorf("plan %q, want %q", a.Audit[preflight.AuditPlan], want)
	}
	if len(a.Warnings) < 3 || !strings.HasPrefix(a.Warnings[0], "kick: plan of policy default: restarts 200 workloads, 10 at a time, wave canary (1) first") ||
		a.Warnings[1] != "kick: restarts deployment/web-0000 now (policy default)" ||
		a.Warnings[2] != "kick: restarts deployment/web-0001 after the earlier waves of policy default (restart.waves)" {
		t.Errorf("warnings %q", a.Warnings)
	}
}
