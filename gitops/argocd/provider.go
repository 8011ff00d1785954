package argocd

import (
	"context"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/gitops"
)

// Kinds are the upstream kinds the integration needs; the manager probes
// them at start-up and skips the integration when one is missing.
var Kinds = []schema.GroupVersionKind{
	argov1alpha1.SchemeGroupVersion.WithKind("Application"),
	argov1alpha1.SchemeGroupVersion.WithKind("AppProject"),
}

// Options configure the Argo CD provider.
type Options struct {
	// Namespace is the Argo CD control-plane namespace (Applications,
	// AppProjects, argocd-cm).
	Namespace string
	// ApplicationNamespaces are further namespaces holding Applications.
	ApplicationNamespaces []string
	// TrackingMethod, InstallationID and LabelKey are used when argocd-cm
	// does not set them.
	TrackingMethod string
	InstallationID string
	LabelKey       string
}

// AddToScheme registers the typed Argo CD API.
func AddToScheme(s *runtime.Scheme) error { return argov1alpha1.AddToScheme(s) }

// CacheOptions restricts the manager's cache of Applications and
// AppProjects to the configured namespaces.
func CacheOptions(opts Options) map[client.Object]cache.ByObject {
	return nil
}

// Provider is the Argo CD gitops.Provider.
type Provider struct {
	reader client.Reader
	opts   Options
}

// New registers the provider's indexes with mgr and returns it.
func New(ctx context.Context, mgr ctrl.Manager, opts Options) (*Provider, error) {
	return &Provider{reader: mgr.GetClient(), opts: opts}, nil
}

// Name implements gitops.Provider.
func (p *Provider) Name() kickv1alpha1.GitOpsProvider { return kickv1alpha1.ProviderArgoCD }

// Owners implements gitops.Provider.
func (p *Provider) Owners(ctx context.Context, w client.Object) ([]kickv1alpha1.GitOpsOwner, error) {
	return nil, nil
}

// Decide implements gitops.Provider.
func (p *Provider) Decide(ctx context.Context, w client.Object, policy *kickv1alpha1.KickPolicy, now time.Time) gitops.Decision {
	return gitops.Decision{Reason: kickv1alpha1.GateProviderUnavailable, Provider: p.Name(), Message: "the Argo CD gate is not implemented yet"}
}

// Wakes implements gitops.Provider.
func (p *Provider) Wakes() []gitops.Wake { return nil }
