package flux

import (
	"context"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/gitops"
)

// KustomizationKind and HelmReleaseKind are the upstream kinds the
// integration uses; the manager probes them at start-up and enables the
// integration for the ones that exist.
var (
	KustomizationKind = kustomizev1.GroupVersion.WithKind("Kustomization")
	HelmReleaseKind   = helmv2.GroupVersion.WithKind("HelmRelease")
)

// Options configure the Flux provider.
type Options struct {
	// Kustomizations and HelmReleases say which kinds exist in the cluster.
	Kustomizations bool
	HelmReleases   bool
}

// AddToScheme registers the typed Flux Kustomization and HelmRelease APIs.
func AddToScheme(s *runtime.Scheme) error {
	if err := kustomizev1.AddToScheme(s); err != nil {
		return err
	}
	return helmv2.AddToScheme(s)
}

// CacheOptions trims what the manager caches of Flux objects.
func CacheOptions(opts Options) map[client.Object]cache.ByObject {
	return nil
}

// Provider is the Flux gitops.Provider.
type Provider struct {
	reader client.Reader
	opts   Options
}

// New registers the provider's indexes with mgr and returns it.
func New(ctx context.Context, mgr ctrl.Manager, opts Options) (*Provider, error) {
	return &Provider{reader: mgr.GetClient(), opts: opts}, nil
}

// Name implements gitops.Provider.
func (p *Provider) Name() kickv1alpha1.GitOpsProvider { return kickv1alpha1.ProviderFlux }

// Owners implements gitops.Provider.
func (p *Provider) Owners(ctx context.Context, w client.Object) ([]kickv1alpha1.GitOpsOwner, error) {
	return nil, nil
}

// Decide implements gitops.Provider.
func (p *Provider) Decide(ctx context.Context, w client.Object, policy *kickv1alpha1.KickPolicy, now time.Time) gitops.Decision {
	return gitops.Decision{Reason: kickv1alpha1.GateProviderUnavailable, Provider: p.Name(), Message: "the Flux gate is not implemented yet"}
}

// Wakes implements gitops.Provider.
func (p *Provider) Wakes() []gitops.Wake { return nil }
