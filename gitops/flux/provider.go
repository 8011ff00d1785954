package flux

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

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
	// The provider never reads or watches a kind that is off.
	Kustomizations bool
	HelmReleases   bool
	// Workloads are the workload kinds the manager restarts (from its
	// workload registry); ClaimIndex covers each of them.
	Workloads gitops.Workloads
}

// ClaimIndex indexes workloads by the Flux objects their owner labels name
// (claimKey), so a Kustomization or HelmRelease that appears, or changes
// before its inventory lists them, wakes the requests of the workloads that
// claim it.
const ClaimIndex = "flux.kick.corewire.io/claimed-owner"

// claimKey is the ClaimIndex value of an owner.
func claimKey(r ownerRef) string { return r.Kind + "/" + r.Namespace + "/" + r.Name }

// indexClaims is the indexer of ClaimIndex: every owner a workload's
// complete, well-formed label pairs name (malformed labels claim nothing).
func indexClaims(obj client.Object) []string {
	refs, _ := labelOwners(obj.GetLabels())
	keys := make([]string, 0, len(refs))
	for _, r := range refs {
		keys = append(keys, claimKey(r))
	}
	return keys
}

func (o Options) serves(kind string) bool {
	switch kind {
	case KustomizationKind.Kind:
		return o.Kustomizations
	case HelmReleaseKind.Kind:
		return o.HelmReleases
	}
	return false
}

// AddToScheme registers the typed Flux Kustomization and HelmRelease APIs.
func AddToScheme(s *runtime.Scheme) error {
	if err := kustomizev1.AddToScheme(s); err != nil {
		return err
	}
	return helmv2.AddToScheme(s)
}

// Provider is the Flux gitops.Provider. It reads Kustomizations and
// HelmReleases from the manager's cache (trimmed by CacheOptions); the
// request controller watches them through Wakes, so nothing polls.
type Provider struct {
	reader client.Reader
	scheme *runtime.Scheme
	opts   Options
}

// New registers ClaimIndex on the workload kinds of opts and returns the
// provider for mgr. Owners are found by name from a workload's labels; the
// index only serves the wakes.
func New(ctx context.Context, mgr ctrl.Manager, opts Options) (*Provider, error) {
	if err := opts.Workloads.IndexField(ctx, mgr.GetFieldIndexer(), ClaimIndex, indexClaims); err != nil {
		return nil, err
	}
	return newProvider(mgr.GetClient(), mgr.GetScheme(), opts), nil
}

func newProvider(reader client.Reader, scheme *runtime.Scheme, opts Options) *Provider {
	return &Provider{reader: reader, scheme: scheme, opts: opts}
}

// Name implements gitops.Provider.
func (p *Provider) Name() kickv1alpha1.GitOpsProvider { return kickv1alpha1.ProviderFlux }

// resolution is the outcome of finding a workload's Flux owner.
type resolution struct {
	// owner is set when exactly one owner was found and confirmed.
	owner *view
	// refs are the owners the labels name.
	refs []ownerRef
	// reason and message say why there is no confirmed owner.
	reason  kickv1alpha1.GateReason
	message string
	// unsure marks a failure to tell (owner not readable, or not in the
	// cache), as opposed to a clear "not an owner".
	unsure bool
}

// resolve finds the Flux object that owns w: the one its labels name,
// read from the cache and confirmed by its inventory when it has one.
func (p *Provider) resolve(ctx context.Context, w client.Object) resolution {
	target := p.describe(w)
	refs, problem := labelOwners(w.GetLabels())
	switch {
	case problem != "":
		return resolution{reason: kickv1alpha1.GateOwnerUnknown, unsure: true,
			message: fmt.Sprintf("the Flux labels of %s are malformed: %s", target, problem)}
	case len(refs) == 0:
		return resolution{reason: kickv1alpha1.GateOwnerUnknown,
			message: fmt.Sprintf("%s is not managed by Flux: it carries neither the %s/%s labels of a Kustomization nor the %s/%s labels of a HelmRelease",
				target, KustomizeNameLabel, KustomizeNamespaceLabel, HelmNameLabel, HelmNamespaceLabel)}
	case len(refs) > 1:
		return resolution{refs: refs, reason: kickv1alpha1.GateAmbiguousOwner,
			message: fmt.Sprintf("the labels of %s name both %s and %s as its owner; KICK will not guess", target, refs[0], refs[1])}
	}
	ref := refs[0]
	if !p.opts.serves(ref.Kind) {
		return resolution{refs: refs, reason: kickv1alpha1.GateProviderUnavailable, unsure: true,
			message: fmt.Sprintf("the labels of %s name %s, but the API server does not serve %s objects, so the Flux integration cannot read it", target, ref, ref.Kind)}
	}
	obj := p.newObject(ref.Kind)
	if err := p.reader.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return resolution{refs: refs, reason: kickv1alpha1.GateOwnerUnknown, unsure: true,
				message: fmt.Sprintf("the labels of %s name %s as its owner, but that %s does not exist", target, ref, ref.Kind)}
		}
		return resolution{refs: refs, reason: kickv1alpha1.GateProviderUnavailable, unsure: true,
			message: fmt.Sprintf("cannot read %s, the owner of %s: %v", ref, target, err)}
	}
	v, _ := viewOf(obj)
	gk, err := p.groupKind(w)
	if err != nil {
		return resolution{refs: refs, reason: kickv1alpha1.GateProviderUnavailable, unsure: true,
			message: fmt.Sprintf("cannot tell the kind of %s: %v", target, err)}
	}
	if _, ok := workloadKinds[gk]; !ok {
		// The cache keeps only workload entries of inventories, so an
		// object of another kind could never be confirmed.
		return resolution{refs: refs, reason: kickv1alpha1.GateProviderUnavailable, unsure: true,
			message: fmt.Sprintf("the Flux provider does not handle %s objects (%s)", gk.Kind, target)}
	}
	if id := inventoryID(w.GetNamespace(), w.GetName(), gk); !v.lists(id) {
		return resolution{refs: refs, reason: kickv1alpha1.GateOwnerUnknown,
			message: fmt.Sprintf("the labels of %s name %s, but its inventory does not list %s, so it does not apply this workload (stale or copied labels?)", target, ref, id)}
	}
	return resolution{owner: &v, refs: refs}
}

// Owners implements gitops.Provider for Auto. It returns the confirmed
// owner; both label pairs give both owners, so Auto reports the ambiguity
// as Decide does; an owner the labels name but the inventory disowns gives
// none. An owner that cannot be read or is not in the cache is an error:
// Flux cannot tell right now, and Auto says so instead of pretending the
// workload has no owner.
func (p *Provider) Owners(ctx context.Context, w client.Object) ([]kickv1alpha1.GitOpsOwner, error) {
	res := p.resolve(ctx, w)
	switch {
	case res.owner != nil:
		return []kickv1alpha1.GitOpsOwner{*res.owner.owner()}, nil
	case res.reason == kickv1alpha1.GateAmbiguousOwner:
		out := make([]kickv1alpha1.GitOpsOwner, 0, len(res.refs))
		for _, r := range res.refs {
			out = append(out, kickv1alpha1.GitOpsOwner{Provider: kickv1alpha1.ProviderFlux, APIVersion: apiVersionOf(r.Kind),
				Kind: r.Kind, Namespace: r.Namespace, Name: r.Name})
		}
		return out, nil
	case res.unsure:
		return nil, errors.New(res.message)
	}
	return nil, nil
}

// Decide implements gitops.Provider.
func (p *Provider) Decide(ctx context.Context, w client.Object, policy *kickv1alpha1.KickPolicy, _ time.Time) gitops.Decision {
	res := p.resolve(ctx, w)
	if res.owner == nil {
		return gitops.Decision{Reason: res.reason, Provider: kickv1alpha1.ProviderFlux, Message: res.message}
	}
	return decide(*res.owner, policy.Spec.RequiresReconciled())
}

// Wakes implements gitops.Provider: a change to a served Flux kind wakes
// the requests whose owner it is and the requests of the workloads that may
// have had no owner until now: those its inventory lists and those whose
// labels name it (through ClaimIndex), which covers an owner created after
// the workload, before it has an inventory.
func (p *Provider) Wakes() []gitops.Wake {
	var out []gitops.Wake
	if p.opts.Kustomizations {
		out = append(out, gitops.Wake{Object: &kustomizev1.Kustomization{}, Keys: p.wakeKeys})
	}
	if p.opts.HelmReleases {
		out = append(out, gitops.Wake{Object: &helmv2.HelmRelease{}, Keys: p.wakeKeys})
	}
	return out
}

// wakeKeys returns the wake keys of a Kustomization or HelmRelease.
func (p *Provider) wakeKeys(ctx context.Context, obj client.Object) []string {
	v, ok := viewOf(obj)
	if !ok {
		return nil
	}
	keys := []string{gitops.OwnerKey(v.ref.Kind, v.ref.Namespace, v.ref.Name)}
	for _, id := range v.inventory {
		if ns, kind, name, ok := workloadEntry(id); ok {
			keys = append(keys, gitops.TargetKey(ns, kind, name))
		}
	}
	for _, k := range p.opts.Workloads.TargetKeys(ctx, p.reader, ClaimIndex, claimKey(v.ref)) {
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	return keys
}

func (p *Provider) newObject(kind string) client.Object {
	if kind == HelmReleaseKind.Kind {
		return &helmv2.HelmRelease{}
	}
	return &kustomizev1.Kustomization{}
}

func apiVersionOf(kind string) string {
	if kind == HelmReleaseKind.Kind {
		return helmv2.GroupVersion.String()
	}
	return kustomizev1.GroupVersion.String()
}

// groupKind returns the API group and kind of a workload object.
func (p *Provider) groupKind(w client.Object) (groupKind, error) {
	gvk, err := apiutil.GVKForObject(w, p.scheme)
	if err != nil {
		return groupKind{}, err
	}
	return groupKind{Group: gvk.Group, Kind: gvk.Kind}, nil
}

// describe names a workload for messages, e.g. "Deployment shop/web".
func (p *Provider) describe(w client.Object) string {
	kind := "workload"
	if gk, err := p.groupKind(w); err == nil {
		kind = gk.Kind
	}
	return kind + " " + w.GetNamespace() + "/" + w.GetName()
}
