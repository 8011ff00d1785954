package flux

import (
	"fmt"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	fluxgate "github.com/kick-operator/kick/gitops/flux"
	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/integration/fixture"
)

const (
	fluxPolicy = "discovery: {workloadSelector: {}}\ngitOps: {provider: Flux}"
	autoPolicy = "discovery: {workloadSelector: {}}\ngitOps: {provider: Auto}"
	request    = "deployment-web"
)

// kustomizationLabels are the labels kustomize-controller puts on what a
// Kustomization in namespace ns applies.
func kustomizationLabels(ns, name string) map[string]string {
	return map[string]string{fluxgate.KustomizeNameLabel: name, fluxgate.KustomizeNamespaceLabel: ns}
}

// helmLabels are the labels helm-controller puts on a release's objects.
func helmLabels(ns, name string) map[string]string {
	return map[string]string{fluxgate.HelmNameLabel: name, fluxgate.HelmNamespaceLabel: ns}
}

// webApplied creates Secret db and Deployment web consuming it, the
// Deployment carrying the given owner labels as if Flux had applied it,
// and waits until it is available and KICK has its baseline.
func webApplied(f *fixture.F, ownerLabels map[string]string) {
	f.T.Helper()
	f.Secret("db", map[string]string{"password": "alpha"}, nil)
	labels := map[string]string{"app": "web"}
	for k, v := range ownerLabels {
		labels[k] = v
	}
	f.Create(&appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}, Spec: fixture.PodSpec("db")},
		},
	})
	f.WaitAvailable("web")
	f.WaitObservation("db")
}

// condition is a status condition as the Flux controllers write it.
func condition(typ string, status metav1.ConditionStatus, gen int64, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, ObservedGeneration: gen, Reason: reason, Message: msg,
		LastTransitionTime: metav1.Now()}
}

func ready(gen int64) []metav1.Condition {
	return []metav1.Condition{condition("Ready", metav1.ConditionTrue, gen, "ReconciliationSucceeded", "Applied revision: main@sha1:0a1b2c")}
}

// inventory lists workloads of the test namespace as Flux inventory ids,
// next to a Service, as a Kustomization applying them would.
func inventory(ns string, deployments ...string) *kustomizev1.ResourceInventory {
	inv := &kustomizev1.ResourceInventory{Entries: []kustomizev1.ResourceRef{{ID: ns + "_web__Service", Version: "v1"}}}
	for _, d := range deployments {
		inv.Entries = append(inv.Entries, kustomizev1.ResourceRef{ID: ns + "_" + d + "_apps_Deployment", Version: "v1"})
	}
	return inv
}

// createKustomization creates Kustomization NAME in the test namespace and,
// when status is given, writes it through the status subresource.
func createKustomization(f *fixture.F, name string, suspend bool, status func(k *kustomizev1.Kustomization)) {
	f.T.Helper()
	k := &kustomizev1.Kustomization{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: kustomizev1.KustomizationSpec{
			Interval:  metav1.Duration{Duration: 10 * time.Minute},
			Path:      "./apps",
			Prune:     true,
			Suspend:   suspend,
			SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: "GitRepository", Name: "platform"},
		},
	}
	f.Create(k)
	if status != nil {
		updateKustomizationStatus(f, name, status)
	}
}

// updateKustomizationStatus rewrites a Kustomization's status the way
// kustomize-controller does: through the status subresource.
func updateKustomizationStatus(f *fixture.F, name string, mutate func(k *kustomizev1.Kustomization)) {
	f.T.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var k kustomizev1.Kustomization
		if err := f.Env.Client.Get(f.Ctx, client.ObjectKey{Namespace: f.NS, Name: name}, &k); err != nil {
			return err
		}
		mutate(&k)
		return f.Env.Client.Status().Update(f.Ctx, &k)
	})
	if err != nil {
		f.T.Fatalf("update status of Kustomization %s: %v", name, err)
	}
}

// patchKustomizationSpec changes a Kustomization's spec (a new generation)
// and returns the new generation.
func patchKustomizationSpec(f *fixture.F, name string, mutate func(k *kustomizev1.Kustomization)) int64 {
	f.T.Helper()
	var gen int64
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var k kustomizev1.Kustomization
		if err := f.Env.Client.Get(f.Ctx, client.ObjectKey{Namespace: f.NS, Name: name}, &k); err != nil {
			return err
		}
		mutate(&k)
		if err := f.Env.Client.Update(f.Ctx, &k); err != nil {
			return err
		}
		gen = k.Generation
		return nil
	})
	if err != nil {
		f.T.Fatalf("update Kustomization %s: %v", name, err)
	}
	return gen
}

func createHelmRelease(f *fixture.F, name string, status func(h *helmv2.HelmRelease)) {
	f.T.Helper()
	h := &helmv2.HelmRelease{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: helmv2.HelmReleaseSpec{
			Interval: metav1.Duration{Duration: 10 * time.Minute},
			Chart: &helmv2.HelmChartTemplate{Spec: helmv2.HelmChartTemplateSpec{
				Chart:     "web",
				SourceRef: &helmv2.CrossNamespaceObjectReference{Kind: "HelmRepository", Name: "charts"},
			}},
		},
	}
	f.Create(h)
	if status != nil {
		updateHelmReleaseStatus(f, name, status)
	}
}

func updateHelmReleaseStatus(f *fixture.F, name string, mutate func(h *helmv2.HelmRelease)) {
	f.T.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var h helmv2.HelmRelease
		if err := f.Env.Client.Get(f.Ctx, client.ObjectKey{Namespace: f.NS, Name: name}, &h); err != nil {
			return err
		}
		mutate(&h)
		return f.Env.Client.Status().Update(f.Ctx, &h)
	})
	if err != nil {
		f.T.Fatalf("update status of HelmRelease %s: %v", name, err)
	}
}

// waitBlocked waits until the request waits in phase with reason, checks
// that the workload was not restarted, and returns the request.
func waitBlocked(f *fixture.F, phase kickv1alpha1.KickRequestPhase, reason kickv1alpha1.GateReason) *kickv1alpha1.KickRequest {
	f.T.Helper()
	var kr *kickv1alpha1.KickRequest
	cluster.Eventually(f.T, 30*time.Second, fmt.Sprintf("KickRequest %s to wait in %s with reason %s", request, phase, reason), func() (bool, error) {
		var err error
		if kr, err = f.Request(request); err != nil {
			return false, err
		}
		if kr.Status.Phase.IsTerminal() {
			f.T.Fatalf("KickRequest %s finished (%s, gate %+v) while it should wait with reason %s", request, kr.Status.Phase, kr.Status.Gate, reason)
		}
		ok := kr.Status.Phase == phase && kr.Status.Gate != nil && kr.Status.Gate.Reason == reason
		return ok, fmt.Errorf("phase %q, gate %+v", kr.Status.Phase, kr.Status.Gate)
	})
	if got := f.ReplicaSets("web"); len(got) != 1 {
		f.T.Fatalf("the workload was restarted while the gate held it: ReplicaSets %v", got)
	}
	return kr
}

// waitAllowedSoon measures how long the request takes to pass the gate
// after the owner changed at since. No timer re-evaluates a request held
// by a Flux owner, so only the watch on the owner can get it through; the
// short deadline makes that visible.
func waitAllowedSoon(f *fixture.F, since time.Time) {
	f.T.Helper()
	cluster.Eventually(f.T, 10*time.Second, "the owner change to let the restart through", func() (bool, error) {
		kr, err := f.Request(request)
		if err != nil {
			return false, err
		}
		allowed := meta.IsStatusConditionTrue(kr.Status.Conditions, kickv1alpha1.ConditionGateAllowed) || kr.Status.RestartCount > 0
		return allowed, fmt.Errorf("phase %q, gate %+v", kr.Status.Phase, kr.Status.Gate)
	})
	f.T.Logf("gate passed %s after the owner changed", time.Since(since).Round(time.Millisecond))
}

// waitRestartedOnce waits until the request succeeded with one restart and
// the workload has exactly one new ReplicaSet.
func waitRestartedOnce(f *fixture.F) *kickv1alpha1.KickRequest {
	f.T.Helper()
	kr := f.WaitPhase(request, kickv1alpha1.PhaseSucceeded, 60*time.Second)
	if kr.Status.RestartCount != 1 {
		f.T.Fatalf("restartCount = %d, want 1", kr.Status.RestartCount)
	}
	f.WaitReplicaSets("web", 2)
	return kr
}

func wantOwner(f *fixture.F, kr *kickv1alpha1.KickRequest, kind, name string) {
	f.T.Helper()
	o := kr.Status.Owner
	if o == nil || o.Provider != kickv1alpha1.ProviderFlux || o.Kind != kind || o.Namespace != f.NS || o.Name != name || o.APIVersion == "" {
		f.T.Fatalf("status.owner = %+v, want Flux %s %s/%s", o, kind, f.NS, name)
	}
	if kr.Status.Provider != kickv1alpha1.ProviderFlux {
		f.T.Fatalf("status.provider = %q, want Flux", kr.Status.Provider)
	}
}
