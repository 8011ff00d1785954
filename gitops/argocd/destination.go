package argocd

import (
	"context"
	"fmt"
	"strings"

	argov1alpha1 "github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"github.com/gobwas/glob"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The destination rule: an Application owns a workload only if Argo CD
// could have deployed it there. Tracking metadata is written by whoever
// can write the workload, and an Application outside the control-plane
// namespace (apps in any namespace) by a tenant, so neither may make an
// Application gate (or un-gate) a workload in somebody else's namespace:
//
//   - spec.destination.namespace, when set, must be the workload's
//     namespace;
//   - when it is empty (Argo CD then deploys each resource to the namespace
//     its manifest names), or when the Application lives outside the
//     control-plane namespace, the workload's namespace must also be one
//     the Application's AppProject admits as a destination (the namespace
//     patterns of spec.destinations, "!" exclusions included; the cluster
//     part is not compared, KICK sees only its own cluster). An AppProject
//     that does not exist is not consulted: the gate then blocks on
//     ProjectUnknown anyway.

// mayOwn reports whether app may own a workload in namespace. Why it may
// not stays out of every message (see cannotOwn in owner.go): the reasons
// are facts about the Application (its destination and project), which the
// workload's tenant may have no right to read.
func (p *Provider) mayOwn(ctx context.Context, app *argov1alpha1.Application, namespace string) (bool, error) {
	dest := app.Spec.Destination.Namespace
	if dest != "" && dest != namespace {
		return false, nil
	}
	if dest != "" && app.Namespace == p.opts.Namespace {
		return true, nil
	}
	project := projectOf(app)
	var proj argov1alpha1.AppProject
	if err := p.reader.Get(ctx, client.ObjectKey{Namespace: p.opts.Namespace, Name: project}, &proj); err != nil {
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, fmt.Errorf("read AppProject %s/%s: %w", p.opts.Namespace, project, err)
	}
	return NamespaceAdmitted(proj.Spec.Destinations, namespace), nil
}

// NamespaceAdmitted reports whether the namespace patterns of an
// AppProject's destinations admit namespace, as Argo CD matches them: a
// glob pattern admits what it matches, a "!pattern" entry refuses what it
// matches (and admits the rest), and nothing is admitted when no entry
// admits it. Entries with an invalid pattern admit nothing.
func NamespaceAdmitted(destinations []argov1alpha1.ApplicationDestination, namespace string) bool {
	admitted := false
	for _, d := range destinations {
		pattern, deny := strings.CutPrefix(d.Namespace, "!")
		matched := pattern == "*" || globMatch(pattern, namespace)
		switch {
		case deny && matched:
			return false
		case deny || matched:
			admitted = true
		}
	}
	return admitted
}

func globMatch(pattern, value string) bool {
	g, err := glob.Compile(pattern)
	return err == nil && g.Match(value)
}
