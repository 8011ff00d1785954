package argocd

import (
	"context"
	"fmt"
	"slices"
	"strings"

	argov1alpha1 "github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/gitops"
)

// resolution is the outcome of owner resolution for one workload.
type resolution struct {
	// apps are the candidate owners: exactly one when resolved.
	apps []AppRef
	// app is the owner's cached Application when exactly one exists.
	app *argov1alpha1.Application
	// decision is set when resolution blocks the restart.
	decision *gitops.Decision
}

// resolve finds the Application that owns w: the self-referencing tracking
// annotation (or the instance label, by the tracking method in force),
// else the one Application whose status.resources lists w. Either way the
// Application must pass the destination rule (destination.go). It never
// guesses: none, several, or a claimed Application that does not exist or
// may not own w block with a reason.
func (p *Provider) resolve(ctx context.Context, w client.Object) (resolution, error) {
	self, err := IdentityOf(w, p.opts.Workloads)
	if err != nil {
		return resolution{}, err
	}
	settings, err := p.settings.get(ctx)
	if err != nil {
		return resolution{}, err
	}
	claim := ClaimOf(w.GetAnnotations(), w.GetLabels(), self, settings, p.opts.Namespace)
	notes := strings.Join(claim.Notes, "; ")
	target := fmt.Sprintf("%s %s/%s", self.Kind, self.Namespace, self.Name)

	if claim.App != (AppRef{}) {
		how := "its instance label"
		if claim.Strong {
			how = "its tracking annotation"
		}
		if !p.watches(claim.App.Namespace) {
			return p.blocked([]AppRef{claim.App}, kickv1alpha1.GateOwnerUnknown,
				fmt.Sprintf("%s names Application %s through %s, but namespace %s holds no Applications this manager watches (--argocd-namespace, --argocd-application-namespaces)",
					target, claim.App, how, claim.App.Namespace)), nil
		}
		app, err := p.application(ctx, claim.App)
		if err != nil {
			return resolution{}, err
		}
		owns := app != nil
		if owns {
			if owns, err = p.mayOwn(ctx, app, self.Namespace); err != nil {
				return resolution{}, err
			}
		}
		switch {
		case owns:
			return resolution{apps: []AppRef{claim.App}, app: app}, nil
		case claim.Strong:
			// The workload's own metadata names an Application that
			// does not exist or may not own it: wait, rather than gate
			// on that Application or on none. The message is the same
			// either way (see cannotOwn).
			return p.blocked([]AppRef{claim.App}, kickv1alpha1.GateOwnerUnknown,
				fmt.Sprintf("%s names Application %s through %s, but %s", target, claim.App, how, cannotOwn(self.Namespace))), nil
		}
		notes = join(notes, fmt.Sprintf("its instance label names Application %s, but %s", claim.App, cannotOwn(self.Namespace)))
	}

	var listed argov1alpha1.ApplicationList
	if err := p.reader.List(ctx, &listed, client.MatchingFields{ResourceIndex: ResourceKey(self)}); err != nil {
		return resolution{}, fmt.Errorf("look up Applications managing %s: %w", target, err)
	}
	// status.resources is believed only from an Application that could
	// have deployed the workload; the others are ignored, not counted as
	// owners (counting them would let anyone who can write an Application
	// block another team's restarts) and not named (see cannotOwn).
	var list argov1alpha1.ApplicationList
	for i := range listed.Items {
		owns, err := p.mayOwn(ctx, &listed.Items[i], self.Namespace)
		if err != nil {
			return resolution{}, err
		}
		if owns {
			list.Items = append(list.Items, listed.Items[i])
		}
	}
	switch len(list.Items) {
	case 0:
		msg := fmt.Sprintf("no Argo CD Application owns %s: it carries no usable tracking metadata and no Application that may own it lists it in status.resources", target)
		if notes != "" {
			msg += " (" + notes + ")"
		}
		return p.blocked(nil, kickv1alpha1.GateOwnerUnknown, msg), nil
	case 1:
		app := &list.Items[0]
		return resolution{apps: []AppRef{{Namespace: app.Namespace, Name: app.Name}}, app: app}, nil
	}
	refs := make([]AppRef, len(list.Items))
	names := make([]string, len(list.Items))
	for i, app := range list.Items {
		refs[i] = AppRef{Namespace: app.Namespace, Name: app.Name}
		names[i] = refs[i].String()
	}
	slices.Sort(names)
	msg := fmt.Sprintf("several Argo CD Applications list %s in status.resources: %s; KICK will not guess which owns it", target, strings.Join(names, ", "))
	if notes != "" {
		msg += " (" + notes + ")"
	}
	return p.blocked(refs, kickv1alpha1.GateAmbiguousOwner, msg), nil
}

// cannotOwn is what a workload in namespace is told about an Application
// its metadata names that does not exist or may not own it (the destination
// rule, destination.go). The two read the same, and neither names the
// Application's destination or project: the workload's tenant learns only
// what it needs to fix its own metadata, not whether another team's
// Application exists or where it deploys.
func cannotOwn(namespace string) string {
	return fmt.Sprintf("that Application cannot own it: an owner must exist and deploy to namespace %s (spec.destination.namespace, or a destination its AppProject admits when that is empty or the Application is outside the Argo CD namespace)", namespace)
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

func (p *Provider) blocked(apps []AppRef, reason kickv1alpha1.GateReason, msg string) resolution {
	return resolution{apps: apps, decision: &gitops.Decision{Reason: reason, Provider: p.Name(), Message: msg}}
}

// watches reports whether the manager caches Applications of namespace.
func (p *Provider) watches(namespace string) bool {
	return namespace == p.opts.Namespace || slices.Contains(p.opts.ApplicationNamespaces, namespace)
}

// application reads an Application from the cache; nil when absent.
func (p *Provider) application(ctx context.Context, ref AppRef) (*argov1alpha1.Application, error) {
	var app argov1alpha1.Application
	if err := p.reader.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, &app); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("read Application %s: %w", ref, err)
	}
	return &app, nil
}

// ownerOf describes an Application as a KickRequest owner.
func ownerOf(app *argov1alpha1.Application) *kickv1alpha1.GitOpsOwner {
	return &kickv1alpha1.GitOpsOwner{
		Provider:   kickv1alpha1.ProviderArgoCD,
		APIVersion: argov1alpha1.SchemeGroupVersion.String(),
		Kind:       "Application",
		Namespace:  app.Namespace,
		Name:       app.Name,
		Project:    projectOf(app),
	}
}
