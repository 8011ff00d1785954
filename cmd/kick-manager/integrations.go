package main

import (
	"context"
	"fmt"
	"maps"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/gitops"
	"github.com/kick-operator/kick/gitops/flux"
	"github.com/kick-operator/kick/gitops/kinds"
	"github.com/kick-operator/kick/restart/csi"
	"github.com/kick-operator/kick/restart/rollout"
	"github.com/kick-operator/kick/restart/workload"
)

// integrations is what the start-up probe decided: which optional
// integrations run in this manager. It is fixed for the process lifetime,
// because registering a watch for a kind the API server does not serve
// aborts the manager.
type integrations struct {
	argoCD        bool
	fluxKustomize bool
	fluxHelm      bool
	kargo         bool
	argoRollouts  bool
	csi           bool
	// holdsOff is set when the API server does not serve KickHolds (CRDs
	// of an older release): holds are then neither watched nor read.
	holdsOff bool
	// argoFlags are the --argocd-* settings, read by the Argo CD build.
	argoFlags options
	gitops    *gitops.Registry
}

// kindProbe reports whether the API server serves a kind.
type kindProbe func(schema.GroupVersionKind) (bool, error)

// discoveryProbe asks the API server's discovery once per group/version.
func discoveryProbe(cfg *rest.Config) (kindProbe, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	served := map[schema.GroupVersion]map[string]bool{}
	return func(gvk schema.GroupVersionKind) (bool, error) {
		gv := gvk.GroupVersion()
		kinds, ok := served[gv]
		if !ok {
			list, err := dc.ServerResourcesForGroupVersion(gv.String())
			if err != nil && !apierrors.IsNotFound(err) {
				return false, fmt.Errorf("discover %s: %w", gv, err)
			}
			kinds = map[string]bool{}
			if list != nil {
				for _, r := range list.APIResources {
					if !strings.Contains(r.Name, "/") {
						kinds[r.Kind] = true
					}
				}
			}
			served[gv] = kinds
		}
		return kinds[gvk.Kind], nil
	}, nil
}

// probeIntegrations decides, once, which enabled integrations can run, and
// logs one line for each enabled one it skips, naming the kind it did not
// find.
func probeIntegrations(opts options, probe kindProbe, logSkip func(name string, missing schema.GroupVersionKind)) (*integrations, error) {
	in := &integrations{gitops: gitops.NewRegistry()}
	missingOf := func(kinds ...schema.GroupVersionKind) (*schema.GroupVersionKind, error) {
		for _, k := range kinds {
			ok, err := probe(k)
			if err != nil {
				return nil, err
			}
			if !ok {
				return &k, nil
			}
		}
		return nil, nil
	}
	skip := func(provider kickv1alpha1.GitOpsProvider, name string, missing schema.GroupVersionKind) {
		logSkip(name, missing)
		in.gitops.MarkUnavailable(provider, fmt.Sprintf("the %s integration was skipped at start-up: %s is not served by the API server", name, missing))
	}
	off := func(provider kickv1alpha1.GitOpsProvider, flag string) {
		in.gitops.MarkUnavailable(provider, fmt.Sprintf("the manager runs with --%s=false", flag))
	}

	if opts.enableArgoCD {
		missing, err := missingOf(kinds.ArgoCD()...)
		if err != nil {
			return nil, err
		}
		if missing != nil {
			skip(kickv1alpha1.ProviderArgoCD, "Argo CD", *missing)
		} else {
			in.argoCD = true
			in.argoFlags = opts
		}
	} else {
		off(kickv1alpha1.ProviderArgoCD, "enable-argocd")
	}

	if opts.enableFlux {
		for _, k := range []struct {
			on   *bool
			kind schema.GroupVersionKind
		}{{&in.fluxKustomize, flux.KustomizationKind}, {&in.fluxHelm, flux.HelmReleaseKind}} {
			missing, err := missingOf(k.kind)
			if err != nil {
				return nil, err
			}
			if missing != nil {
				logSkip("Flux "+k.kind.Kind, *missing)
			}
			*k.on = missing == nil
		}
		if !in.fluxKustomize && !in.fluxHelm {
			in.gitops.MarkUnavailable(kickv1alpha1.ProviderFlux, "the Flux integration was skipped at start-up: neither Kustomizations nor HelmReleases are served by the API server")
		}
	} else {
		off(kickv1alpha1.ProviderFlux, "enable-flux")
	}

	if opts.enableKargo {
		missing, err := missingOf(kinds.Kargo()...)
		if err != nil {
			return nil, err
		}
		switch {
		case missing != nil:
			skip(kickv1alpha1.ProviderKargo, "Kargo", *missing)
		case !in.argoCD:
			in.gitops.MarkUnavailable(kickv1alpha1.ProviderKargo, "the Kargo integration needs the Argo CD integration, which is not active")
			logSkip("Kargo (needs the Argo CD integration)", kinds.ArgoCDApplication)
		default:
			in.kargo = true
		}
	} else {
		off(kickv1alpha1.ProviderKargo, "enable-kargo")
	}

	if opts.enableArgoRollouts {
		missing, err := missingOf(rollout.GVK)
		if err != nil {
			return nil, err
		}
		if missing != nil {
			logSkip("Argo Rollouts", *missing)
		}
		in.argoRollouts = missing == nil
	}
	if opts.enableCSI {
		missing, err := missingOf(csi.PodStatusKind, csi.ClassKind)
		if err != nil {
			return nil, err
		}
		if missing != nil {
			logSkip("Secrets Store CSI", *missing)
		}
		in.csi = missing == nil
	}
	return in, nil
}

// workloads returns the workload kinds this manager restarts: the apps/v1
// kinds, plus Rollouts when that integration is active. Every controller
// gets this one value.
func (in *integrations) workloads() *workload.Registry {
	kinds := workload.Builtin()
	if in.argoRollouts {
		kinds = rollout.Register(kinds)
	}
	return kinds
}

// addToScheme registers the types of the active integrations.
func (in *integrations) addToScheme(s *k8sruntime.Scheme) error {
	if in.argoCD {
		if err := addArgoCDToScheme(s); err != nil {
			return err
		}
	}
	if in.fluxKustomize || in.fluxHelm {
		if err := flux.AddToScheme(s); err != nil {
			return err
		}
	}
	if in.argoRollouts {
		if err := rollout.AddToScheme(s); err != nil {
			return err
		}
	}
	if in.csi {
		if err := csi.AddToScheme(s); err != nil {
			return err
		}
	}
	return nil
}

// cacheOptions adds the per-kind cache settings of the active integrations.
func (in *integrations) cacheOptions(byObject map[client.Object]cache.ByObject) {
	if in.argoCD {
		in.argoCDCacheOptions(byObject)
	}
	if in.fluxKustomize || in.fluxHelm {
		maps.Copy(byObject, flux.CacheOptions(in.fluxOptions()))
	}
	if in.argoRollouts {
		byObject[&rollout.Rollout{}] = rollout.CacheOptions()
	}
}

func (in *integrations) fluxOptions() flux.Options {
	return flux.Options{Kustomizations: in.fluxKustomize, HelmReleases: in.fluxHelm}
}

// gitopsWorkloads hands the registry's workload kinds to the GitOps
// providers, which index and list workloads by the owner they claim but do
// not import the restart pipeline.
func gitopsWorkloads(kinds *workload.Registry) gitops.Workloads {
	var out gitops.Workloads
	for _, k := range kinds.Kinds() {
		out = append(out, gitops.WorkloadKind{Target: k.Target, APIVersion: k.APIVersion, New: k.New, NewList: k.NewList})
	}
	return out
}

// registerProviders builds the active GitOps providers (their indexes and
// watches) over the manager's workload kinds and registers them with the
// gate registry.
func (in *integrations) registerProviders(ctx context.Context, mgr ctrl.Manager, kinds *workload.Registry) error {
	workloads := gitopsWorkloads(kinds)
	if in.argoCD {
		if err := in.registerArgoCD(ctx, mgr, workloads); err != nil {
			return err
		}
	}
	if in.fluxKustomize || in.fluxHelm {
		opts := in.fluxOptions()
		opts.Workloads = workloads
		f, err := flux.New(ctx, mgr, opts)
		if err != nil {
			return fmt.Errorf("set up the Flux integration: %w", err)
		}
		in.gitops.Register(f)
	}
	return nil
}

// withoutArgoCD turns the Argo CD integration (and Kargo, which builds on it)
// off after the probe activated it, with the reason its policies report.
func (in *integrations) withoutArgoCD(reason string) {
	in.argoCD = false
	in.gitops.MarkUnavailable(kickv1alpha1.ProviderArgoCD, reason)
	if in.kargo {
		in.kargo = false
		in.gitops.MarkUnavailable(kickv1alpha1.ProviderKargo, "the Kargo integration needs the Argo CD integration, which is not active: "+reason)
	}
}
