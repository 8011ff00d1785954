package kargo

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/gitops"
	"github.com/kick-operator/kick/gitops/argocd"
)

// Kinds are the upstream kinds the integration needs; the manager probes
// them at start-up and skips the integration when one is missing.
var Kinds = []schema.GroupVersionKind{
	{Group: "kargo.akuity.io", Version: "v1alpha1", Kind: "Stage"},
	{Group: "kargo.akuity.io", Version: "v1alpha1", Kind: "Promotion"},
}

// Provider is the Kargo gitops.Provider; it needs the Argo CD provider.
type Provider struct {
	reader client.Reader
	argo   *argocd.Provider
}

// New registers the provider's indexes and watches with mgr.
func New(ctx context.Context, mgr ctrl.Manager, argo *argocd.Provider) (*Provider, error) {
	return &Provider{reader: mgr.GetClient(), argo: argo}, nil
}

// Name implements gitops.Provider.
func (p *Provider) Name() kickv1alpha1.GitOpsProvider { return kickv1alpha1.ProviderKargo }

// Owners implements gitops.Provider.
func (p *Provider) Owners(ctx context.Context, w client.Object) ([]kickv1alpha1.GitOpsOwner, error) {
	return nil, nil
}

// Decide implements gitops.Provider.
func (p *Provider) Decide(ctx context.Context, w client.Object, policy *kickv1alpha1.KickPolicy, now time.Time) gitops.Decision {
	return gitops.Decision{Reason: kickv1alpha1.GateProviderUnavailable, Provider: p.Name(), Message: "the Kargo gate is not implemented yet"}
}

// Wakes implements gitops.Provider.
func (p *Provider) Wakes() []gitops.Wake { return nil }
