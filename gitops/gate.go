package gitops

import (
	"context"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
)

// Decision is the GitOps stage's answer for one workload at one moment.
type Decision struct {
	// Reason is GateAllowed or why the restart must wait.
	Reason kickv1alpha1.GateReason
	// Message explains the decision to a person.
	Message string
	// RequeueAt, when set, is when the decision may change without any
	// object changing (a sync-window boundary).
	RequeueAt time.Time
	// Provider is the provider that decided (after Auto detection).
	Provider kickv1alpha1.GitOpsProvider
	// Owner is the resolved owner, when there is exactly one.
	Owner *kickv1alpha1.GitOpsOwner
}

// Allowed reports whether the restart may run.
func (d Decision) Allowed() bool { return d.Reason == kickv1alpha1.GateAllowed }

// Gate decides the GitOps stage for a workload under a policy.
type Gate interface {
	Decide(ctx context.Context, workload client.Object, policy *kickv1alpha1.KickPolicy, now time.Time) Decision
}

// Providers is the Gate used by the restart pipeline. Provider None always
// allows; a provider that is not registered (its integration is off or its
// CRDs are absent) makes the request wait with ProviderUnavailable, because
// restarting without the owner's consent would defeat the gate.
type Providers map[kickv1alpha1.GitOpsProvider]Gate

// Decide implements Gate.
func (p Providers) Decide(ctx context.Context, w client.Object, policy *kickv1alpha1.KickPolicy, now time.Time) Decision {
	provider := policy.Spec.EffectiveProvider()
	if provider == kickv1alpha1.ProviderNone {
		return Decision{Reason: kickv1alpha1.GateAllowed, Provider: provider, Message: "no GitOps provider configured"}
	}
	if g, ok := p[provider]; ok {
		return g.Decide(ctx, w, policy, now)
	}
	return Decision{
		Reason:   kickv1alpha1.GateProviderUnavailable,
		Provider: provider,
		Message:  fmt.Sprintf("KickPolicy %s asks for provider %s, but that integration is not active in this manager", policy.Name, provider),
	}
}
