package main

import (
	"flag"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/gitops/flux"
	"github.com/kick-operator/kick/gitops/kinds"
	"github.com/kick-operator/kick/restart/csi"
	"github.com/kick-operator/kick/restart/rollout"
)

func parsed(t *testing.T, args ...string) options {
	t.Helper()
	var o options
	fs := flag.NewFlagSet("kick-manager", flag.ContinueOnError)
	o.bind(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return o
}

func served(kinds ...schema.GroupVersionKind) kindProbe {
	return func(k schema.GroupVersionKind) (bool, error) {
		for _, s := range kinds {
			if s == k {
				return true, nil
			}
		}
		return false, nil
	}
}

func TestProbeIntegrations(t *testing.T) {
	all := allKinds()
	cases := []struct {
		name       string
		args       []string
		served     []schema.GroupVersionKind
		argo, kust bool
		helm, karg bool
		skipped    []string
		why        map[kickv1alpha1.GitOpsProvider]string
	}{
		{name: "defaults on a cluster with everything", served: all, argo: true, kust: true, helm: true,
			why: map[kickv1alpha1.GitOpsProvider]string{kickv1alpha1.ProviderKargo: "--enable-kargo=false"}},
		{name: "kargo enabled", args: []string{"--enable-kargo"}, served: all, argo: true, kust: true, helm: true, karg: true},
		{name: "no CRDs at all", args: []string{"--enable-kargo"}, skipped: []string{"Argo CD", "Flux Kustomization", "Flux HelmRelease", "Kargo"},
			why: map[kickv1alpha1.GitOpsProvider]string{
				kickv1alpha1.ProviderArgoCD: "argoproj.io/v1alpha1, Kind=Application is not served",
				kickv1alpha1.ProviderFlux:   "neither Kustomizations nor HelmReleases",
				kickv1alpha1.ProviderKargo:  "Kind=Stage is not served",
			}},
		{name: "only HelmRelease", served: []schema.GroupVersionKind{flux.HelmReleaseKind}, helm: true,
			skipped: []string{"Argo CD", "Flux Kustomization"}},
		{name: "kargo without Argo CD", args: []string{"--enable-kargo"}, served: kinds.Kargo(),
			skipped: []string{"Argo CD", "Flux Kustomization", "Flux HelmRelease", "Kargo (needs the Argo CD integration)"},
			why:     map[kickv1alpha1.GitOpsProvider]string{kickv1alpha1.ProviderKargo: "needs the Argo CD integration"}},
		{name: "disabled by flag", args: []string{"--enable-argocd=false", "--enable-flux=false"}, served: all,
			why: map[kickv1alpha1.GitOpsProvider]string{kickv1alpha1.ProviderArgoCD: "--enable-argocd=false", kickv1alpha1.ProviderFlux: "--enable-flux=false"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var skipped []string
			in, err := probeIntegrations(parsed(t, tc.args...), served(tc.served...), func(name string, _ schema.GroupVersionKind) {
				skipped = append(skipped, name)
			})
			if err != nil {
				t.Fatal(err)
			}
			if in.argoCD != tc.argo || in.fluxKustomize != tc.kust || in.fluxHelm != tc.helm || in.kargo != tc.karg {
				t.Errorf("active argo=%v kustomize=%v helm=%v kargo=%v, want %v %v %v %v",
					in.argoCD, in.fluxKustomize, in.fluxHelm, in.kargo, tc.argo, tc.kust, tc.helm, tc.karg)
			}
			if strings.Join(skipped, "|") != strings.Join(tc.skipped, "|") {
				t.Errorf("skipped %q, want %q", skipped, tc.skipped)
			}
			for p, want := range tc.why {
				if ok, why := in.gitops.Available(p); ok || !strings.Contains(why, want) {
					t.Errorf("%s: available=%v %q, want unavailable saying %q", p, ok, why, want)
				}
			}
		})
	}
}

func TestProbeWorkloadIntegrations(t *testing.T) {
	cases := []struct {
		name          string
		args          []string
		served        []schema.GroupVersionKind
		rollouts, csi bool
		skipped       map[string]schema.GroupVersionKind
	}{
		{name: "off by default", served: []schema.GroupVersionKind{rollout.GVK, csi.PodStatusKind, csi.ClassKind}},
		{name: "both enabled and served", args: []string{"--enable-argo-rollouts", "--enable-csi-integration"},
			served: []schema.GroupVersionKind{rollout.GVK, csi.PodStatusKind, csi.ClassKind}, rollouts: true, csi: true},
		{name: "enabled, nothing served", args: []string{"--enable-argo-rollouts", "--enable-csi-integration"},
			skipped: map[string]schema.GroupVersionKind{"Argo Rollouts": rollout.GVK, "Secrets Store CSI": csi.PodStatusKind}},
		{name: "CSI without SecretProviderClass", args: []string{"--enable-csi-integration"}, served: []schema.GroupVersionKind{csi.PodStatusKind},
			skipped: map[string]schema.GroupVersionKind{"Secrets Store CSI": csi.ClassKind}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"--enable-argocd=false", "--enable-flux=false"}, tc.args...)
			skipped := map[string]schema.GroupVersionKind{}
			in, err := probeIntegrations(parsed(t, args...), served(tc.served...), func(name string, gvk schema.GroupVersionKind) {
				if _, dup := skipped[name]; dup {
					t.Errorf("%s skipped twice", name)
				}
				skipped[name] = gvk
			})
			if err != nil {
				t.Fatal(err)
			}
			if in.argoRollouts != tc.rollouts || in.csi != tc.csi {
				t.Errorf("active rollouts=%v csi=%v, want %v %v", in.argoRollouts, in.csi, tc.rollouts, tc.csi)
			}
			if len(skipped) != len(tc.skipped) {
				t.Errorf("skipped %v, want %v", skipped, tc.skipped)
			}
			for name, gvk := range tc.skipped {
				if skipped[name] != gvk {
					t.Errorf("%s skipped for %v, want %v", name, skipped[name], gvk)
				}
			}
			_, rolloutKind := in.workloads().Lookup(kickv1alpha1.TargetRollout)
			if rolloutKind != tc.rollouts {
				t.Errorf("workload registry has Rollout = %v, want %v", rolloutKind, tc.rollouts)
			}
			// The GitOps providers get the same kinds (their claim
			// indexes cover Rollouts when the integration runs).
			handed := gitopsWorkloads(in.workloads())
			if len(handed) != len(in.workloads().Kinds()) {
				t.Errorf("providers get %d workload kinds, the registry has %d", len(handed), len(in.workloads().Kinds()))
			}
			if k, ok := handed.Of(&rollout.Rollout{}); ok != tc.rollouts || (ok && (k.Target != kickv1alpha1.TargetRollout || k.Group() != "argoproj.io")) {
				t.Errorf("providers see Rollouts as %+v (%v), want %v", k, ok, tc.rollouts)
			}
			if k, ok := handed.Of(&appsv1.Deployment{}); !ok || k.Target != kickv1alpha1.TargetDeployment || k.Group() != "apps" {
				t.Errorf("providers see Deployments as %+v (%v)", k, ok)
			}
		})
	}
}

func TestArgoCDTrackingMethodIsValidated(t *testing.T) {
	for _, method := range []string{"annotation", "label", "annotation+label"} {
		o := parsed(t, "--argocd-tracking-method", method)
		if err := o.validate(); err != nil {
			t.Errorf("%s refused: %v", method, err)
		}
	}
	o := parsed(t, "--argocd-tracking-method", "labels")
	err := o.validate()
	if err == nil || !strings.Contains(err.Error(), `--argocd-tracking-method must be annotation, label or annotation+label, got "labels"`) {
		t.Errorf("a bad tracking method gave %v", err)
	}
}
