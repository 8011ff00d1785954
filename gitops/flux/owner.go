package flux

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
)

// The labels Flux puts on everything it applies. kustomize-controller and
// helm-controller each set a name/namespace pair naming the object that
// applied the resource.
const (
	KustomizeNameLabel      = "kustomize.toolkit.fluxcd.io/name"
	KustomizeNamespaceLabel = "kustomize.toolkit.fluxcd.io/namespace"
	HelmNameLabel           = "helm.toolkit.fluxcd.io/name"
	HelmNamespaceLabel      = "helm.toolkit.fluxcd.io/namespace"
)

// ownerRef names a Flux object that may own a workload.
type ownerRef struct {
	Kind      string // "Kustomization" or "HelmRelease"
	Namespace string
	Name      string
}

func (r ownerRef) String() string { return r.Kind + " " + r.Namespace + "/" + r.Name }

// labelPair is one controller's label pair and the kind it points at.
type labelPair struct {
	kind, nameKey, namespaceKey string
}

var labelPairs = []labelPair{
	{kind: KustomizationKind.Kind, nameKey: KustomizeNameLabel, namespaceKey: KustomizeNamespaceLabel},
	{kind: HelmReleaseKind.Kind, nameKey: HelmNameLabel, namespaceKey: HelmNamespaceLabel},
}

// labelOwners reads the owner candidates from a workload's labels. It
// returns one ref per complete label pair. problem is set, and refs is
// empty, when a pair is half present or carries a value that cannot be an
// object name: such labels were not written by Flux and KICK will not act
// on them.
func labelOwners(labels map[string]string) (refs []ownerRef, problem string) {
	var problems []string
	for _, p := range labelPairs {
		name, hasName := labels[p.nameKey]
		ns, hasNS := labels[p.namespaceKey]
		switch {
		case !hasName && !hasNS:
			continue
		case !hasName || !hasNS:
			missing := p.nameKey
			if hasName {
				missing = p.namespaceKey
			}
			problems = append(problems, fmt.Sprintf("label %s is missing (Flux always sets both labels of the pair)", missing))
			continue
		}
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			problems = append(problems, fmt.Sprintf("label %s=%q is not a namespace name", p.namespaceKey, ns))
			continue
		}
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			problems = append(problems, fmt.Sprintf("label %s=%q is not an object name", p.nameKey, name))
			continue
		}
		refs = append(refs, ownerRef{Kind: p.kind, Namespace: ns, Name: name})
	}
	if len(problems) > 0 {
		return nil, strings.Join(problems, "; ")
	}
	return refs, ""
}

// groupKind is the API group and kind of a workload, as written in a Flux
// inventory entry.
type groupKind struct{ Group, Kind string }

// workloadKinds are the inventory group/kinds of the workloads KICK
// restarts. Only these entries are kept in the cache and only these wake
// requests.
var workloadKinds = map[groupKind]kickv1alpha1.TargetKind{
	{"apps", "Deployment"}:     kickv1alpha1.TargetDeployment,
	{"apps", "StatefulSet"}:    kickv1alpha1.TargetStatefulSet,
	{"apps", "DaemonSet"}:      kickv1alpha1.TargetDaemonSet,
	{"argoproj.io", "Rollout"}: kickv1alpha1.TargetRollout,
}

// inventoryID is how Flux names an applied object in status.inventory:
// "<namespace>_<name>_<group>_<kind>" (core group and cluster scope leave
// their part empty).
func inventoryID(namespace, name string, gk groupKind) string {
	return namespace + "_" + name + "_" + gk.Group + "_" + gk.Kind
}

// workloadEntry parses an inventory id and reports the workload it names,
// if it names one of the workload kinds. Names, namespaces, groups and
// kinds cannot contain "_", so the id splits into exactly four parts.
func workloadEntry(id string) (namespace string, kind kickv1alpha1.TargetKind, name string, ok bool) {
	parts := strings.Split(id, "_")
	if len(parts) != 4 || parts[0] == "" || parts[1] == "" {
		return "", "", "", false
	}
	kind, ok = workloadKinds[groupKind{Group: parts[2], Kind: parts[3]}]
	if !ok {
		return "", "", "", false
	}
	return parts[0], kind, parts[1], true
}

// isWorkloadEntry reports whether an inventory id names a workload kind.
func isWorkloadEntry(id string) bool {
	_, _, _, ok := workloadEntry(id)
	return ok
}
