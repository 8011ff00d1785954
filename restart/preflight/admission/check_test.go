package admission

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

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
		{false, "kick: … and 196 more (196 of them restart) and 800 not assessed (over 200 consumers); see the audit annotation"},
		{true, "kick: … and 996 more (996 of them restart; see the audit annotation)"},
	} {
		c.DenyInDenyWindows = tc.deny
		a := c.Check(context.Background(), updateOf(t, s, nil))
		if len(a.Warnings) != preflight.MaxWarnings || a.Warnings[0] != "kick: restarts deployment/web-0000 now (policy default)" ||
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
