package argocd

import (
	"context"
	"fmt"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/gitops"
	_ "github.com/kick-operator/kick/gitops/argocd/internal/noi18n" // kubectl's translations stay unloaded
	"github.com/kick-operator/kick/gitops/kinds"
)

// Kinds are the upstream kinds the integration needs; the manager probes
// them at start-up and skips the integration when one is missing.
var Kinds = kinds.ArgoCD()

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
	// Workloads are the workload kinds the manager restarts (from its
	// workload registry); ClaimIndex covers each of them, so a change to
	// an Application wakes the requests of every workload that claims it.
	Workloads gitops.Workloads
}

// AddToScheme registers the typed Argo CD API.
func AddToScheme(s *runtime.Scheme) error { return argov1alpha1.AddToScheme(s) }

// unavailableRetry is when a decision that failed on a read error is tried
// again; nothing else would wake it.
const unavailableRetry = 30 * time.Second

// Provider is the Argo CD gitops.Provider.
type Provider struct {
	// reader reads Applications, AppProjects and workloads from the cache.
	reader   client.Reader
	settings *settingsSource
	opts     Options
}

// New registers the provider's indexes with mgr and returns it.
func New(ctx context.Context, mgr ctrl.Manager, opts Options) (*Provider, error) {
	if err := registerIndexes(ctx, mgr.GetFieldIndexer(), opts); err != nil {
		return nil, err
	}
	return newProvider(mgr.GetClient(), mgr.GetAPIReader(), opts), nil
}

func newProvider(cached, direct client.Reader, opts Options) *Provider {
	return &Provider{reader: cached, settings: newSettingsSource(direct, opts), opts: opts}
}

// Name implements gitops.Provider.
func (p *Provider) Name() kickv1alpha1.GitOpsProvider { return kickv1alpha1.ProviderArgoCD }

// Owners implements gitops.Provider: the Applications owner resolution
// settles on or hesitates between, none when Argo CD does not manage w.
func (p *Provider) Owners(ctx context.Context, w client.Object) ([]kickv1alpha1.GitOpsOwner, error) {
	r, err := p.resolve(ctx, w)
	if err != nil {
		return nil, err
	}
	out := make([]kickv1alpha1.GitOpsOwner, 0, len(r.apps))
	for _, ref := range r.apps {
		o := kickv1alpha1.GitOpsOwner{Provider: p.Name(), APIVersion: argov1alpha1.SchemeGroupVersion.String(),
			Kind: "Application", Namespace: ref.Namespace, Name: ref.Name}
		if r.app != nil {
			o.Project = projectOf(r.app)
		}
		out = append(out, o)
	}
	return out, nil
}

// Decide implements gitops.Provider.
func (p *Provider) Decide(ctx context.Context, w client.Object, policy *kickv1alpha1.KickPolicy, now time.Time) gitops.Decision {
	app, d := p.Application(ctx, w)
	if app == nil {
		return d
	}
	return p.DecideFor(ctx, app, policy, now)
}

// Application resolves the Application that owns w. When it cannot name
// exactly one existing Application it returns nil and the decision that
// blocks the restart.
func (p *Provider) Application(ctx context.Context, w client.Object) (*argov1alpha1.Application, gitops.Decision) {
	r, err := p.resolve(ctx, w)
	switch {
	case err != nil:
		return nil, p.unavailable(err)
	case r.decision != nil:
		return nil, *r.decision
	}
	return r.app, gitops.Decision{Reason: kickv1alpha1.GateAllowed, Provider: p.Name(), Owner: ownerOf(r.app)}
}

func (p *Provider) unavailable(err error) gitops.Decision {
	return gitops.Decision{Reason: kickv1alpha1.GateProviderUnavailable, Provider: p.Name(),
		Message: "Argo CD: " + err.Error(), RequeueAt: time.Now().Add(unavailableRetry)}
}

// DecideFor gates a restart on a known owner Application: its AppProject
// must exist and admit it, the project's sync windows must allow an
// automated sync now, and, when the policy requires it (the default), the
// Application must be Synced with no operation pending or running.
func (p *Provider) DecideFor(ctx context.Context, app *argov1alpha1.Application, policy *kickv1alpha1.KickPolicy, now time.Time) gitops.Decision {
	d := gitops.Decision{Provider: p.Name(), Owner: ownerOf(app)}
	decide := func(reason kickv1alpha1.GateReason, msg string) gitops.Decision {
		d.Reason, d.Message = reason, msg
		return d
	}
	name := "Application " + app.Namespace + "/" + app.Name
	project := projectOf(app)
	var proj argov1alpha1.AppProject
	if err := p.reader.Get(ctx, client.ObjectKey{Namespace: p.opts.Namespace, Name: project}, &proj); err != nil {
		if apierrors.IsNotFound(err) {
			return decide(kickv1alpha1.GateProjectUnknown, fmt.Sprintf("%s belongs to AppProject %s, which does not exist in namespace %s", name, project, p.opts.Namespace))
		}
		u := p.unavailable(fmt.Errorf("read AppProject %s/%s: %w", p.opts.Namespace, project, err))
		u.Owner = d.Owner
		return u
	}
	if !proj.IsAppNamespacePermitted(app, p.opts.Namespace) {
		return decide(kickv1alpha1.GateConfigurationError, fmt.Sprintf("%s is in namespace %s, which AppProject %s does not admit (spec.sourceNamespaces), so Argo CD does not reconcile it",
			name, app.Namespace, project))
	}
	v, err := EvaluateWindows(&proj, app, now)
	if err != nil {
		return decide(kickv1alpha1.GateConfigurationError, err.Error())
	}
	if !v.Open {
		d = decide(kickv1alpha1.GateOutsideSchedule, fmt.Sprintf("AppProject %s/%s does not let %s sync now: %s", proj.Namespace, proj.Name, name, v.Message))
		d.RequeueAt = v.Next
		if !v.Next.IsZero() {
			d.Message += "; re-checking at " + v.Next.UTC().Format(time.RFC3339)
		}
		return d
	}
	if req := policy.Spec.GitOps; req == nil || req.RequireReconciled == nil || *req.RequireReconciled {
		reason, msg := SyncState(app)
		if reason != kickv1alpha1.GateAllowed {
			return decide(reason, msg)
		}
		return decide(kickv1alpha1.GateAllowed, msg+" and its sync windows allow a sync")
	}
	return decide(kickv1alpha1.GateAllowed, fmt.Sprintf("%s: its sync windows allow a sync (requireReconciled is false)", name))
}

// NewFromReaders builds a provider over the given readers instead of a
// manager, for tools and tests: cached must serve Applications, AppProjects
// and workloads with the provider's indexes (see IndexFuncs); direct reads
// argocd-cm.
func NewFromReaders(cached, direct client.Reader, opts Options) *Provider {
	return newProvider(cached, direct, opts)
}
