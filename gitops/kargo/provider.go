package kargo

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/gitops"
	"github.com/kick-operator/kick/gitops/argocd"
	"github.com/kick-operator/kick/gitops/kinds"
)

// The Kargo kinds KICK reads. They are read as unstructured objects: the
// Kargo Go module is too heavy to import for two fields.
var (
	StageKind     = kinds.KargoStage
	PromotionKind = kinds.KargoPromotion
)

// Kinds are the upstream kinds the integration needs; the manager probes
// them at start-up and skips the integration when one is missing.
var Kinds = kinds.Kargo()

// StageIndex indexes Promotions by the Stage they promote to (spec.stage).
const StageIndex = "kargo.kick.corewire.io/stage"

// unavailableRetry is when a decision that failed on a read error is tried
// again; nothing else would wake it.
const unavailableRetry = 30 * time.Second

func newObject(gvk schema.GroupVersionKind) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u
}

func newList(gvk schema.GroupVersionKind) *unstructured.UnstructuredList {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	return l
}

// Provider is the Kargo gitops.Provider; it needs the Argo CD provider.
type Provider struct {
	// reader is the manager's cache itself: the manager's client reads
	// unstructured objects from the API server, the cache serves them.
	reader client.Reader
	argo   *argocd.Provider
}

// New registers the provider's indexes and watches with mgr.
func New(ctx context.Context, mgr ctrl.Manager, argo *argocd.Provider) (*Provider, error) {
	if err := mgr.GetFieldIndexer().IndexField(ctx, newObject(PromotionKind), StageIndex, func(obj client.Object) []string {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return nil
		}
		if s := promotionStage(u); s != "" {
			return []string{s}
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("index Promotions by Stage: %w", err)
	}
	return &Provider{reader: mgr.GetCache(), argo: argo}, nil
}

// Name implements gitops.Provider.
func (p *Provider) Name() kickv1alpha1.GitOpsProvider { return kickv1alpha1.ProviderKargo }

// Owners implements gitops.Provider. Kargo is never detected by Auto: a
// policy asks for it by name.
func (p *Provider) Owners(ctx context.Context, w client.Object) ([]kickv1alpha1.GitOpsOwner, error) {
	return nil, nil
}

// Decide implements gitops.Provider: the owning Argo CD Application (as
// the Argo CD provider resolves it) must authorize exactly one Stage, no
// Promotion to that Stage may be in flight, and then the Argo CD gate
// decides.
func (p *Provider) Decide(ctx context.Context, w client.Object, policy *kickv1alpha1.KickPolicy, now time.Time) gitops.Decision {
	app, d := p.argo.Application(ctx, w)
	if app == nil {
		return p.relabel(d)
	}
	appName := "Application " + app.Namespace + "/" + app.Name
	d = gitops.Decision{Provider: p.Name(), Owner: d.Owner}
	d.Owner.Provider = p.Name()
	decide := func(reason kickv1alpha1.GateReason, msg string) gitops.Decision {
		d.Reason, d.Message = reason, msg
		return d
	}

	value, ok := app.Annotations[AuthorizedStageAnnotation]
	if !ok {
		return decide(kickv1alpha1.GateOwnerUnknown, fmt.Sprintf("%s has no %s annotation, so no Kargo Stage is known to manage it", appName, AuthorizedStageAnnotation))
	}
	ref, reason, msg := ParseAuthorizedStage(value)
	if reason != kickv1alpha1.GateAllowed {
		return decide(reason, appName+": "+msg)
	}
	d.Owner.Stage = ref.String()

	stage := newObject(StageKind)
	if err := p.reader.Get(ctx, client.ObjectKey{Namespace: ref.Project, Name: ref.Stage}, stage); err != nil {
		if apierrors.IsNotFound(err) {
			return decide(kickv1alpha1.GateOwnerUnknown, fmt.Sprintf("%s authorizes Kargo Stage %s, which does not exist", appName, ref))
		}
		return p.unavailable(d, fmt.Errorf("read Stage %s: %w", ref, err))
	}
	if name, running := currentPromotion(stage); running {
		return decide(kickv1alpha1.GatePromotionRunning, fmt.Sprintf("Kargo Stage %s reports promotion %s in progress (status.currentPromotion)", ref, name))
	}
	promotions := newList(PromotionKind)
	if err := p.reader.List(ctx, promotions, client.InNamespace(ref.Project), client.MatchingFields{StageIndex: ref.Stage}); err != nil {
		return p.unavailable(d, fmt.Errorf("list Promotions of Stage %s: %w", ref, err))
	}
	if active := activePromotions(promotions.Items); len(active) > 0 {
		return decide(kickv1alpha1.GatePromotionRunning, fmt.Sprintf("Kargo Stage %s has promotions in flight: %s", ref, joinNames(active)))
	}

	d = p.relabel(p.argo.DecideFor(ctx, app, policy, now))
	if d.Owner != nil {
		d.Owner.Stage = ref.String()
	}
	if d.Allowed() {
		d.Message = fmt.Sprintf("no promotion to Kargo Stage %s is in flight; %s", ref, d.Message)
	}
	return d
}

// relabel marks an Argo CD decision as the Kargo provider's.
func (p *Provider) relabel(d gitops.Decision) gitops.Decision {
	d.Provider = p.Name()
	if d.Owner != nil {
		o := *d.Owner
		o.Provider = p.Name()
		d.Owner = &o
	}
	return d
}

func (p *Provider) unavailable(d gitops.Decision, err error) gitops.Decision {
	d.Reason = kickv1alpha1.GateProviderUnavailable
	d.Message = "Kargo: " + err.Error()
	d.RequeueAt = time.Now().Add(unavailableRetry)
	return d
}

// Wakes implements gitops.Provider: a Promotion or Stage change wakes the
// requests gated on that Stage. Application changes are woken by the Argo
// CD provider, which is always registered alongside.
func (p *Provider) Wakes() []gitops.Wake {
	return []gitops.Wake{
		{Object: newObject(PromotionKind), Keys: func(_ context.Context, obj client.Object) []string {
			u, ok := obj.(*unstructured.Unstructured)
			if !ok || promotionStage(u) == "" {
				return nil
			}
			return []string{gitops.StageKey(StageRef{Project: u.GetNamespace(), Stage: promotionStage(u)}.String())}
		}},
		{Object: newObject(StageKind), Keys: func(_ context.Context, obj client.Object) []string {
			return []string{gitops.StageKey(StageRef{Project: obj.GetNamespace(), Stage: obj.GetName()}.String())}
		}},
	}
}
