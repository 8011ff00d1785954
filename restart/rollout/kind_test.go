package rollout

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/workload"
)

func fakeClient(t *testing.T, objs ...client.Object) client.Client {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).
		WithIndex(&Rollout{}, WorkloadRefIndex, WorkloadRefIndexFunc).
		WithIndex(&appsv1.ReplicaSet{}, workload.OwnerIndex, func(obj client.Object) []string {
			if ref := metav1.GetControllerOf(obj); ref != nil {
				return []string{string(ref.UID)}
			}
			return nil
		}).Build()
}

func deployment(name string, replicas int32) *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To(replicas)}}
}

func referencing(name, deploymentName string) *Rollout {
	return &Rollout{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name},
		Spec: Spec{WorkloadRef: &WorkloadRef{APIVersion: "apps/v1", Kind: "Deployment", Name: deploymentName}}}
}

func TestRegistryWithRollouts(t *testing.T) {
	builtin := workload.Builtin()
	if _, err := builtin.New(kickv1alpha1.TargetRollout); err == nil {
		t.Fatal("the built-in registry makes Rollouts")
	}
	kinds := Register(builtin)
	if len(builtin.Kinds()) != 3 || len(kinds.Kinds()) != 4 {
		t.Fatalf("Register changed the registry it extends: %d / %d kinds", len(builtin.Kinds()), len(kinds.Kinds()))
	}
	obj, err := kinds.New(kickv1alpha1.TargetRollout)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := obj.(*Rollout); !ok || workload.KindOf(obj) != kickv1alpha1.TargetRollout {
		t.Fatalf("New(Rollout) = %T", obj)
	}
	if kinds.APIVersion(kickv1alpha1.TargetRollout) != "argoproj.io/v1alpha1" {
		t.Fatal("Rollout APIVersion")
	}
	list := &RolloutList{Items: []Rollout{*referencing("a", "web"), *healthy()}}
	if items := workload.Items(list); len(items) != 2 || items[1].GetName() != "web" {
		t.Fatalf("Items = %v", items)
	}
}

func TestHandleRedirectsAScaledDownReferencedDeployment(t *testing.T) {
	ctx := t.Context()
	kinds := Register(workload.Builtin())
	for _, tc := range []struct {
		name    string
		objs    []client.Object
		target  *appsv1.Deployment
		through string
	}{
		{"scaled to zero, one Rollout", []client.Object{referencing("ro", "web")}, deployment("web", 0), "Rollout shop/ro"},
		{"still running its own pods", []client.Object{referencing("ro", "web")}, deployment("web", 2), "Deployment shop/web"},
		{"not referenced", []client.Object{referencing("ro", "other")}, deployment("web", 0), "Deployment shop/web"},
		{"referenced twice", []client.Object{referencing("ro", "web"), referencing("ro2", "web")}, deployment("web", 0), "Deployment shop/web"},
	} {
		c := fakeClient(t, append(tc.objs, tc.target)...)
		h, err := kinds.Handle(ctx, c, tc.target)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := h.Ref().String(); got != tc.through {
			t.Errorf("%s: restarted through %s, want %s", tc.name, got, tc.through)
		}
		if h.Redirected() != (tc.through != "Deployment shop/web") {
			t.Errorf("%s: Redirected = %v", tc.name, h.Redirected())
		}
	}

	// Without the Rollouts integration nothing is redirected.
	c := fakeClient(t, referencing("ro", "web"))
	h, err := workload.Builtin().Handle(ctx, c, deployment("web", 0))
	if err != nil || h.Redirected() {
		t.Fatalf("builtin registry: %v redirected=%v", err, h.Redirected())
	}
}

func TestHandleRestartsThroughRestartAt(t *testing.T) {
	ctx := t.Context()
	ro := healthy()
	ro.Spec.Template.Annotations = map[string]string{"keep": "me"}
	c := fakeClient(t, ro)
	kinds := Register(workload.Builtin())
	h, err := kinds.Handle(ctx, c, ro)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := h.Current(); ok {
		t.Fatal("a fresh Rollout carries a restart")
	}
	now := time.Date(2026, 5, 1, 12, 0, 0, 1, time.UTC)
	ts, value := h.Stamp(now, now.Add(-time.Minute))
	if err := h.Restart(ctx, c, value); err != nil {
		t.Fatal(err)
	}
	var got Rollout
	if err := c.Get(ctx, client.ObjectKeyFromObject(ro), &got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.RestartAt == nil || !got.Spec.RestartAt.Time.Equal(ts) || !ts.Equal(now.Truncate(time.Second).Add(time.Second)) {
		t.Fatalf("restartAt = %v, want %s", got.Spec.RestartAt, ts)
	}
	if got.Spec.Template.Annotations["kubectl.kubernetes.io/restartedAt"] != "" || got.Spec.Template.Annotations["keep"] != "me" {
		t.Fatalf("the pod template changed: %v", got.Spec.Template.Annotations)
	}
	if cur, ok := (workload.Handle{Object: &got, Kind: h.Kind, Target: &got}).Current(); !ok || !cur.Equal(ts) {
		t.Fatalf("Current after the restart = %s %v", cur, ok)
	}
}

// TestFollowKeepsARestartWhereItWasWritten: scaling a referenced Deployment
// changes which object a new restart goes through, but a restart already
// written is followed on the object that carries it, in both directions.
func TestFollowKeepsARestartWhereItWasWritten(t *testing.T) {
	ctx := t.Context()
	kinds := Register(workload.Builtin())
	restartAt := metav1.NewTime(time.Date(2026, 5, 1, 12, 0, 1, 0, time.UTC))
	stamped := func(name, deploymentName string) *Rollout {
		ro := referencing(name, deploymentName)
		ro.Spec.RestartAt = &restartAt
		return ro
	}
	const templateStamp = "2026-05-01T12:00:00.123456789Z"
	withTemplateStamp := func(d *appsv1.Deployment, stamp string) *appsv1.Deployment {
		d.Spec.Template.Annotations = map[string]string{"kubectl.kubernetes.io/restartedAt": stamp}
		return d
	}
	for _, tc := range []struct {
		name     string
		rollout  *Rollout
		target   *appsv1.Deployment
		value    string
		handle   string
		followed string
	}{
		{"restarted through the Rollout, then scaled up", stamped("ro", "web"), deployment("web", 2), restartAt.UTC().Format(time.RFC3339), "Deployment shop/web", "Rollout shop/ro"},
		{"restarted through the Rollout, still at zero", stamped("ro", "web"), deployment("web", 0), restartAt.UTC().Format(time.RFC3339), "Rollout shop/ro", "Rollout shop/ro"},
		{"restarted through the template, then scaled to zero", referencing("ro", "web"), withTemplateStamp(deployment("web", 0), templateStamp), templateStamp, "Rollout shop/ro", "Deployment shop/web"},
		{"the Rollout restarted later by someone else", stamped("ro", "web"), deployment("web", 2), "2026-05-01T12:00:00Z", "Deployment shop/web", "Rollout shop/ro"},
		{"not visible yet", referencing("ro", "web"), deployment("web", 2), restartAt.UTC().Format(time.RFC3339), "Deployment shop/web", "Deployment shop/web"},
		{"not a stamp", stamped("ro", "web"), deployment("web", 2), "", "Deployment shop/web", "Deployment shop/web"},
	} {
		c := fakeClient(t, tc.rollout, tc.target)
		h, err := kinds.Handle(ctx, c, tc.target)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := h.Ref().String(); got != tc.handle {
			t.Errorf("%s: a new restart goes through %s, want %s", tc.name, got, tc.handle)
		}
		f, err := kinds.Follow(ctx, c, tc.target, tc.value)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := f.Ref().String(); got != tc.followed {
			t.Errorf("%s: the restart is followed through %s, want %s", tc.name, got, tc.followed)
		}
		if f.Target != tc.target {
			t.Errorf("%s: Follow lost the target", tc.name)
		}
	}
}
