package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/gitops/flux"
	"github.com/kick-operator/kick/gitops/kinds"
)

func allKinds() []schema.GroupVersionKind {
	return append(append([]schema.GroupVersionKind{flux.KustomizationKind, flux.HelmReleaseKind}, kinds.ArgoCD()...), kinds.Kargo()...)
}

func TestHandOverToArgoCDBuild(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "kick-manager")
	var gotPath string
	var gotArgv []string
	orig := execve
	execve = func(path string, argv, _ []string) error { gotPath, gotArgv = path, argv; return nil }
	t.Cleanup(func() { execve = orig })

	err := handOverToArgoCDBuild(exe, []string{"--namespace", "kick"}, nil)
	if err == nil || !strings.Contains(err.Error(), "kick-manager-argocd is not installed next to "+exe) {
		t.Fatalf("without the Argo CD build: err = %v, want it named", err)
	}
	if gotPath != "" {
		t.Fatalf("exec was attempted without the binary: %s", gotPath)
	}

	full := filepath.Join(dir, argoCDBuild)
	if err := os.WriteFile(full, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := handOverToArgoCDBuild(exe, []string{"--namespace", "kick"}, nil); err != nil {
		t.Fatal(err)
	}
	if gotPath != full || !slices.Equal(gotArgv, []string{full, "--namespace", "kick"}) {
		t.Errorf("exec(%q, %q), want %q with the same arguments", gotPath, gotArgv, full)
	}
}

func TestWithoutArgoCDReportsWhy(t *testing.T) {
	in, err := probeIntegrations(parsed(t, "--enable-kargo"), served(allKinds()...), func(string, schema.GroupVersionKind) {})
	if err != nil {
		t.Fatal(err)
	}
	if !in.argoCD || !in.kargo {
		t.Fatalf("probe: argo=%v kargo=%v, want both active", in.argoCD, in.kargo)
	}
	in.withoutArgoCD("no Argo CD build")
	if in.argoCD || in.kargo {
		t.Errorf("still active: argo=%v kargo=%v", in.argoCD, in.kargo)
	}
	for _, p := range []kickv1alpha1.GitOpsProvider{kickv1alpha1.ProviderArgoCD, kickv1alpha1.ProviderKargo} {
		if ok, why := in.gitops.Available(p); ok || !strings.Contains(why, "no Argo CD build") {
			t.Errorf("%s: available=%v reason %q, want unavailable naming the cause", p, ok, why)
		}
	}
}

// TestLeanBuildLinksNoArgoCD guards the point of the lean build: nothing it
// links may import the Argo CD module.
func TestLeanBuildLinksNoArgoCD(t *testing.T) {
	out, err := exec.Command("go", "list", "-tags", "noargocd", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "github.com/argoproj/argo-cd/") {
			t.Errorf("the lean build links %s", pkg)
		}
	}
}
