package argocd

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/gitops"
	"github.com/kick-operator/kick/gitops/gitopstest"
)

const cp = "argocd" // the control-plane namespace of these tests

type world struct {
	objs []client.Object
	opts Options
}

func (w *world) add(objs ...client.Object) *world { w.objs = append(w.objs, objs...); return w }

func (w *world) provider(t *testing.T) *Provider {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := gitopstest.AddRolloutToScheme(s); err != nil {
		t.Fatal(err)
	}
	if w.opts.Namespace == "" {
		w.opts.Namespace = cp
	}
	if w.opts.Workloads == nil {
		w.opts.Workloads = gitopstest.Builtin()
	}
	b := fake.NewClientBuilder().WithScheme(s).WithObjects(w.objs...)
	for _, ix := range IndexFuncs(w.opts) {
		b = b.WithIndex(ix.Object, ix.Field, ix.Func)
	}
	c := b.Build()
	return NewFromReaders(c, c, w.opts)
}

func deployment(ns, name string, annotations, labels map[string]string) *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations, Labels: labels}}
}

func tracked(app, ns, name string) map[string]string {
	return map[string]string{TrackingIDAnnotation: app + ":apps/Deployment:" + ns + "/" + name}
}

type appOpt func(*argov1alpha1.Application)

func application(ns, name string, opts ...appOpt) *argov1alpha1.Application {
	a := &argov1alpha1.Application{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       argov1alpha1.ApplicationSpec{Project: "default", Destination: argov1alpha1.ApplicationDestination{Server: "https://kubernetes.default.svc", Namespace: "shop"}},
		Status:     argov1alpha1.ApplicationStatus{Sync: argov1alpha1.SyncStatus{Status: argov1alpha1.SyncStatusCodeSynced}},
	}
	for _, o := range opts {
		o(a)
	}
	return a
}

func lists(ns, name string) appOpt {
	return func(a *argov1alpha1.Application) {
		a.Status.Resources = append(a.Status.Resources, argov1alpha1.ResourceStatus{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: ns, Name: name})
	}
}

// project is an AppProject that admits every destination, as Argo CD's
// own default project does.
func project(name string, windows ...*argov1alpha1.InlineSyncWindow) *argov1alpha1.AppProject {
	return &argov1alpha1.AppProject{ObjectMeta: metav1.ObjectMeta{Namespace: cp, Name: name}, Spec: argov1alpha1.AppProjectSpec{
		SyncWindows: windows, Destinations: []argov1alpha1.ApplicationDestination{{Server: "*", Namespace: "*"}}}}
}

func policy(requireReconciled *bool) *kickv1alpha1.KickPolicy {
	return &kickv1alpha1.KickPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec: kickv1alpha1.KickPolicySpec{GitOps: &kickv1alpha1.GitOpsSpec{Provider: kickv1alpha1.ProviderArgoCD, RequireReconciled: requireReconciled}}}
}

func TestDecide(t *testing.T) {
	web := func(annotations, labels map[string]string) *appsv1.Deployment {
		return deployment("shop", "web", annotations, labels)
	}
	deny := &argov1alpha1.InlineSyncWindow{Kind: "deny", Schedule: "* * * * *", Duration: "1h", Applications: []string{"*"}}
	broken := &argov1alpha1.InlineSyncWindow{Kind: "deny", Schedule: "61 * * * *", Duration: "1h", Applications: []string{"*"}}
	cases := []struct {
		name     string
		world    *world
		target   *appsv1.Deployment
		policy   *kickv1alpha1.KickPolicy
		want     kickv1alpha1.GateReason
		owner    string // "namespace/name" of the expected status.owner, "" for none
		msg      string
		requeue  bool
		noOwners bool
	}{
		{name: "annotation", world: (&world{}).add(application(cp, "web"), project("default")),
			target: web(tracked("web", "shop", "web"), nil), want: kickv1alpha1.GateAllowed, owner: "argocd/web", msg: "is Synced"},
		{name: "annotation in another namespace", world: (&world{opts: Options{ApplicationNamespaces: []string{"team"}}}).add(application("team", "web"), project("default")),
			target: web(tracked("team_web", "shop", "web"), nil), want: kickv1alpha1.GateConfigurationError, owner: "team/web", msg: "spec.sourceNamespaces"},
		{name: "annotation in an admitted namespace", world: (&world{opts: Options{ApplicationNamespaces: []string{"team"}}}).add(application("team", "web"),
			&argov1alpha1.AppProject{ObjectMeta: metav1.ObjectMeta{Namespace: cp, Name: "default"}, Spec: argov1alpha1.AppProjectSpec{SourceNamespaces: []string{"te*"},
				Destinations: []argov1alpha1.ApplicationDestination{{Server: "https://kubernetes.default.svc", Namespace: "shop"}}}}),
			target: web(tracked("team_web", "shop", "web"), nil), want: kickv1alpha1.GateAllowed, owner: "team/web"},
		{name: "annotation in an unwatched namespace", world: (&world{}).add(application("team", "web"), project("default")),
			target: web(tracked("team_web", "shop", "web"), nil), want: kickv1alpha1.GateOwnerUnknown, msg: "--argocd-application-namespaces"},
		{name: "annotated owner missing", world: (&world{}).add(application(cp, "other", lists("shop", "web")), project("default")),
			target: web(tracked("web", "shop", "web"), nil), want: kickv1alpha1.GateOwnerUnknown, msg: "names Application argocd/web through its tracking annotation, but that Application cannot own it"},
		{name: "copied annotation falls back", world: (&world{}).add(application(cp, "api"), application(cp, "web", lists("shop", "web")), project("default")),
			target: web(tracked("api", "shop", "api"), nil), want: kickv1alpha1.GateAllowed, owner: "argocd/web"},
		{name: "malformed annotation falls back to nothing", world: (&world{}).add(application(cp, "web"), project("default")),
			target: web(map[string]string{TrackingIDAnnotation: "web"}, nil), want: kickv1alpha1.GateOwnerUnknown, msg: "is not <application>", noOwners: true},
		{name: "fallback one owner", world: (&world{}).add(application(cp, "web", lists("shop", "web")), application(cp, "api", lists("shop", "api")), project("default")),
			target: web(nil, nil), want: kickv1alpha1.GateAllowed, owner: "argocd/web"},
		{name: "fallback no owner", world: (&world{}).add(application(cp, "api", lists("shop", "api")), application(cp, "other", lists("elsewhere", "web")), project("default")),
			target: web(nil, nil), want: kickv1alpha1.GateOwnerUnknown, msg: "no Argo CD Application owns Deployment shop/web", noOwners: true},
		{name: "fallback two owners", world: (&world{}).add(application(cp, "a", lists("shop", "web")), application(cp, "b", lists("shop", "web")), project("default")),
			target: web(nil, nil), want: kickv1alpha1.GateAmbiguousOwner, msg: "argocd/a, argocd/b"},
		{name: "label ignored under annotation tracking", world: (&world{}).add(application(cp, "web"), project("default")),
			target: web(nil, map[string]string{DefaultLabelKey: "web"}), want: kickv1alpha1.GateOwnerUnknown, noOwners: true},
		{name: "label tracking by flag", world: (&world{opts: Options{TrackingMethod: "label"}}).add(application(cp, "web"), project("default")),
			target: web(nil, map[string]string{DefaultLabelKey: "web"}), want: kickv1alpha1.GateAllowed, owner: "argocd/web"},
		{name: "label naming a missing app falls back", world: (&world{opts: Options{TrackingMethod: "label"}}).add(application(cp, "real", lists("shop", "web")), project("default")),
			target: web(nil, map[string]string{DefaultLabelKey: "helm-release"}), want: kickv1alpha1.GateAllowed, owner: "argocd/real"},
		{name: "argocd-cm overrides flags", world: (&world{}).add(application(cp, "web"), project("default"),
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: cp, Name: SettingsConfigMap}, Data: map[string]string{
				keyTrackingMethod: "annotation+label", keyInstanceLabelKey: "example.com/app", keyInstallationID: "prod"}}),
			target: web(tracked("web", "shop", "web"), map[string]string{"example.com/app": "web"}), want: kickv1alpha1.GateAllowed, owner: "argocd/web"},
		{name: "installation id mismatch", world: (&world{opts: Options{InstallationID: "prod"}}).add(application(cp, "web"), project("default")),
			target: web(map[string]string{TrackingIDAnnotation: "web:apps/Deployment:shop/web", InstallationIDAnnotation: "staging"}, nil),
			want:   kickv1alpha1.GateOwnerUnknown, msg: `installation id "staging"`, noOwners: true},
		{name: "project missing", world: (&world{}).add(application(cp, "web", func(a *argov1alpha1.Application) { a.Spec.Project = "team" }), project("default")),
			target: web(tracked("web", "shop", "web"), nil), want: kickv1alpha1.GateProjectUnknown, owner: "argocd/web", msg: "AppProject team"},
		{name: "empty project is default", world: (&world{}).add(application(cp, "web", func(a *argov1alpha1.Application) { a.Spec.Project = "" }), project("default")),
			target: web(tracked("web", "shop", "web"), nil), want: kickv1alpha1.GateAllowed, owner: "argocd/web"},
		{name: "deny window", world: (&world{}).add(application(cp, "web"), project("default", deny)),
			target: web(tracked("web", "shop", "web"), nil), want: kickv1alpha1.GateOutsideSchedule, owner: "argocd/web", msg: "inside deny window 1", requeue: true},
		{name: "broken window", world: (&world{}).add(application(cp, "web"), project("default", broken)),
			target: web(tracked("web", "shop", "web"), nil), want: kickv1alpha1.GateConfigurationError, owner: "argocd/web", msg: "AppProject argocd/default: sync window 1"},
		{name: "no status", world: (&world{}).add(application(cp, "web", func(a *argov1alpha1.Application) { a.Status = argov1alpha1.ApplicationStatus{} }), project("default")),
			target: web(tracked("web", "shop", "web"), nil), want: kickv1alpha1.GateOwnerOutOfSync, owner: "argocd/web", msg: "no sync status yet"},
		{name: "out of sync, reconciled not required", world: (&world{}).add(application(cp, "web", func(a *argov1alpha1.Application) { a.Status.Sync.Status = "OutOfSync" }), project("default")),
			target: web(tracked("web", "shop", "web"), nil), policy: policy(ptr.To(false)), want: kickv1alpha1.GateAllowed, owner: "argocd/web", msg: "requireReconciled is false"},
		{name: "out of sync, reconciled required", world: (&world{}).add(application(cp, "web", func(a *argov1alpha1.Application) { a.Status.Sync.Status = "OutOfSync" }), project("default")),
			target: web(tracked("web", "shop", "web"), nil), policy: policy(ptr.To(true)), want: kickv1alpha1.GateOwnerOutOfSync, owner: "argocd/web"},
		{name: "operation running", world: (&world{}).add(application(cp, "web", func(a *argov1alpha1.Application) {
			a.Status.OperationState = &argov1alpha1.OperationState{Phase: "Running"}
		}), project("default")),
			target: web(tracked("web", "shop", "web"), nil), want: kickv1alpha1.GateOwnerReconciling, owner: "argocd/web"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := c.world.add(c.target).provider(t)
			pol := c.policy
			if pol == nil {
				pol = policy(nil)
			}
			d := p.Decide(context.Background(), c.target, pol, time.Now())
			if d.Reason != c.want || !strings.Contains(d.Message, c.msg) || d.Provider != kickv1alpha1.ProviderArgoCD {
				t.Fatalf("decision = %s %q (provider %s), want %s mentioning %q", d.Reason, d.Message, d.Provider, c.want, c.msg)
			}
			switch {
			case c.owner == "" && d.Owner != nil:
				t.Fatalf("owner = %+v, want none", d.Owner)
			case c.owner != "" && (d.Owner == nil || d.Owner.Namespace+"/"+d.Owner.Name != c.owner || d.Owner.Kind != "Application" ||
				d.Owner.APIVersion != "argoproj.io/v1alpha1" || d.Owner.Project == ""):
				t.Fatalf("owner = %+v, want Application %s", d.Owner, c.owner)
			}
			if c.requeue != !d.RequeueAt.IsZero() {
				t.Fatalf("requeueAt = %v, want set: %v", d.RequeueAt, c.requeue)
			}
			owners, err := p.Owners(context.Background(), c.target)
			if err != nil {
				t.Fatal(err)
			}
			if c.noOwners != (len(owners) == 0) {
				t.Fatalf("Owners = %+v, want none: %v", owners, c.noOwners)
			}
		})
	}
}

func TestOwnersForAuto(t *testing.T) {
	w := (&world{}).add(application(cp, "a", lists("shop", "web")), application(cp, "b", lists("shop", "web")), project("default"))
	target := deployment("shop", "web", nil, nil)
	owners, err := w.add(target).provider(t).Owners(context.Background(), target)
	if err != nil || len(owners) != 2 {
		t.Fatalf("Owners = %+v, %v; want both Applications", owners, err)
	}
	claimed := deployment("shop", "api", tracked("gone", "shop", "api"), nil)
	owners, err = (&world{}).add(claimed).provider(t).Owners(context.Background(), claimed)
	if err != nil || len(owners) != 1 || owners[0].Name != "gone" {
		t.Fatalf("Owners of a workload claiming a missing Application = %+v, %v", owners, err)
	}
}

func TestRegistryRoutesToArgoCD(t *testing.T) {
	target := deployment("shop", "web", tracked("web", "shop", "web"), nil)
	p := (&world{}).add(application(cp, "web"), project("default"), target).provider(t)
	r := gitops.NewRegistry()
	r.Register(p)
	auto := policy(nil)
	auto.Spec.GitOps.Provider = kickv1alpha1.ProviderAuto
	if d := r.Decide(context.Background(), target, auto, time.Now()); !d.Allowed() || d.Owner == nil || d.Owner.Name != "web" {
		t.Fatalf("Auto decision = %+v", d)
	}
}

func TestWakeKeys(t *testing.T) {
	claimant := deployment("shop", "web", tracked("web", "shop", "web"), nil)
	labelled := deployment("shop", "api", nil, map[string]string{DefaultLabelKey: "web"})
	other := deployment("shop", "db", tracked("db", "shop", "db"), nil)
	app := application(cp, "web", lists("shop", "listed"), func(a *argov1alpha1.Application) {
		a.Status.Resources = append(a.Status.Resources, argov1alpha1.ResourceStatus{Kind: "Service", Namespace: "shop", Name: "web"})
	})
	teamApp := application(cp, "team-app", func(a *argov1alpha1.Application) { a.Spec.Project = "team" })
	p := (&world{}).add(claimant, labelled, other, app, teamApp, project("default"), project("team")).provider(t)
	wakes := p.Wakes()
	if len(wakes) != 3 {
		t.Fatalf("wakes = %d, want Application, AppProject and argocd-cm", len(wakes))
	}
	got := wakes[0].Keys(context.Background(), app)
	want := []string{
		gitops.OwnerKey("Application", cp, "web"),
		gitops.TargetKey("shop", kickv1alpha1.TargetDeployment, "listed"),
		gitops.TargetKey("shop", kickv1alpha1.TargetDeployment, "web"),
		gitops.TargetKey("shop", kickv1alpha1.TargetDeployment, "api"),
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("Application keys = %v, want %v", got, want)
	}
	got = wakes[1].Keys(context.Background(), project("team"))
	if !slices.Equal(got, []string{gitops.OwnerKey("Application", cp, "team-app")}) {
		t.Fatalf("AppProject keys = %v", got)
	}
}

// TestRolloutClaim: with the Rollout kind among the workloads the manager
// hands over, a Rollout whose tracking annotation names an Application that
// does not exist yet waits for it, the Application's arrival wakes the
// Rollout's request (through ClaimIndex on Rollouts), and it then resolves
// as the owner. Without the kind, nothing would wake that request.
func TestRolloutClaim(t *testing.T) {
	claim := map[string]string{TrackingIDAnnotation: "web:argoproj.io/Rollout:shop/web"}
	ro := &gitopstest.Rollout{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", Annotations: claim}}
	p := (&world{opts: Options{Workloads: gitopstest.WithRollouts()}}).add(ro, project("default")).provider(t)
	pol := policy(nil)

	d := p.Decide(context.Background(), ro, pol, time.Now())
	if d.Reason != kickv1alpha1.GateOwnerUnknown || !strings.Contains(d.Message, "Rollout shop/web names Application argocd/web through its tracking annotation, but that Application cannot own it") {
		t.Fatalf("before the Application exists: %+v", d)
	}
	app := application(cp, "web")
	if err := p.reader.(client.Client).Create(context.Background(), app); err != nil {
		t.Fatal(err)
	}
	if keys := p.Wakes()[0].Keys(context.Background(), app); !slices.Contains(keys, gitops.TargetKey("shop", kickv1alpha1.TargetRollout, "web")) {
		t.Fatalf("the Application's wake keys %v do not name the Rollout that claims it", keys)
	}
	kr := &kickv1alpha1.KickRequest{ObjectMeta: metav1.ObjectMeta{Namespace: "shop"},
		Spec: kickv1alpha1.KickRequestSpec{TargetRef: kickv1alpha1.TargetRef{Kind: kickv1alpha1.TargetRollout, Name: "web"}}}
	if !slices.Contains(gitops.RequestKeys(kr), gitops.TargetKey("shop", kickv1alpha1.TargetRollout, "web")) {
		t.Fatal("the Rollout's target key does not match the request index")
	}
	if d := p.Decide(context.Background(), ro, pol, time.Now()); !d.Allowed() || d.Owner == nil || d.Owner.Name != "web" {
		t.Fatalf("after the Application exists: %+v", d)
	}

	// Only the kinds handed over are indexed: without Rollouts the same
	// Application names no Rollout.
	builtin := (&world{}).add(ro, app, project("default")).provider(t)
	if keys := builtin.Wakes()[0].Keys(context.Background(), app); slices.Contains(keys, gitops.TargetKey("shop", kickv1alpha1.TargetRollout, "web")) {
		t.Fatalf("keys %v name a Rollout although the kind is not active", keys)
	}
}

// TestSettingsWake: a change to argocd-cm in the Argo CD namespace wakes
// every request Argo CD (or Kargo, or Auto) decided, and makes the next
// decision read the new settings at once instead of after the TTL.
func TestSettingsWake(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: cp, Name: SettingsConfigMap}, Data: map[string]string{keyTrackingMethod: "label"}}
	p := (&world{}).add(cm).provider(t)
	wake := p.Wakes()[2]
	if m, ok := wake.Object.(*metav1.PartialObjectMetadata); !ok || m.Kind != "ConfigMap" || m.APIVersion != "v1" {
		t.Fatalf("the settings wake watches %T %v, want ConfigMap metadata only", wake.Object, wake.Object.GetObjectKind().GroupVersionKind())
	}
	meta := func(ns, name string) *metav1.PartialObjectMetadata {
		m := settingsMetadata()
		m.Namespace, m.Name = ns, name
		return m
	}
	if keys := wake.Keys(context.Background(), meta(cp, "other")); keys != nil {
		t.Fatalf("another ConfigMap wakes %v", keys)
	}
	if keys := wake.Keys(context.Background(), meta("elsewhere", SettingsConfigMap)); keys != nil {
		t.Fatalf("argocd-cm of another namespace wakes %v", keys)
	}

	if s, err := p.settings.get(context.Background()); err != nil || s.Method != argov1alpha1.TrackingMethodLabel {
		t.Fatalf("settings = %+v, %v", s, err)
	}
	cm.Data[keyTrackingMethod] = "annotation"
	if err := p.settings.reader.(client.Client).Update(context.Background(), cm); err != nil {
		t.Fatal(err)
	}
	keys := wake.Keys(context.Background(), meta(cp, SettingsConfigMap))
	for _, provider := range []kickv1alpha1.GitOpsProvider{kickv1alpha1.ProviderArgoCD, kickv1alpha1.ProviderKargo, kickv1alpha1.ProviderAuto} {
		kr := &kickv1alpha1.KickRequest{Status: kickv1alpha1.KickRequestStatus{Provider: provider}}
		if !slices.ContainsFunc(gitops.RequestKeys(kr), func(k string) bool { return slices.Contains(keys, k) }) {
			t.Errorf("argocd-cm's wake keys %v miss the open requests decided by %s", keys, provider)
		}
	}
	flux := &kickv1alpha1.KickRequest{Status: kickv1alpha1.KickRequestStatus{Provider: kickv1alpha1.ProviderFlux}}
	if slices.ContainsFunc(gitops.RequestKeys(flux), func(k string) bool { return slices.Contains(keys, k) }) {
		t.Errorf("argocd-cm wakes Flux requests: %v", keys)
	}
	if s, _ := p.settings.get(context.Background()); s.Method != argov1alpha1.TrackingMethodAnnotation {
		t.Fatalf("after the wake the settings are still the remembered ones: %+v", s)
	}
}

func TestSettingsAreMemoized(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: cp, Name: SettingsConfigMap}, Data: map[string]string{keyTrackingMethod: "label"}}
	p := (&world{}).add(cm).provider(t)
	now := time.Now()
	p.settings.now = func() time.Time { return now }
	s, err := p.settings.get(context.Background())
	if err != nil || s.Method != argov1alpha1.TrackingMethodLabel || s.LabelKey != DefaultLabelKey {
		t.Fatalf("settings = %+v, %v", s, err)
	}
	cm.Data[keyTrackingMethod] = "annotation"
	if err := p.settings.reader.(client.Client).Update(context.Background(), cm); err != nil {
		t.Fatal(err)
	}
	if s, _ := p.settings.get(context.Background()); s.Method != argov1alpha1.TrackingMethodLabel {
		t.Fatalf("settings re-read within the TTL: %+v", s)
	}
	now = now.Add(settingsTTL)
	if s, _ := p.settings.get(context.Background()); s.Method != argov1alpha1.TrackingMethodAnnotation {
		t.Fatalf("settings not re-read after the TTL: %+v", s)
	}
}

func TestCacheTransforms(t *testing.T) {
	app := application(cp, "web", lists("shop", "web"), func(a *argov1alpha1.Application) {
		a.Annotations = map[string]string{"kubectl.kubernetes.io/last-applied-configuration": strings.Repeat("x", 1000), "kargo.akuity.io/authorized-stage": "p:s"}
		a.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "argocd"}}
		a.ResourceVersion = "42"
		a.Spec.Source = &argov1alpha1.ApplicationSource{RepoURL: "https://example.com/repo.git"}
		a.Status.History = argov1alpha1.RevisionHistories{{Revision: "abc"}}
		a.Status.Resources = append(a.Status.Resources, argov1alpha1.ResourceStatus{Kind: "ConfigMap", Namespace: "shop", Name: "c"})
		a.Status.Resources[0].Health = &argov1alpha1.HealthStatus{Status: "Healthy"}
		a.Status.OperationState = &argov1alpha1.OperationState{Phase: "Running", SyncResult: &argov1alpha1.SyncOperationResult{Revision: "abc"}}
		a.Operation = &argov1alpha1.Operation{Sync: &argov1alpha1.SyncOperation{Revision: "abc"}}
	})
	out, err := slimApplication(app)
	if err != nil {
		t.Fatal(err)
	}
	slim := out.(*argov1alpha1.Application)
	switch {
	case slim.ResourceVersion != "42" || slim.Annotations["kargo.akuity.io/authorized-stage"] != "p:s":
		t.Fatalf("lost metadata: %+v", slim.ObjectMeta)
	case slim.Annotations["kubectl.kubernetes.io/last-applied-configuration"] != "" || slim.ManagedFields != nil:
		t.Fatal("kept the last-applied annotation or managedFields")
	case slim.Spec.Source != nil || slim.Status.History != nil:
		t.Fatal("kept sources or history")
	case len(slim.Status.Resources) != 1 || slim.Status.Resources[0].Health != nil || slim.Status.Resources[0].Name != "web":
		t.Fatalf("resources = %+v, want the workload's identity only", slim.Status.Resources)
	case slim.Status.OperationState.Phase != "Running" || slim.Status.OperationState.SyncResult != nil:
		t.Fatalf("operation state = %+v", slim.Status.OperationState)
	case slim.Operation == nil || slim.Operation.Sync != nil:
		t.Fatalf("operation = %+v, want a marker", slim.Operation)
	case slim.Status.Sync.Status != argov1alpha1.SyncStatusCodeSynced || slim.Spec.Destination.Namespace != "shop" || slim.Spec.Project != "default":
		t.Fatal("lost what decisions read")
	}
	again, _ := slimApplication(slim)
	if reason, _ := SyncState(again.(*argov1alpha1.Application)); reason != kickv1alpha1.GateOwnerReconciling {
		t.Fatalf("a twice-slimmed Application decides %s", reason)
	}
	proj := project("default", &argov1alpha1.InlineSyncWindow{Kind: "allow", Schedule: "* * * * *", Duration: "1h"})
	proj.Spec.Roles = []argov1alpha1.ProjectRole{{Name: "ci", JWTTokens: []argov1alpha1.JWTToken{{ID: "t"}}}}
	proj.Spec.SourceNamespaces = []string{"team"}
	proj.Spec.Destinations = []argov1alpha1.ApplicationDestination{{Server: "https://kubernetes.default.svc", Name: "in-cluster", Namespace: "shop-*"}}
	out, _ = slimProject(proj)
	sp := out.(*argov1alpha1.AppProject)
	if sp.Spec.Roles != nil || len(sp.Spec.SyncWindows) != 1 || len(sp.Spec.SourceNamespaces) != 1 ||
		len(sp.Spec.Destinations) != 1 || sp.Spec.Destinations[0] != (argov1alpha1.ApplicationDestination{Namespace: "shop-*"}) {
		t.Fatalf("slim project = %+v", sp.Spec)
	}
	opts := CacheOptions(Options{Namespace: cp, ApplicationNamespaces: []string{"team", ""}})
	for obj, by := range opts {
		switch obj.(type) {
		case *argov1alpha1.Application:
			if len(by.Namespaces) != 2 {
				t.Fatalf("Application namespaces = %v", by.Namespaces)
			}
		case *argov1alpha1.AppProject:
			if _, ok := by.Namespaces[cp]; !ok || len(by.Namespaces) != 1 {
				t.Fatalf("AppProject namespaces = %v", by.Namespaces)
			}
		}
	}
}
