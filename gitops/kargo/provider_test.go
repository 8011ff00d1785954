package kargo

import (
	"context"
	"strings"
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/gitops"
	"github.com/kick-operator/kick/gitops/argocd"
	"github.com/kick-operator/kick/gitops/gitopstest"
)

func newTestProvider(t *testing.T, objs ...client.Object) *Provider {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, argocd.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	for _, gvk := range Kinds {
		s.AddKnownTypeWithName(gvk, &unstructured.Unstructured{})
		s.AddKnownTypeWithName(gvk.GroupVersion().WithKind(gvk.Kind+"List"), &unstructured.UnstructuredList{})
	}
	opts := argocd.Options{Namespace: "argocd", Workloads: gitopstest.Builtin()}
	b := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).
		WithIndex(newObject(PromotionKind), StageIndex, func(obj client.Object) []string {
			return []string{promotionStage(obj.(*unstructured.Unstructured))}
		})
	for _, ix := range argocd.IndexFuncs(opts) {
		b = b.WithIndex(ix.Object, ix.Field, ix.Func)
	}
	c := b.Build()
	return &Provider{reader: c, argo: argocd.NewFromReaders(c, c, opts)}
}

func stageObject(project, name string, current string) *unstructured.Unstructured {
	u := newObject(StageKind)
	u.SetNamespace(project)
	u.SetName(name)
	if current != "" {
		u.Object["status"] = map[string]any{"currentPromotion": map[string]any{"name": current}}
	}
	return u
}

func promotionObject(project, name, stage, phase string) *unstructured.Unstructured {
	u := newObject(PromotionKind)
	u.SetNamespace(project)
	u.SetName(name)
	u.Object["spec"] = map[string]any{"stage": stage}
	if phase != "" {
		u.Object["status"] = map[string]any{"phase": phase}
	}
	return u
}

func TestDecide(t *testing.T) {
	target := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web",
		Annotations: map[string]string{argocd.TrackingIDAnnotation: "web:apps/Deployment:shop/web"}}}
	app := func(stage string, status argov1alpha1.SyncStatusCode) *argov1alpha1.Application {
		a := &argov1alpha1.Application{ObjectMeta: metav1.ObjectMeta{Namespace: "argocd", Name: "web"},
			Spec:   argov1alpha1.ApplicationSpec{Project: "default", Destination: argov1alpha1.ApplicationDestination{Namespace: "shop"}},
			Status: argov1alpha1.ApplicationStatus{Sync: argov1alpha1.SyncStatus{Status: status}}}
		if stage != "" {
			a.Annotations = map[string]string{AuthorizedStageAnnotation: stage}
		}
		return a
	}
	proj := &argov1alpha1.AppProject{ObjectMeta: metav1.ObjectMeta{Namespace: "argocd", Name: "default"}}
	synced := argov1alpha1.SyncStatusCodeSynced
	cases := []struct {
		name  string
		objs  []client.Object
		want  kickv1alpha1.GateReason
		msg   string
		stage string
	}{
		{name: "no owner", objs: []client.Object{proj}, want: kickv1alpha1.GateOwnerUnknown, msg: "that Application cannot own it"},
		{name: "unannotated", objs: []client.Object{proj, app("", synced)}, want: kickv1alpha1.GateOwnerUnknown, msg: "has no kargo.akuity.io/authorized-stage"},
		{name: "several stages", objs: []client.Object{proj, app("shop:prod,shop:qa", synced)}, want: kickv1alpha1.GateAmbiguousOwner, msg: "authorizes 2 Stages"},
		{name: "stage missing", objs: []client.Object{proj, app("shop:prod", synced)}, want: kickv1alpha1.GateOwnerUnknown, msg: "Stage shop:prod, which does not exist", stage: "shop:prod"},
		{name: "current promotion", objs: []client.Object{proj, app("shop:prod", synced), stageObject("shop", "prod", "p1")},
			want: kickv1alpha1.GatePromotionRunning, msg: "promotion p1 in progress", stage: "shop:prod"},
		{name: "running promotion", objs: []client.Object{proj, app("shop:prod", synced), stageObject("shop", "prod", ""),
			promotionObject("shop", "p1", "prod", "Succeeded"), promotionObject("shop", "p2", "prod", "Running"), promotionObject("shop", "p3", "qa", "Running")},
			want: kickv1alpha1.GatePromotionRunning, msg: "promotions in flight: p2 (Running)", stage: "shop:prod"},
		{name: "finished promotions, Argo CD out of sync", objs: []client.Object{proj, app("shop:prod", "OutOfSync"), stageObject("shop", "prod", ""),
			promotionObject("shop", "p1", "prod", "Succeeded")}, want: kickv1alpha1.GateOwnerOutOfSync, stage: "shop:prod"},
		{name: "finished promotions, Argo CD synced", objs: []client.Object{proj, app("shop:prod", synced), stageObject("shop", "prod", ""),
			promotionObject("shop", "p1", "prod", "Failed"), promotionObject("shop", "p2", "qa", "Running")},
			want: kickv1alpha1.GateAllowed, msg: "no promotion to Kargo Stage shop:prod is in flight", stage: "shop:prod"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := newTestProvider(t, append(c.objs, target.DeepCopy())...)
			pol := &kickv1alpha1.KickPolicy{Spec: kickv1alpha1.KickPolicySpec{GitOps: &kickv1alpha1.GitOpsSpec{Provider: kickv1alpha1.ProviderKargo}}}
			d := p.Decide(context.Background(), target, pol, time.Now())
			if d.Reason != c.want || !strings.Contains(d.Message, c.msg) || d.Provider != kickv1alpha1.ProviderKargo {
				t.Fatalf("decision = %s %q (%s), want %s mentioning %q", d.Reason, d.Message, d.Provider, c.want, c.msg)
			}
			if d.Owner != nil && (d.Owner.Provider != kickv1alpha1.ProviderKargo || d.Owner.Stage != c.stage || d.Owner.Name != "web") {
				t.Fatalf("owner = %+v, want stage %q", d.Owner, c.stage)
			}
			if c.stage != "" && d.Owner == nil {
				t.Fatal("no owner")
			}
		})
	}
}

func TestWakesAndAuto(t *testing.T) {
	p := newTestProvider(t)
	wakes := p.Wakes()
	if got := wakes[0].Keys(context.Background(), promotionObject("shop", "p1", "prod", "Running")); len(got) != 1 || got[0] != gitops.StageKey("shop:prod") {
		t.Fatalf("Promotion keys = %v", got)
	}
	if got := wakes[1].Keys(context.Background(), stageObject("shop", "prod", "")); len(got) != 1 || got[0] != gitops.StageKey("shop:prod") {
		t.Fatalf("Stage keys = %v", got)
	}
	if owners, err := p.Owners(context.Background(), &appsv1.Deployment{}); owners != nil || err != nil {
		t.Fatalf("Kargo is auto-detected: %v %v", owners, err)
	}
}
