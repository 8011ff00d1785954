package flux

import (
	"reflect"
	"strings"
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func bigKustomization() *kustomizev1.Kustomization {
	now := metav1.Now()
	return &kustomizev1.Kustomization{
		TypeMeta: metav1.TypeMeta{APIVersion: "kustomize.toolkit.fluxcd.io/v1", Kind: "Kustomization"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "apps", Namespace: "flux-system", UID: "u1", ResourceVersion: "42", Generation: 7,
			Labels:            map[string]string{"team": "a"},
			Annotations:       map[string]string{"kubectl.kubernetes.io/last-applied-configuration": strings.Repeat("x", 10000)},
			ManagedFields:     []metav1.ManagedFieldsEntry{{Manager: "kustomize-controller"}},
			Finalizers:        []string{"finalizers.fluxcd.io"},
			DeletionTimestamp: &now,
		},
		Spec: kustomizev1.KustomizationSpec{
			Suspend:   true,
			Path:      "./apps",
			Prune:     true,
			SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: "GitRepository", Name: "repo"},
			Patches:   nil,
		},
		Status: kustomizev1.KustomizationStatus{
			ObservedGeneration:  7,
			LastAppliedRevision: "main@sha1:abc",
			Conditions: []metav1.Condition{
				{Type: "Ready", Status: metav1.ConditionTrue, ObservedGeneration: 7, Reason: "ReconciliationSucceeded", Message: strings.Repeat("é", 2000)},
			},
			Inventory: &kustomizev1.ResourceInventory{Entries: []kustomizev1.ResourceRef{
				{ID: "shop_web_apps_Deployment", Version: "v1"},
				{ID: "shop_web__Service", Version: "v1"},
				{ID: "shop_db_apps_StatefulSet", Version: "v1"},
				{ID: "_shop__Namespace", Version: "v1"},
			}},
		},
	}
}

func TestTrimKustomization(t *testing.T) {
	in := bigKustomization()
	got, err := trimKustomization(in)
	if err != nil {
		t.Fatal(err)
	}
	k := got.(*kustomizev1.Kustomization)
	if k == in {
		t.Fatal("the transform must build a new object")
	}
	if k.Name != "apps" || k.Namespace != "flux-system" || k.Generation != 7 || k.ResourceVersion != "42" || k.UID != "u1" || k.DeletionTimestamp == nil {
		t.Errorf("identity lost: %+v", k.ObjectMeta)
	}
	if k.ManagedFields != nil || k.Annotations != nil || k.Labels != nil || k.Finalizers != nil {
		t.Errorf("metadata not trimmed: %+v", k.ObjectMeta)
	}
	if !k.Spec.Suspend || k.Spec.Path != "" || k.Spec.SourceRef.Name != "" || k.Spec.Prune {
		t.Errorf("spec: want only suspend, got %+v", k.Spec)
	}
	if k.Status.ObservedGeneration != 7 || k.Status.LastAppliedRevision != "" {
		t.Errorf("status: %+v", k.Status)
	}
	if len(k.Status.Conditions) != 1 || k.Status.Conditions[0].ObservedGeneration != 7 || k.Status.Conditions[0].Reason != "ReconciliationSucceeded" {
		t.Errorf("conditions: %+v", k.Status.Conditions)
	}
	if msg := k.Status.Conditions[0].Message; len(msg) > maxConditionMessage+len("…") || !strings.HasSuffix(msg, "…") || !strings.HasPrefix(msg, "éé") {
		t.Errorf("message not cut cleanly: %d bytes", len(msg))
	}
	want := []kustomizev1.ResourceRef{{ID: "shop_web_apps_Deployment"}, {ID: "shop_db_apps_StatefulSet"}}
	if !reflect.DeepEqual(k.Status.Inventory.Entries, want) {
		t.Errorf("inventory: %+v, want %+v", k.Status.Inventory.Entries, want)
	}
	if in.Status.Inventory == nil || len(in.Status.Inventory.Entries) != 4 || in.Spec.Path != "./apps" {
		t.Error("the transform changed its input")
	}
	again, _ := trimKustomization(k)
	if !reflect.DeepEqual(again, k) {
		t.Errorf("the transform is not idempotent:\n%+v\n%+v", again, k)
	}
}

func TestTrimKeepsInventoryPresence(t *testing.T) {
	none := &kustomizev1.Kustomization{}
	got, _ := trimKustomization(none)
	if got.(*kustomizev1.Kustomization).Status.Inventory != nil {
		t.Error("a missing inventory must stay missing")
	}
	onlyOthers := &kustomizev1.Kustomization{Status: kustomizev1.KustomizationStatus{Inventory: &kustomizev1.ResourceInventory{
		Entries: []kustomizev1.ResourceRef{{ID: "shop_cfg__ConfigMap"}}}}}
	got, _ = trimKustomization(onlyOthers)
	v, _ := viewOf(got.(*kustomizev1.Kustomization))
	if !v.hasInventory || v.lists("shop_web_apps_Deployment") {
		t.Error("an inventory without workloads must still disown a workload")
	}
}

func TestTrimHelmRelease(t *testing.T) {
	in := &helmv2.HelmRelease{
		ObjectMeta: metav1.ObjectMeta{Name: "redis", Namespace: "data", Generation: 2,
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "helm-controller"}}},
		Spec: helmv2.HelmReleaseSpec{
			Suspend: true,
			Values:  &apiextensionsv1.JSON{Raw: []byte(`{"big":"` + strings.Repeat("v", 5000) + `"}`)},
		},
		Status: helmv2.HelmReleaseStatus{
			ObservedGeneration: 2,
			Conditions:         []metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse, ObservedGeneration: 2, Message: "upgrade failed"}},
			History:            helmv2.Snapshots{{Name: "redis", Version: 1}, {Name: "redis", Version: 2}},
			Inventory: &helmv2.ResourceInventory{Entries: []helmv2.ResourceRef{
				{ID: "data_redis_apps_StatefulSet", Version: "v1"}, {ID: "data_redis__Secret", Version: "v1"}}},
			LastAttemptedConfigDigest: "abc",
		},
	}
	got, err := trimHelmRelease(in)
	if err != nil {
		t.Fatal(err)
	}
	h := got.(*helmv2.HelmRelease)
	if h.ManagedFields != nil || h.Spec.Values != nil || h.Status.History != nil || h.Status.LastAttemptedConfigDigest != "" {
		t.Errorf("not trimmed: %+v", h)
	}
	if !h.Spec.Suspend || h.Generation != 2 || h.Status.ObservedGeneration != 2 || len(h.Status.Conditions) != 1 {
		t.Errorf("decision inputs lost: %+v", h)
	}
	if want := []helmv2.ResourceRef{{ID: "data_redis_apps_StatefulSet"}}; !reflect.DeepEqual(h.Status.Inventory.Entries, want) {
		t.Errorf("inventory %+v", h.Status.Inventory.Entries)
	}
	again, _ := trimHelmRelease(h)
	if !reflect.DeepEqual(again, h) {
		t.Error("the transform is not idempotent")
	}
}

func TestTransformsPassOtherObjectsThrough(t *testing.T) {
	other := &helmv2.HelmRelease{}
	if got, _ := trimKustomization(other); got != any(other) {
		t.Error("trimKustomization changed a HelmRelease")
	}
	k := &kustomizev1.Kustomization{}
	if got, _ := trimHelmRelease(k); got != any(k) {
		t.Error("trimHelmRelease changed a Kustomization")
	}
}

func TestCacheOptionsOnlyForServedKinds(t *testing.T) {
	kinds := func(o Options) []string {
		var out []string
		for obj, by := range CacheOptions(o) {
			if by.Transform == nil {
				t.Errorf("%T has no transform", obj)
			}
			switch obj.(type) {
			case *kustomizev1.Kustomization:
				out = append(out, "Kustomization")
			case *helmv2.HelmRelease:
				out = append(out, "HelmRelease")
			}
		}
		return out
	}
	if got := kinds(Options{}); len(got) != 0 {
		t.Errorf("no kinds served, got %v", got)
	}
	if got := kinds(Options{Kustomizations: true}); !reflect.DeepEqual(got, []string{"Kustomization"}) {
		t.Errorf("got %v", got)
	}
	if got := kinds(Options{HelmReleases: true}); !reflect.DeepEqual(got, []string{"HelmRelease"}) {
		t.Errorf("got %v", got)
	}
	if got := kinds(Options{Kustomizations: true, HelmReleases: true}); len(got) != 2 {
		t.Errorf("got %v", got)
	}
}

func TestTruncate(t *testing.T) {
	cases := []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"abcdefghijkl", 5, "abcde…"},
		{"ééé", 3, "é…"}, // never split a two-byte character
	}
	for _, c := range cases {
		got := truncate(c.in, c.n)
		if got != c.want {
			t.Errorf("truncate(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
		if truncate(got, c.n) != got {
			t.Errorf("truncate is not idempotent on %q", got)
		}
	}
}
