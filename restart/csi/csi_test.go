package csi

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/observe"
	"github.com/kick-operator/kick/router"
)

var keys = observe.NewFingerprinter([]byte("0123456789abcdef0123456789abcdef"))

func status(pod string, mounted bool, versions ...string) *SecretProviderClassPodStatus {
	s := &SecretProviderClassPodStatus{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: pod + "-shop-vault"}}
	s.Status = PodStatus{PodName: pod, SecretProviderClassName: "vault", Mounted: mounted}
	for i, v := range versions {
		s.Status.Objects = append(s.Status.Objects, Object{ID: "secret/" + string(rune('a'+i)), Version: v})
	}
	return s
}

func TestAgree(t *testing.T) {
	m := func(pod string, versions ...string) Mount {
		got, ok := MountOf(keys, status(pod, true, versions...))
		if !ok {
			t.Fatal("mounted status unusable")
		}
		return got
	}
	if a := Agree(nil); a.Agreed || a.Pods != 0 {
		t.Fatalf("no pods: %+v", a)
	}
	a := Agree([]Mount{m("p1", "1", "7"), m("p2", "1", "7")})
	if !a.Agreed || a.Pods != 2 || a.Distinct != 1 || len(a.Fingerprint) != 64 {
		t.Fatalf("same versions: %+v", a)
	}
	if b := Agree([]Mount{m("p1", "2", "7"), m("p2", "1", "7")}); b.Agreed || b.Distinct != 2 || b.Fingerprint != "" {
		t.Fatalf("staged rotation: %+v", b)
	}
	if c := Agree([]Mount{m("p1", "2", "7"), m("p2", "2", "7")}); !c.Agreed || c.Fingerprint == a.Fingerprint {
		t.Fatalf("rotated: %+v (before %s)", c, a.Fingerprint)
	}
	if _, ok := MountOf(keys, status("p3", false, "1")); ok {
		t.Fatal("an unmounted status counted")
	}
}

func TestMountedFingerprint(t *testing.T) {
	a := keys.Mounted([]observe.MountedObject{{ID: "x", Version: "1"}, {ID: "y", Version: "2"}})
	b := keys.Mounted([]observe.MountedObject{{ID: "y", Version: "2"}, {ID: "x", Version: "1"}})
	if a != b {
		t.Fatal("the order of the objects changes the fingerprint")
	}
	for _, other := range [][]observe.MountedObject{
		{{ID: "x", Version: "1"}, {ID: "y", Version: "3"}},
		{{ID: "x", Version: "1"}},
		{{ID: "x1", Version: ""}, {ID: "y", Version: "2"}},
		{{ID: "x", Version: "1y"}, {ID: "", Version: "2"}},
	} {
		if keys.Mounted(other) == a {
			t.Errorf("%v has the fingerprint of x=1,y=2", other)
		}
	}
	if observe.NewFingerprinter([]byte("another key of thirty-two bytes!")).Mounted([]observe.MountedObject{{ID: "x", Version: "1"}, {ID: "y", Version: "2"}}) == a {
		t.Fatal("the fingerprint is not keyed")
	}
	if strings.Contains(a, "x") {
		t.Fatal("fingerprint leaks")
	}
}

// --- one reconcile at a time against a fake client ---

type recorder struct {
	mu     sync.Mutex
	events []router.SourceChanged
}

func (p *recorder) Publish(_ context.Context, ev router.Event) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.events = append(p.events, ev.(router.SourceChanged))
	return nil
}

func (p *recorder) take() []router.SourceChanged {
	p.mu.Lock()
	defer p.mu.Unlock()
	ev := p.events
	p.events = nil
	return ev
}

type fixture struct {
	t   *testing.T
	c   client.Client
	r   *Reconciler
	pub *recorder
	now time.Time
}

func newFixture(t *testing.T) *fixture {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, kickv1alpha1.AddToScheme, AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	labels := map[string]string{"app": "web"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "d-uid"},
		Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
			Volumes: []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{
				Driver: "secrets-store.csi.k8s.io", VolumeAttributes: map[string]string{"secretProviderClass": "vault"}}}}},
		}}},
	}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-1", UID: "rs-uid",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "d-uid", Controller: ptr.To(true)}}}}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(d, rs).
		WithIndex(&SecretProviderClassPodStatus{}, ClassIndex, func(obj client.Object) []string {
			return []string{obj.(*SecretProviderClassPodStatus).Status.SecretProviderClassName}
		}).Build()
	f := &fixture{t: t, c: c, pub: &recorder{}, now: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
	f.r = &Reconciler{Client: c, APIReader: c, Router: f.pub, Keys: keys, IsManaged: observe.ManageAll, Now: func() time.Time { return f.now }}
	f.r.owners = map[types.NamespacedName]podOwner{}
	return f
}

func (f *fixture) pod(name string) types.UID {
	f.t.Helper()
	uid := types.UID("uid-" + name)
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, UID: uid,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-1", UID: "rs-uid", Controller: ptr.To(true)}}}}
	if err := f.c.Create(f.t.Context(), p); err != nil {
		f.t.Fatal(err)
	}
	return uid
}

// report writes (creates or updates) a pod's status with versions.
func (f *fixture) report(pod string, versions ...string) {
	f.t.Helper()
	s := status(pod, true, versions...)
	s.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod, UID: types.UID("uid-" + pod)}}
	var existing SecretProviderClassPodStatus
	if err := f.c.Get(f.t.Context(), client.ObjectKeyFromObject(s), &existing); err == nil {
		existing.Status = s.Status
		if err := f.c.Update(f.t.Context(), &existing); err != nil {
			f.t.Fatal(err)
		}
		return
	}
	if err := f.c.Create(f.t.Context(), s); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) reconcile() reconcile.Result {
	f.t.Helper()
	res, err := f.r.Reconcile(f.t.Context(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "shop", Name: "vault"}})
	if err != nil {
		f.t.Fatal(err)
	}
	return res
}

func (f *fixture) record() *kickv1alpha1.SourceObservation {
	f.t.Helper()
	var rec kickv1alpha1.SourceObservation
	name := kickv1alpha1.ConsumerObservationName("SecretProviderClass", "vault", kickv1alpha1.TargetDeployment, "web")
	if err := f.c.Get(f.t.Context(), types.NamespacedName{Namespace: "shop", Name: name}, &rec); err != nil {
		f.t.Fatal(err)
	}
	return &rec
}

func TestReconcileBaselineRotationAndStagedRotation(t *testing.T) {
	f := newFixture(t)
	f.pod("web-a")
	f.pod("web-b")
	f.report("web-a", "1")
	f.report("web-b", "1")

	// First agreement: an epoch baseline, owned by the workload.
	if res := f.reconcile(); res.RequeueAfter != 0 {
		t.Fatalf("agreeing pods requeued: %+v", res)
	}
	rec := f.record()
	if rec.Spec.Class != kickv1alpha1.ObservationBaseline || !rec.Spec.LastRelevantChangeTime.Equal(Epoch) ||
		rec.Spec.Source.Kind != kickv1alpha1.SourceSecretProviderClass || rec.Spec.Source.Name != "vault" ||
		len(rec.OwnerReferences) != 1 || rec.OwnerReferences[0].UID != "d-uid" {
		t.Fatalf("baseline record: %+v", rec)
	}
	if ev := f.pub.take(); len(ev) != 1 || ev[0].Class != router.SourceClass(observe.Baseline) || !ev[0].ChangeTime.Equal(Epoch) {
		t.Fatalf("baseline events: %+v", ev)
	}
	for _, v := range []string{"secret/a", `"1"`} {
		if strings.Contains(rec.Spec.RelevantFingerprint, v) {
			t.Fatal("record holds plain versions")
		}
	}

	// The same versions again: nothing.
	f.report("web-a", "1")
	f.reconcile()
	if ev := f.pub.take(); len(ev) != 0 {
		t.Fatalf("identical write published %+v", ev)
	}

	// Staged rotation: one pod new, one old. Wait and re-check.
	f.now = f.now.Add(time.Minute)
	f.report("web-a", "2")
	if res := f.reconcile(); res.RequeueAfter != DefaultRecheck {
		t.Fatalf("disagreeing pods: %+v, want a re-check", res)
	}
	if ev := f.pub.take(); len(ev) != 0 {
		t.Fatalf("staged rotation published %+v", ev)
	}
	if f.record().Spec.RelevantFingerprint != rec.Spec.RelevantFingerprint {
		t.Fatal("record changed during a staged rotation")
	}

	// Agreement on the new versions: one relevant change, dated now.
	f.now = f.now.Add(time.Minute)
	f.report("web-b", "2")
	f.reconcile()
	ev := f.pub.take()
	if len(ev) != 1 || ev[0].Class != router.SourceClass(observe.Relevant) || !ev[0].ChangeTime.Equal(f.now) ||
		len(ev[0].Consumers) != 1 || ev[0].Consumers[0].String() != "Deployment.apps shop/web" ||
		ev[0].Source.String() != "SecretProviderClass.secrets-store.csi.x-k8s.io shop/vault" {
		t.Fatalf("rotation events: %+v", ev)
	}
	if rec := f.record(); rec.Spec.Class != kickv1alpha1.ObservationRelevant || !rec.Spec.LastRelevantChangeTime.Equal(f.now) {
		t.Fatalf("record after rotation: %+v", rec.Spec)
	}
	f.reconcile()
	if ev := f.pub.take(); len(ev) != 0 {
		t.Fatalf("a second look published %+v", ev)
	}
}

func TestReconcileIgnoresGonePods(t *testing.T) {
	f := newFixture(t)
	f.pod("web-a")
	f.pod("web-b")
	f.report("web-a", "1")
	f.report("web-b", "1")
	f.reconcile()
	f.pub.take()

	// web-b is replaced; its status lingers with the old versions until it
	// is garbage-collected, while the new pod web-c reports the new ones.
	if err := f.c.Delete(f.t.Context(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-b"}}); err != nil {
		t.Fatal(err)
	}
	f.pod("web-c")
	f.report("web-a", "2")
	f.report("web-c", "2")
	f.reconcile()
	if ev := f.pub.take(); len(ev) != 1 || ev[0].Class != router.SourceClass(observe.Relevant) {
		t.Fatalf("events: %+v, want one relevant change once the gone pod is dropped", ev)
	}
}

func TestReconcileUnmanagedWorkloadGetsNoRecord(t *testing.T) {
	f := newFixture(t)
	f.r.IsManaged = func(context.Context, client.Object) (bool, func(map[string]string) bool) { return false, nil }
	f.pod("web-a")
	f.report("web-a", "1")
	f.reconcile()
	var list kickv1alpha1.SourceObservationList
	if err := f.c.List(f.t.Context(), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 0 || len(f.pub.take()) != 0 {
		t.Fatalf("unmanaged workload: records %d", len(list.Items))
	}
}

func TestClassesOf(t *testing.T) {
	f := newFixture(t)
	var d appsv1.Deployment
	if err := f.c.Get(t.Context(), types.NamespacedName{Namespace: "shop", Name: "web"}, &d); err != nil {
		t.Fatal(err)
	}
	if got := ClassesOf(&d); len(got) != 1 || got[0].String() != "shop/vault" {
		t.Fatalf("ClassesOf = %v", got)
	}
}
