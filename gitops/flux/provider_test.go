package flux

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/gitops"
	"github.com/kick-operator/kick/gitops/gitopstest"
)

func testScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func readyConds(gen int64) []metav1.Condition {
	return []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, ObservedGeneration: gen, Reason: "ReconciliationSucceeded"}}
}

func kustomization(name string, inventory []string, mod func(*kustomizev1.Kustomization)) *kustomizev1.Kustomization {
	k := &kustomizev1.Kustomization{
		ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: name, Generation: 1},
		Status:     kustomizev1.KustomizationStatus{ObservedGeneration: 1, Conditions: readyConds(1)},
	}
	if inventory != nil {
		k.Status.Inventory = &kustomizev1.ResourceInventory{Entries: []kustomizev1.ResourceRef{}}
		for _, id := range inventory {
			k.Status.Inventory.Entries = append(k.Status.Inventory.Entries, kustomizev1.ResourceRef{ID: id, Version: "v1"})
		}
	}
	if mod != nil {
		mod(k)
	}
	return k
}

func helmRelease(name string, mod func(*helmv2.HelmRelease)) *helmv2.HelmRelease {
	h := &helmv2.HelmRelease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, Generation: 4},
		Status:     helmv2.HelmReleaseStatus{ObservedGeneration: 4, Conditions: readyConds(4)},
	}
	if mod != nil {
		mod(h)
	}
	return h
}

func deployment(labels map[string]string) *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", Labels: labels}}
}

func ksLabels(name string) map[string]string {
	return map[string]string{KustomizeNameLabel: name, KustomizeNamespaceLabel: "flux-system"}
}

func hrLabels(name string) map[string]string {
	return map[string]string{HelmNameLabel: name, HelmNamespaceLabel: "shop"}
}

// newTestProvider seeds a fake cache with objects trimmed as the real cache
// trims them.
func newTestProvider(t *testing.T, opts Options, funcs *interceptor.Funcs, objs ...client.Object) *Provider {
	t.Helper()
	s := testScheme(t)
	if opts.Workloads == nil {
		opts.Workloads = gitopstest.Builtin()
	}
	b := fake.NewClientBuilder().WithScheme(s)
	for _, k := range opts.Workloads {
		b = b.WithIndex(k.New(), ClaimIndex, indexClaims)
	}
	for _, o := range objs {
		var trimmed any
		switch o.(type) {
		case *kustomizev1.Kustomization:
			trimmed, _ = trimKustomization(o)
		case *helmv2.HelmRelease:
			trimmed, _ = trimHelmRelease(o)
		default:
			trimmed = o
		}
		b = b.WithObjects(trimmed.(client.Object))
	}
	if funcs != nil {
		b = b.WithInterceptorFuncs(*funcs)
	}
	return newProvider(b.Build(), s, opts)
}

func fluxPolicy(requireReconciled *bool) *kickv1alpha1.KickPolicy {
	return &kickv1alpha1.KickPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: kickv1alpha1.KickPolicySpec{
		GitOps: &kickv1alpha1.GitOpsSpec{Provider: kickv1alpha1.ProviderFlux, RequireReconciled: requireReconciled}}}
}

func TestProviderDecide(t *testing.T) {
	both := ksLabels("apps")
	for k, v := range hrLabels("web") {
		both[k] = v
	}
	all := Options{Kustomizations: true, HelmReleases: true}
	cases := []struct {
		name     string
		opts     Options
		objs     []client.Object
		workload client.Object
		policy   *kickv1alpha1.KickPolicy
		reason   kickv1alpha1.GateReason
		owner    string // "Kind ns/name" of the decision's owner, "" for none
		message  string
		// owners is what Owners returns for Auto; ownersErr that it fails.
		owners    []string
		ownersErr string
	}{
		{name: "kustomization owner, ready, listed in its inventory",
			objs:     []client.Object{kustomization("apps", []string{"shop_web_apps_Deployment", "shop_web__Service"}, nil)},
			workload: deployment(ksLabels("apps")), reason: kickv1alpha1.GateAllowed, owner: "Kustomization flux-system/apps",
			owners: []string{"Kustomization flux-system/apps"}},
		{name: "kustomization without an inventory is taken at its labels' word",
			objs:     []client.Object{kustomization("apps", nil, nil)},
			workload: deployment(ksLabels("apps")), reason: kickv1alpha1.GateAllowed, owner: "Kustomization flux-system/apps",
			owners: []string{"Kustomization flux-system/apps"}},
		{name: "helm release owner, ready",
			objs:     []client.Object{helmRelease("web", nil)},
			workload: deployment(hrLabels("web")), reason: kickv1alpha1.GateAllowed, owner: "HelmRelease shop/web",
			owners: []string{"HelmRelease shop/web"}},
		{name: "helm release inventory confirms",
			objs: []client.Object{helmRelease("web", func(h *helmv2.HelmRelease) {
				h.Status.Inventory = &helmv2.ResourceInventory{Entries: []helmv2.ResourceRef{{ID: "shop_web_apps_Deployment"}}}
			})},
			workload: deployment(hrLabels("web")), reason: kickv1alpha1.GateAllowed, owner: "HelmRelease shop/web",
			owners: []string{"HelmRelease shop/web"}},
		{name: "rollout listed as argoproj.io Rollout",
			objs:     []client.Object{kustomization("apps", []string{"shop_web_argoproj.io_Rollout"}, nil)},
			workload: rollout(ksLabels("apps")), reason: kickv1alpha1.GateAllowed, owner: "Kustomization flux-system/apps",
			owners: []string{"Kustomization flux-system/apps"}},
		{name: "inventory does not list the workload",
			objs:     []client.Object{kustomization("apps", []string{"shop_other_apps_Deployment"}, nil)},
			workload: deployment(ksLabels("apps")), reason: kickv1alpha1.GateOwnerUnknown,
			message: "inventory does not list shop_web_apps_Deployment"},
		{name: "inventory lists a different kind of the same name",
			objs:     []client.Object{kustomization("apps", []string{"shop_web_apps_StatefulSet"}, nil)},
			workload: deployment(ksLabels("apps")), reason: kickv1alpha1.GateOwnerUnknown, message: "does not apply this workload"},
		{name: "no Flux labels", workload: deployment(map[string]string{"app": "web"}),
			reason: kickv1alpha1.GateOwnerUnknown, message: "Deployment shop/web is not managed by Flux"},
		{name: "both label pairs", objs: []client.Object{kustomization("apps", nil, nil), helmRelease("web", nil)},
			workload: deployment(both), reason: kickv1alpha1.GateAmbiguousOwner, message: "KICK will not guess",
			owners: []string{"HelmRelease shop/web", "Kustomization flux-system/apps"}},
		{name: "half a label pair", workload: deployment(map[string]string{KustomizeNameLabel: "apps"}),
			reason: kickv1alpha1.GateOwnerUnknown, message: "malformed", ownersErr: "is missing"},
		{name: "owner missing from the cache", workload: deployment(ksLabels("gone")),
			reason: kickv1alpha1.GateOwnerUnknown, message: "name Kustomization flux-system/gone as its owner, but that Kustomization does not exist",
			ownersErr: "does not exist"},
		{name: "helm release kind not served", opts: Options{Kustomizations: true}, workload: deployment(hrLabels("web")),
			reason: kickv1alpha1.GateProviderUnavailable, message: "does not serve HelmRelease", ownersErr: "does not serve HelmRelease"},
		{name: "suspended owner", objs: []client.Object{kustomization("apps", nil, func(k *kustomizev1.Kustomization) { k.Spec.Suspend = true })},
			workload: deployment(ksLabels("apps")), reason: kickv1alpha1.GateOwnerSuspended, owner: "Kustomization flux-system/apps",
			owners: []string{"Kustomization flux-system/apps"}},
		{name: "owner not ready",
			objs: []client.Object{helmRelease("web", func(h *helmv2.HelmRelease) {
				h.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse, ObservedGeneration: 4, Reason: "UpgradeFailed"}}
			})},
			workload: deployment(hrLabels("web")), reason: kickv1alpha1.GateOwnerOutOfSync, owner: "HelmRelease shop/web", message: "UpgradeFailed",
			owners: []string{"HelmRelease shop/web"}},
		{name: "owner not ready, requireReconciled false",
			objs: []client.Object{helmRelease("web", func(h *helmv2.HelmRelease) {
				h.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse, ObservedGeneration: 4}}
			})},
			workload: deployment(hrLabels("web")), policy: fluxPolicy(ptr.To(false)), reason: kickv1alpha1.GateAllowed, owner: "HelmRelease shop/web",
			owners: []string{"HelmRelease shop/web"}},
		{name: "owner without conditions", objs: []client.Object{kustomization("apps", nil, func(k *kustomizev1.Kustomization) { k.Status = kustomizev1.KustomizationStatus{} })},
			workload: deployment(ksLabels("apps")), reason: kickv1alpha1.GateOwnerReconciling, owner: "Kustomization flux-system/apps",
			message: "has not reported readiness yet", owners: []string{"Kustomization flux-system/apps"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			opts := c.opts
			if !opts.Kustomizations && !opts.HelmReleases {
				opts = all
			}
			policy := c.policy
			if policy == nil {
				policy = fluxPolicy(nil)
			}
			p := newTestProvider(t, opts, nil, c.objs...)
			d := p.Decide(context.Background(), c.workload, policy, time.Now())
			if d.Reason != c.reason || d.Provider != kickv1alpha1.ProviderFlux {
				t.Fatalf("decision %s by %s (%s), want %s", d.Reason, d.Provider, d.Message, c.reason)
			}
			if !strings.Contains(d.Message, c.message) {
				t.Fatalf("message %q does not contain %q", d.Message, c.message)
			}
			got := ""
			if d.Owner != nil {
				got = gitops.DescribeOwner(*d.Owner)
			}
			if got != c.owner {
				t.Fatalf("owner %q, want %q", got, c.owner)
			}

			owners, err := p.Owners(context.Background(), c.workload)
			if c.ownersErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.ownersErr) {
					t.Fatalf("Owners error %v, want one containing %q", err, c.ownersErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Owners: %v", err)
			}
			var names []string
			for _, o := range owners {
				if o.Provider != kickv1alpha1.ProviderFlux || o.APIVersion == "" {
					t.Errorf("owner %+v lacks provider or apiVersion", o)
				}
				names = append(names, gitops.DescribeOwner(o))
			}
			slices.Sort(names)
			if !slices.Equal(names, c.owners) {
				t.Fatalf("Owners = %v, want %v", names, c.owners)
			}
		})
	}
}

func rollout(labels map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("argoproj.io/v1alpha1")
	u.SetKind("Rollout")
	u.SetNamespace("shop")
	u.SetName("web")
	u.SetLabels(labels)
	return u
}

func TestProviderReadErrorIsUnavailable(t *testing.T) {
	boom := &interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		return errors.New("cache not started")
	}}
	p := newTestProvider(t, Options{Kustomizations: true}, boom)
	w := deployment(ksLabels("apps"))
	d := p.Decide(context.Background(), w, fluxPolicy(nil), time.Now())
	if d.Reason != kickv1alpha1.GateProviderUnavailable || !strings.Contains(d.Message, "cache not started") {
		t.Fatalf("got %+v", d)
	}
	if _, err := p.Owners(context.Background(), w); err == nil {
		t.Fatal("Owners must report that it cannot tell")
	}
}

func TestAutoPicksFluxThroughTheRegistry(t *testing.T) {
	p := newTestProvider(t, Options{Kustomizations: true}, nil, kustomization("apps", []string{"shop_web_apps_Deployment"}, nil))
	r := gitops.NewRegistry()
	r.Register(p)
	policy := &kickv1alpha1.KickPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec: kickv1alpha1.KickPolicySpec{GitOps: &kickv1alpha1.GitOpsSpec{Provider: kickv1alpha1.ProviderAuto}}}
	d := r.Decide(context.Background(), deployment(ksLabels("apps")), policy, time.Now())
	if !d.Allowed() || d.Provider != kickv1alpha1.ProviderFlux || d.Owner == nil || d.Owner.Name != "apps" {
		t.Fatalf("Auto: %+v", d)
	}
	d = r.Decide(context.Background(), deployment(nil), policy, time.Now())
	if d.Reason != kickv1alpha1.GateProviderUnavailable || !strings.Contains(d.Message, "found no GitOps owner") {
		t.Fatalf("Auto without labels: %+v", d)
	}
}

func TestWakes(t *testing.T) {
	kinds := func(o Options) []string {
		var out []string
		for _, w := range newTestProvider(t, o, nil).Wakes() {
			switch w.Object.(type) {
			case *kustomizev1.Kustomization:
				out = append(out, "Kustomization")
			case *helmv2.HelmRelease:
				out = append(out, "HelmRelease")
			default:
				t.Errorf("unexpected wake object %T", w.Object)
			}
		}
		return out
	}
	if got := kinds(Options{}); len(got) != 0 {
		t.Errorf("no served kinds must watch nothing, got %v", got)
	}
	if got := kinds(Options{HelmReleases: true}); !slices.Equal(got, []string{"HelmRelease"}) {
		t.Errorf("got %v", got)
	}
	if got := kinds(Options{Kustomizations: true, HelmReleases: true}); !slices.Equal(got, []string{"Kustomization", "HelmRelease"}) {
		t.Errorf("got %v", got)
	}

	k := kustomization("apps", []string{"shop_web_apps_Deployment", "shop_web__Service", "jobs_cron_argoproj.io_Rollout", "_shop__Namespace"}, nil)
	trimmed, _ := trimKustomization(k)
	p := newTestProvider(t, Options{Kustomizations: true, HelmReleases: true}, nil)
	wakeKeys := p.wakeKeys
	for _, obj := range []client.Object{k, trimmed.(client.Object)} {
		got := wakeKeys(context.Background(), obj)
		want := []string{
			gitops.OwnerKey("Kustomization", "flux-system", "apps"),
			gitops.TargetKey("shop", kickv1alpha1.TargetDeployment, "web"),
			gitops.TargetKey("jobs", kickv1alpha1.TargetRollout, "cron"),
		}
		if !slices.Equal(got, want) {
			t.Errorf("wake keys %v, want %v", got, want)
		}
	}
	if got := wakeKeys(context.Background(), helmRelease("web", nil)); !slices.Equal(got, []string{gitops.OwnerKey("HelmRelease", "shop", "web")}) {
		t.Errorf("helm release wake keys %v", got)
	}
	if got := wakeKeys(context.Background(), deployment(nil)); got != nil {
		t.Errorf("a non-Flux object has no wake keys, got %v", got)
	}
	// The owner key matches the key a request with this owner is indexed under.
	kr := &kickv1alpha1.KickRequest{Status: kickv1alpha1.KickRequestStatus{Owner: &kickv1alpha1.GitOpsOwner{Kind: "Kustomization", Namespace: "flux-system", Name: "apps"}}}
	if !slices.Contains(gitops.RequestKeys(kr), wakeKeys(context.Background(), k)[0]) {
		t.Error("the owner wake key does not match the request index")
	}
}

// TestOwnerCreatedLaterWakesClaimants: a workload whose Flux labels name
// a Kustomization or HelmRelease that does not exist yet waits with
// OwnerUnknown; that owner's wake keys, from the moment it appears and
// before any inventory lists the workload, name the workload's target key
// (through ClaimIndex on every kind handed over, a Rollout included), so
// the waiting request is re-evaluated and finds its owner.
func TestOwnerCreatedLaterWakesClaimants(t *testing.T) {
	s := testScheme(t)
	if err := gitopstest.AddRolloutToScheme(s); err != nil {
		t.Fatal(err)
	}
	web := deployment(ksLabels("apps"))
	api := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "api", Labels: hrLabels("web")}}
	ro := &gitopstest.Rollout{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "canary", Labels: ksLabels("apps")}}
	stray := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "stray", Labels: ksLabels("other")}}
	half := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "half", Labels: map[string]string{KustomizeNameLabel: "apps"}}}
	opts := Options{Kustomizations: true, HelmReleases: true, Workloads: gitopstest.WithRollouts()}
	b := fake.NewClientBuilder().WithScheme(s).WithObjects(web, api, ro, stray, half)
	for _, k := range opts.Workloads {
		b = b.WithIndex(k.New(), ClaimIndex, indexClaims)
	}
	c := b.Build()
	p := newProvider(c, s, opts)

	if d := p.Decide(context.Background(), web, fluxPolicy(nil), time.Now()); d.Reason != kickv1alpha1.GateOwnerUnknown || !strings.Contains(d.Message, "does not exist") {
		t.Fatalf("before the owner exists: %+v", d)
	}
	k := kustomization("apps", nil, nil)
	trimmed, _ := trimKustomization(k)
	if err := c.Create(context.Background(), trimmed.(client.Object)); err != nil {
		t.Fatal(err)
	}
	// The owner first, then the claimants in the order of the kinds.
	got := p.wakeKeys(context.Background(), k)
	want := []string{gitops.OwnerKey("Kustomization", "flux-system", "apps"),
		gitops.TargetKey("shop", kickv1alpha1.TargetDeployment, "web"), gitops.TargetKey("shop", kickv1alpha1.TargetRollout, "canary")}
	if !slices.Equal(got, want) {
		t.Fatalf("Kustomization wake keys %v, want %v", got, want)
	}
	kr := &kickv1alpha1.KickRequest{ObjectMeta: metav1.ObjectMeta{Namespace: "shop"},
		Spec: kickv1alpha1.KickRequestSpec{TargetRef: kickv1alpha1.TargetRef{Kind: kickv1alpha1.TargetDeployment, Name: "web"}}}
	if !slices.Contains(gitops.RequestKeys(kr), gitops.TargetKey("shop", kickv1alpha1.TargetDeployment, "web")) {
		t.Fatal("the target key does not match the request index")
	}
	if d := p.Decide(context.Background(), web, fluxPolicy(nil), time.Now()); !d.Allowed() {
		t.Fatalf("after the owner exists: %+v", d)
	}

	got = p.wakeKeys(context.Background(), helmRelease("web", nil))
	want = []string{gitops.OwnerKey("HelmRelease", "shop", "web"), gitops.TargetKey("shop", kickv1alpha1.TargetStatefulSet, "api")}
	if !slices.Equal(got, want) {
		t.Fatalf("HelmRelease wake keys %v, want %v", got, want)
	}

	// A workload both listed and labelled is named once.
	listed := kustomization("apps", []string{"shop_web_apps_Deployment"}, nil)
	if got := p.wakeKeys(context.Background(), listed); len(got) != 3 {
		t.Fatalf("keys %v, want the owner, web and canary once each", got)
	}
}

func TestProviderRefusesUnknownWorkloadKinds(t *testing.T) {
	p := newTestProvider(t, Options{Kustomizations: true}, nil, kustomization("apps", nil, nil))
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", Labels: ksLabels("apps")}}
	d := p.Decide(context.Background(), cm, fluxPolicy(nil), time.Now())
	if d.Reason != kickv1alpha1.GateProviderUnavailable || !strings.Contains(d.Message, "does not handle ConfigMap") {
		t.Fatalf("got %+v", d)
	}
}
