package timeline

import (
	"context"
	"sort"

	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/discovery"
	"github.com/kick-operator/kick/restart/policy"
	"github.com/kick-operator/kick/restart/workload"
	"github.com/kick-operator/kick/sinks/timeline/entry"
)

// Discovered is a workload some KickPolicy selects, with what it consumes.
type Discovered struct {
	entry.Workload
	// Policy is the selecting KickPolicy; empty when several select it
	// (Policies lists them) and KICK restarts it under none.
	Policy       string       `json:"policy,omitempty"`
	Policies     []string     `json:"policies"`
	Dependencies []Dependency `json:"dependencies"`
}

// Dependency is a Secret or ConfigMap (or other source) a workload consumes.
type Dependency struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
}

// catalog reads policies and workloads from the manager's cache (never
// the API server).
type catalog struct {
	reader client.Reader
	kinds  *workload.Registry
}

// discover returns the workloads of namespace ("": all) that KickPolicies
// select, sorted by namespace, kind and name, and the policies read; only
// those of namespaces may accepts. It asks may before it lists a
// namespace's workloads, so a caller who may see one namespace costs one
// namespace's lists, and reads the cache without deep copies (it only
// reads labels and pod specs, and keeps names and copies of them).
func (c catalog) discover(ctx context.Context, namespace string, may func(string) bool) ([]Discovered, []kickv1alpha1.KickPolicy, error) {
	var all kickv1alpha1.KickPolicyList
	if err := c.reader.List(ctx, &all, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, nil, err
	}
	byNS := map[string][]kickv1alpha1.KickPolicy{}
	var policies []kickv1alpha1.KickPolicy
	for _, p := range all.Items {
		if _, seen := byNS[p.Namespace]; seen || may(p.Namespace) {
			byNS[p.Namespace] = append(byNS[p.Namespace], p)
			policies = append(policies, p)
		}
	}
	var out []Discovered
	for ns, ps := range byNS {
		compiled := make([]*policy.Compiled, len(ps))
		for i := range ps {
			compiled[i], _ = policy.Compile(&ps[i])
		}
		for _, k := range c.kinds.Kinds() {
			list := k.NewList()
			if err := c.reader.List(ctx, list, client.InNamespace(ns), client.UnsafeDisableDeepCopy); err != nil {
				return nil, nil, err
			}
			for _, obj := range workload.Items(list) {
				d := Discovered{Workload: entry.Workload{Namespace: ns, Kind: string(k.Target), Name: obj.GetName()}}
				for i, cp := range compiled {
					if cp != nil && ps[i].DeletionTimestamp == nil && cp.MatchesWorkload(obj.GetLabels()) {
						d.Policies = append(d.Policies, ps[i].Name)
					}
				}
				if len(d.Policies) == 0 {
					continue
				}
				sort.Strings(d.Policies)
				if len(d.Policies) == 1 {
					d.Policy = d.Policies[0]
				}
				d.Dependencies = []Dependency{}
				for _, dep := range discovery.FromWorkload(obj) {
					d.Dependencies = append(d.Dependencies, Dependency{Kind: dep.Kind, Name: dep.Name})
				}
				out = append(out, d)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key() < out[j].Key() })
	return out, policies, nil
}

// consumers returns the workloads in namespace that consume the source
// (through the discovery index of the cache).
func (c catalog) consumers(ctx context.Context, namespace, kind, name string) ([]entry.Workload, error) {
	var out []entry.Workload
	for _, k := range c.kinds.Kinds() {
		list := k.NewList()
		if err := c.reader.List(ctx, list, client.InNamespace(namespace),
			client.MatchingFields{discovery.SourceIndex: discovery.IndexKey(kind, name)}); err != nil {
			return nil, err
		}
		for _, obj := range workload.Items(list) {
			out = append(out, entry.Workload{Namespace: namespace, Kind: string(k.Target), Name: obj.GetName()})
		}
	}
	return out, nil
}

// DAG is a namespace's KickPolicy → workload → Secret/ConfigMap graph.
type DAG struct {
	Namespace string `json:"namespace"`
	Nodes     []Node `json:"nodes"`
	Edges     []Edge `json:"edges"`
}

// Node is a policy, a workload or a source. ID is "Kind/name".
type Node struct {
	ID   string `json:"id"`
	Kind string `json:"kind"`
	Name string `json:"name"`
	// Layer is 0 for policies, 1 for workloads, 2 for sources.
	Layer int `json:"layer"`
}

// Edge says From selects (policy → workload) or consumes (workload → source) To.
type Edge struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// buildDAG lays out the discovered workloads of one namespace.
func buildDAG(namespace string, ws []Discovered, policies []kickv1alpha1.KickPolicy) DAG {
	g := DAG{Namespace: namespace, Nodes: []Node{}, Edges: []Edge{}}
	seen := map[string]bool{}
	add := func(kind, name string, layer int) string {
		id := kind + "/" + name
		if !seen[id] {
			seen[id] = true
			g.Nodes = append(g.Nodes, Node{ID: id, Kind: kind, Name: name, Layer: layer})
		}
		return id
	}
	for _, p := range policies {
		if p.Namespace == namespace {
			add("KickPolicy", p.Name, 0)
		}
	}
	for _, w := range ws {
		wid := add(w.Kind, w.Name, 1)
		for _, p := range w.Policies {
			g.Edges = append(g.Edges, Edge{From: add("KickPolicy", p, 0), To: wid})
		}
		for _, d := range w.Dependencies {
			g.Edges = append(g.Edges, Edge{From: wid, To: add(d.Kind, d.Name, 2)})
		}
	}
	return g
}
