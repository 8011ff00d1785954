package flux

import (
	"strings"
	"testing"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
)

func TestLabelOwners(t *testing.T) {
	ks := map[string]string{KustomizeNameLabel: "apps", KustomizeNamespaceLabel: "flux-system"}
	hr := map[string]string{HelmNameLabel: "redis", HelmNamespaceLabel: "data"}
	both := map[string]string{}
	for k, v := range ks {
		both[k] = v
	}
	for k, v := range hr {
		both[k] = v
	}
	cases := []struct {
		name    string
		labels  map[string]string
		want    []ownerRef
		problem string
	}{
		{name: "no labels"},
		{name: "unrelated labels", labels: map[string]string{"app": "web"}},
		{name: "kustomization", labels: ks, want: []ownerRef{{"Kustomization", "flux-system", "apps"}}},
		{name: "helm release", labels: hr, want: []ownerRef{{"HelmRelease", "data", "redis"}}},
		{name: "both pairs", labels: both, want: []ownerRef{{"Kustomization", "flux-system", "apps"}, {"HelmRelease", "data", "redis"}}},
		{name: "name without namespace", labels: map[string]string{KustomizeNameLabel: "apps"}, problem: KustomizeNamespaceLabel + " is missing"},
		{name: "namespace without name", labels: map[string]string{HelmNamespaceLabel: "data"}, problem: HelmNameLabel + " is missing"},
		{name: "bad namespace", labels: map[string]string{KustomizeNameLabel: "apps", KustomizeNamespaceLabel: "Flux_System"}, problem: "is not a namespace name"},
		{name: "bad name", labels: map[string]string{HelmNameLabel: "a..b", HelmNamespaceLabel: "data"}, problem: "is not an object name"},
		{name: "empty values", labels: map[string]string{KustomizeNameLabel: "", KustomizeNamespaceLabel: ""}, problem: "is not a namespace name"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, problem := labelOwners(c.labels)
			if c.problem != "" {
				if !strings.Contains(problem, c.problem) || len(got) != 0 {
					t.Fatalf("got %v, problem %q; want no refs and a problem containing %q", got, problem, c.problem)
				}
				return
			}
			if problem != "" {
				t.Fatalf("unexpected problem %q", problem)
			}
			if len(got) != len(c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Fatalf("got %v, want %v", got, c.want)
				}
			}
		})
	}
}

func TestInventoryIDs(t *testing.T) {
	if got := inventoryID("shop", "web", groupKind{"apps", "Deployment"}); got != "shop_web_apps_Deployment" {
		t.Fatalf("inventoryID = %q", got)
	}
	cases := []struct {
		id       string
		ok       bool
		ns, name string
		kind     kickv1alpha1.TargetKind
	}{
		{id: "shop_web_apps_Deployment", ok: true, ns: "shop", name: "web", kind: kickv1alpha1.TargetDeployment},
		{id: "shop_db_apps_StatefulSet", ok: true, ns: "shop", name: "db", kind: kickv1alpha1.TargetStatefulSet},
		{id: "kube-system_agent_apps_DaemonSet", ok: true, ns: "kube-system", name: "agent", kind: kickv1alpha1.TargetDaemonSet},
		{id: "shop_canary_argoproj.io_Rollout", ok: true, ns: "shop", name: "canary", kind: kickv1alpha1.TargetRollout},
		{id: "shop_web__ConfigMap"},
		{id: "shop_web_apps_ReplicaSet"},
		{id: "_web_apps_Deployment"},
		{id: "shop__apps_Deployment"},
		{id: "shop_web_apps"},
		{id: "shop_web_apps_Deployment_extra"},
		{id: ""},
	}
	for _, c := range cases {
		ns, kind, name, ok := workloadEntry(c.id)
		if ok != c.ok || ns != c.ns || name != c.name || kind != c.kind {
			t.Errorf("workloadEntry(%q) = %q %q %q %v, want %q %q %q %v", c.id, ns, kind, name, ok, c.ns, c.kind, c.name, c.ok)
		}
		if isWorkloadEntry(c.id) != c.ok {
			t.Errorf("isWorkloadEntry(%q) = %v", c.id, !c.ok)
		}
	}
}
