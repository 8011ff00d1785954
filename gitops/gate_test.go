package gitops

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
)

// stubProvider is a provider with fixed owners and decision.
type stubProvider struct {
	name   kickv1alpha1.GitOpsProvider
	owners []kickv1alpha1.GitOpsOwner
	err    error
	asked  int
}

func (s *stubProvider) Name() kickv1alpha1.GitOpsProvider { return s.name }
func (s *stubProvider) Owners(context.Context, client.Object) ([]kickv1alpha1.GitOpsOwner, error) {
	return s.owners, s.err
}
func (s *stubProvider) Wakes() []Wake { return nil }
func (s *stubProvider) Decide(context.Context, client.Object, *kickv1alpha1.KickPolicy, time.Time) Decision {
	s.asked++
	return Decision{Reason: kickv1alpha1.GateOwnerOutOfSync, Provider: s.name, Message: string(s.name) + " decided"}
}

func policyWith(p kickv1alpha1.GitOpsProvider) *kickv1alpha1.KickPolicy {
	return &kickv1alpha1.KickPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec: kickv1alpha1.KickPolicySpec{GitOps: &kickv1alpha1.GitOpsSpec{Provider: p}}}
}

func owner(kind, name string) kickv1alpha1.GitOpsOwner {
	return kickv1alpha1.GitOpsOwner{Kind: kind, Namespace: "ops", Name: name}
}

func TestRegistryRoutesToTheNamedProvider(t *testing.T) {
	w := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}}
	argo := &stubProvider{name: kickv1alpha1.ProviderArgoCD}
	r := NewRegistry()
	r.Register(argo)
	r.MarkUnavailable(kickv1alpha1.ProviderFlux, "the Flux CRDs are not installed")

	if d := r.Decide(context.Background(), w, policyWith(kickv1alpha1.ProviderNone), time.Now()); !d.Allowed() {
		t.Errorf("None must allow, got %+v", d)
	}
	if d := r.Decide(context.Background(), w, policyWith(kickv1alpha1.ProviderArgoCD), time.Now()); d.Reason != kickv1alpha1.GateOwnerOutOfSync || argo.asked != 1 {
		t.Errorf("ArgoCD must be decided by its provider, got %+v", d)
	}
	d := r.Decide(context.Background(), w, policyWith(kickv1alpha1.ProviderFlux), time.Now())
	if d.Reason != kickv1alpha1.GateProviderUnavailable || !strings.Contains(d.Message, "Flux CRDs are not installed") {
		t.Errorf("an inactive provider must wait with its reason, got %+v", d)
	}
	if ok, _ := r.Available(kickv1alpha1.ProviderKargo); ok {
		t.Error("Kargo reported available without a provider")
	}
	if ok, _ := r.Available(kickv1alpha1.ProviderAuto); !ok {
		t.Error("Auto must be available when Argo CD is")
	}
}

func TestAuto(t *testing.T) {
	w := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}}
	auto := policyWith(kickv1alpha1.ProviderAuto)
	cases := []struct {
		name       string
		argo, flux *stubProvider
		kargo      bool
		reason     kickv1alpha1.GateReason
		decidedBy  kickv1alpha1.GitOpsProvider
		message    string
	}{
		{name: "one Argo CD owner", reason: kickv1alpha1.GateOwnerOutOfSync, decidedBy: kickv1alpha1.ProviderArgoCD,
			argo: &stubProvider{owners: []kickv1alpha1.GitOpsOwner{owner("Application", "web")}}, flux: &stubProvider{}},
		{name: "one Flux owner", reason: kickv1alpha1.GateOwnerOutOfSync, decidedBy: kickv1alpha1.ProviderFlux,
			argo: &stubProvider{}, flux: &stubProvider{owners: []kickv1alpha1.GitOpsOwner{owner("Kustomization", "web")}}},
		{name: "owners in both", reason: kickv1alpha1.GateAmbiguousOwner, message: "Application ops/web, Kustomization ops/web",
			argo: &stubProvider{owners: []kickv1alpha1.GitOpsOwner{owner("Application", "web")}},
			flux: &stubProvider{owners: []kickv1alpha1.GitOpsOwner{owner("Kustomization", "web")}}},
		{name: "two in one provider", reason: kickv1alpha1.GateAmbiguousOwner, message: "Application ops/a, Application ops/b",
			argo: &stubProvider{owners: []kickv1alpha1.GitOpsOwner{owner("Application", "b"), owner("Application", "a")}}},
		{name: "no owner", reason: kickv1alpha1.GateProviderUnavailable, message: "found no GitOps owner",
			argo: &stubProvider{}, flux: &stubProvider{}},
		{name: "provider error", reason: kickv1alpha1.GateProviderUnavailable, message: "Flux: cache not synced",
			argo: &stubProvider{}, flux: &stubProvider{err: errors.New("cache not synced")}},
		{name: "no provider active", reason: kickv1alpha1.GateProviderUnavailable, message: "neither is active"},
		{name: "Kargo is never asked", reason: kickv1alpha1.GateProviderUnavailable, kargo: true, message: "neither is active"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := NewRegistry()
			if tc.argo != nil {
				tc.argo.name = kickv1alpha1.ProviderArgoCD
				r.Register(tc.argo)
			}
			if tc.flux != nil {
				tc.flux.name = kickv1alpha1.ProviderFlux
				r.Register(tc.flux)
			}
			if tc.kargo {
				r.Register(&stubProvider{name: kickv1alpha1.ProviderKargo, owners: []kickv1alpha1.GitOpsOwner{owner("Stage", "prod")}})
			}
			d := r.Decide(context.Background(), w, auto, time.Now())
			if d.Reason != tc.reason {
				t.Fatalf("reason %s, want %s (%s)", d.Reason, tc.reason, d.Message)
			}
			if tc.decidedBy != "" && (d.Provider != tc.decidedBy || d.Owner == nil) {
				t.Errorf("decided by %s with owner %v, want %s and an owner", d.Provider, d.Owner, tc.decidedBy)
			}
			if !strings.Contains(d.Message, tc.message) {
				t.Errorf("message %q does not say %q", d.Message, tc.message)
			}
		})
	}
}

func TestRequestKeys(t *testing.T) {
	kr := &kickv1alpha1.KickRequest{ObjectMeta: metav1.ObjectMeta{Namespace: "shop"}}
	kr.Spec.TargetRef.Kind, kr.Spec.TargetRef.Name = kickv1alpha1.TargetDeployment, "web"
	if got := RequestKeys(kr); len(got) != 1 || got[0] != TargetKey("shop", kickv1alpha1.TargetDeployment, "web") {
		t.Errorf("ownerless request keys: %v", got)
	}
	// A request some provider decided is also woken by that provider's
	// settings (argocd-cm for Argo CD), owner or not.
	kr.Status.Provider = kickv1alpha1.ProviderArgoCD
	if got := RequestKeys(kr); len(got) != 2 || got[1] != ProviderKey(kickv1alpha1.ProviderArgoCD) {
		t.Errorf("ownerless Argo CD request keys: %v", got)
	}
	kr.Status.Owner = &kickv1alpha1.GitOpsOwner{Kind: "Application", Namespace: "argocd", Name: "web", Stage: "shop:prod"}
	got := RequestKeys(kr)
	want := []string{TargetKey("shop", kickv1alpha1.TargetDeployment, "web"), ProviderKey(kickv1alpha1.ProviderArgoCD),
		OwnerKey("Application", "argocd", "web"), StageKey("shop:prod")}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("keys %v, want %v", got, want)
	}
}
