//go:build !noargocd

package main

import (
	"context"
	"fmt"
	"maps"

	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kick-operator/kick/gitops"
	"github.com/kick-operator/kick/gitops/argocd"
	"github.com/kick-operator/kick/gitops/kargo"
	"github.com/kick-operator/kick/restart/discovery"
	"github.com/kick-operator/kick/restart/observe"
)

// This build links the Argo CD and Kargo integrations. The typed Argo CD
// API brings hundreds of packages whose initialisation alone costs tens of
// megabytes, so the lean build (-tags noargocd, argocd_lean.go) leaves them
// out and hands the process over to this build only when a cluster serves
// Argo CD (see handover.go).

// buildName says which build this is, in the start-up log.
const buildName = "argocd"

// argoCDLinked reports whether this build can run the Argo CD integration.
const argoCDLinked = true

func addArgoCDToScheme(s *k8sruntime.Scheme) error { return argocd.AddToScheme(s) }

func (in *integrations) argoCDOptions() argocd.Options {
	return argocd.Options{
		Namespace:             in.argoFlags.argoCDNamespace,
		ApplicationNamespaces: in.argoFlags.argoCDAppNSs,
		TrackingMethod:        in.argoFlags.argoCDTrackingMethod,
		InstallationID:        in.argoFlags.argoCDInstallationID,
		LabelKey:              in.argoFlags.argoCDLabelKey,
	}
}

func (in *integrations) argoCDCacheOptions(byObject map[client.Object]cache.ByObject) {
	maps.Copy(byObject, argocd.CacheOptions(in.argoCDOptions()))
	if in.kargo {
		maps.Copy(byObject, kargo.CacheOptions())
	}
}

// followArgoCDSettings keeps argocd-cm in the cache of ConfigMaps, which
// holds only consumed ones otherwise: the integration watches it by name.
func (in *integrations) followArgoCDSettings(sources *observe.SourceCache) {
	sources.Follow(discovery.KindConfigMap, in.argoFlags.argoCDNamespace, argocd.SettingsConfigMap)
}

func (in *integrations) registerArgoCD(ctx context.Context, mgr ctrl.Manager, workloads gitops.Workloads) error {
	opts := in.argoCDOptions()
	opts.Workloads = workloads
	argo, err := argocd.New(ctx, mgr, opts)
	if err != nil {
		return fmt.Errorf("set up the Argo CD integration: %w", err)
	}
	in.gitops.Register(argo)
	if in.kargo {
		k, err := kargo.New(ctx, mgr, argo)
		if err != nil {
			return fmt.Errorf("set up the Kargo integration: %w", err)
		}
		in.gitops.Register(k)
	}
	return nil
}
