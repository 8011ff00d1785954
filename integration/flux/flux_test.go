package flux

import (
	"strings"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/integration/fixture"
)

func TestReadyKustomizationAllows(t *testing.T) {
	f := fixture.Setup(t)
	f.Policy("flux", fluxPolicy)
	createKustomization(f, "apps", false, func(k *kustomizev1.Kustomization) {
		k.Status.ObservedGeneration = k.Generation
		k.Status.Conditions = ready(k.Generation)
		k.Status.Inventory = inventory(f.NS, "web")
	})
	webApplied(f, kustomizationLabels(f.NS, "apps"))

	f.SetSecret("db", map[string]string{"password": "bravo"})
	kr := waitRestartedOnce(f)
	wantOwner(f, kr, "Kustomization", "apps")
}

func TestReadyHelmReleaseAllows(t *testing.T) {
	f := fixture.Setup(t)
	f.Policy("flux", fluxPolicy)
	createHelmRelease(f, "web", func(h *helmv2.HelmRelease) {
		h.Status.ObservedGeneration = h.Generation
		h.Status.Conditions = append(ready(h.Generation),
			condition("Released", metav1.ConditionTrue, h.Generation, "UpgradeSucceeded", "Helm upgrade succeeded for release web"))
	})
	webApplied(f, helmLabels(f.NS, "web"))

	f.SetSecret("db", map[string]string{"password": "bravo"})
	kr := waitRestartedOnce(f)
	wantOwner(f, kr, "HelmRelease", "web")
}

// TestFailingKustomizationWaitsUntilReady: a Kustomization whose last
// apply failed holds the restart (OwnerOutOfSync); once Flux reports it
// Ready the watch lets the restart through within moments.
func TestFailingKustomizationWaitsUntilReady(t *testing.T) {
	f := fixture.Setup(t)
	f.Policy("flux", fluxPolicy)
	createKustomization(f, "apps", false, func(k *kustomizev1.Kustomization) {
		k.Status.ObservedGeneration = k.Generation
		// As kustomize-controller writes a failure (integration/e2e runs
		// the real one): Ready=False says what failed, and Reconciling
		// stays True with ProgressingWithRetry until an attempt succeeds.
		k.Status.Conditions = []metav1.Condition{
			condition("Reconciling", metav1.ConditionTrue, k.Generation, "ProgressingWithRetry", "Detecting drift for revision main@sha1:0a1b2c with a timeout of 5m0s"),
			condition("Ready", metav1.ConditionFalse, k.Generation, "HealthCheckFailed", "timeout waiting for: [Deployment/web status: 'InProgress']"),
		}
		k.Status.Inventory = inventory(f.NS, "web")
	})
	webApplied(f, kustomizationLabels(f.NS, "apps"))

	f.SetSecret("db", map[string]string{"password": "bravo"})
	kr := waitBlocked(f, kickv1alpha1.PhaseWaitingForApplicationSync, kickv1alpha1.GateOwnerOutOfSync)
	if !strings.Contains(kr.Status.Gate.Message, "HealthCheckFailed") {
		t.Fatalf("the gate message should carry Flux's reason: %q", kr.Status.Gate.Message)
	}
	wantOwner(f, kr, "Kustomization", "apps")

	since := time.Now()
	updateKustomizationStatus(f, "apps", func(k *kustomizev1.Kustomization) { k.Status.Conditions = ready(k.Generation) })
	waitAllowedSoon(f, since)
	waitRestartedOnce(f)
}

// TestReconcilingHelmReleaseWaitsUntilReady: a HelmRelease in the middle
// of an upgrade (Reconciling=True, Ready=Unknown) holds the restart with
// OwnerReconciling until helm-controller reports it Ready.
func TestReconcilingHelmReleaseWaitsUntilReady(t *testing.T) {
	f := fixture.Setup(t)
	f.Policy("flux", fluxPolicy)
	createHelmRelease(f, "web", func(h *helmv2.HelmRelease) {
		h.Status.ObservedGeneration = h.Generation
		h.Status.Conditions = []metav1.Condition{
			condition("Reconciling", metav1.ConditionTrue, h.Generation, "Progressing", "Running 'upgrade' action with timeout of 5m0s"),
			condition("Ready", metav1.ConditionUnknown, h.Generation, "Progressing", "Running 'upgrade' action with timeout of 5m0s"),
		}
	})
	webApplied(f, helmLabels(f.NS, "web"))

	f.SetSecret("db", map[string]string{"password": "bravo"})
	kr := waitBlocked(f, kickv1alpha1.PhaseWaitingForApplicationSync, kickv1alpha1.GateOwnerReconciling)
	wantOwner(f, kr, "HelmRelease", "web")

	since := time.Now()
	updateHelmReleaseStatus(f, "web", func(h *helmv2.HelmRelease) { h.Status.Conditions = ready(h.Generation) })
	waitAllowedSoon(f, since)
	waitRestartedOnce(f)
}

// TestSuspendedKustomizationWaitsUntilResumed: a suspended owner holds the
// restart (OwnerSuspended). Resuming it is a spec change, so the Ready
// condition now describes an older generation and the restart keeps
// waiting (OwnerReconciling) until Flux has reconciled the new one.
func TestSuspendedKustomizationWaitsUntilResumed(t *testing.T) {
	f := fixture.Setup(t)
	f.Policy("flux", fluxPolicy)
	createKustomization(f, "apps", true, func(k *kustomizev1.Kustomization) {
		k.Status.ObservedGeneration = k.Generation
		k.Status.Conditions = ready(k.Generation)
		k.Status.Inventory = inventory(f.NS, "web")
	})
	webApplied(f, kustomizationLabels(f.NS, "apps"))

	f.SetSecret("db", map[string]string{"password": "bravo"})
	kr := waitBlocked(f, kickv1alpha1.PhaseWaitingForApplicationSync, kickv1alpha1.GateOwnerSuspended)
	wantOwner(f, kr, "Kustomization", "apps")

	gen := patchKustomizationSpec(f, "apps", func(k *kustomizev1.Kustomization) { k.Spec.Suspend = false })
	kr = waitBlocked(f, kickv1alpha1.PhaseWaitingForApplicationSync, kickv1alpha1.GateOwnerReconciling)
	if !strings.Contains(kr.Status.Gate.Message, "generation") {
		t.Fatalf("the gate message should say the new generation is not reconciled yet: %q", kr.Status.Gate.Message)
	}

	since := time.Now()
	updateKustomizationStatus(f, "apps", func(k *kustomizev1.Kustomization) {
		k.Status.ObservedGeneration = gen
		k.Status.Conditions = ready(gen)
	})
	waitAllowedSoon(f, since)
	waitRestartedOnce(f)
}

// TestInventoryWithoutTheWorkloadBlocks: the labels name a Kustomization
// whose inventory does not list the workload, so it is not the owner and
// the restart waits for one (OwnerUnknown). When the inventory comes to
// list the workload, the Kustomization's change wakes the request through
// its target, since the request had no owner to be found by.
func TestInventoryWithoutTheWorkloadBlocks(t *testing.T) {
	f := fixture.Setup(t)
	f.Policy("flux", fluxPolicy)
	createKustomization(f, "apps", false, func(k *kustomizev1.Kustomization) {
		k.Status.ObservedGeneration = k.Generation
		k.Status.Conditions = ready(k.Generation)
		k.Status.Inventory = inventory(f.NS, "api")
	})
	webApplied(f, kustomizationLabels(f.NS, "apps"))

	f.SetSecret("db", map[string]string{"password": "bravo"})
	kr := waitBlocked(f, kickv1alpha1.PhaseWaitingForOwner, kickv1alpha1.GateOwnerUnknown)
	if msg := kr.Status.Gate.Message; !strings.Contains(msg, "inventory does not list "+f.NS+"_web_apps_Deployment") || !strings.Contains(msg, "Kustomization "+f.NS+"/apps") {
		t.Fatalf("the gate message should name the Kustomization and the missing inventory entry: %q", msg)
	}
	if kr.Status.Owner != nil {
		t.Fatalf("an owner the inventory disowns must not be recorded: %+v", kr.Status.Owner)
	}

	since := time.Now()
	updateKustomizationStatus(f, "apps", func(k *kustomizev1.Kustomization) { k.Status.Inventory = inventory(f.NS, "api", "web") })
	waitAllowedSoon(f, since)
	kr = waitRestartedOnce(f)
	wantOwner(f, kr, "Kustomization", "apps")
}

// TestKustomizationWithoutConditionsExplains: an owner Flux has not
// reconciled yet has no status at all; the request waits and says so.
func TestKustomizationWithoutConditionsExplains(t *testing.T) {
	f := fixture.Setup(t)
	f.Policy("flux", fluxPolicy)
	createKustomization(f, "apps", false, nil)
	webApplied(f, kustomizationLabels(f.NS, "apps"))

	f.SetSecret("db", map[string]string{"password": "bravo"})
	kr := waitBlocked(f, kickv1alpha1.PhaseWaitingForApplicationSync, kickv1alpha1.GateOwnerReconciling)
	if msg := kr.Status.Gate.Message; !strings.Contains(msg, "Kustomization "+f.NS+"/apps has not reported readiness yet") {
		t.Fatalf("unclear gate message: %q", msg)
	}
	wantOwner(f, kr, "Kustomization", "apps")
}

// TestAutoPicksFlux: with provider Auto on a cluster that has the Argo CD
// CRDs but no Application claiming the workload, the Flux labels decide.
func TestAutoPicksFlux(t *testing.T) {
	f := fixture.Setup(t)
	f.Policy("auto", autoPolicy)
	createKustomization(f, "apps", false, func(k *kustomizev1.Kustomization) {
		k.Status.ObservedGeneration = k.Generation
		k.Status.Conditions = ready(k.Generation)
		k.Status.Inventory = inventory(f.NS, "web")
	})
	webApplied(f, kustomizationLabels(f.NS, "apps"))

	f.SetSecret("db", map[string]string{"password": "bravo"})
	kr := waitRestartedOnce(f)
	wantOwner(f, kr, "Kustomization", "apps")
}

// TestOwnerCreatedAfterTheChange: the workload's labels name a HelmRelease
// that does not exist yet, so the request waits for an owner (with none
// recorded, it is indexed only under its target). When the HelmRelease
// appears, with no inventory listing the workload, its wake reaches the
// request through the workload's labels (the provider's claim index): no
// timer would re-evaluate it, so the short deadline of waitAllowedSoon
// shows the wake.
func TestOwnerCreatedAfterTheChange(t *testing.T) {
	f := fixture.Setup(t)
	f.Policy("flux", fluxPolicy)
	webApplied(f, helmLabels(f.NS, "web"))

	f.SetSecret("db", map[string]string{"password": "bravo"})
	kr := waitBlocked(f, kickv1alpha1.PhaseWaitingForOwner, kickv1alpha1.GateOwnerUnknown)
	if msg := kr.Status.Gate.Message; !strings.Contains(msg, "name HelmRelease "+f.NS+"/web as its owner, but that HelmRelease does not exist") {
		t.Fatalf("the gate message should say the labelled owner does not exist: %q", msg)
	}
	if kr.Status.Owner != nil || kr.Status.Gate.RequeueAt != nil {
		t.Fatalf("owner %+v, requeueAt %v: want neither", kr.Status.Owner, kr.Status.Gate.RequeueAt)
	}

	since := time.Now()
	createHelmRelease(f, "web", func(h *helmv2.HelmRelease) {
		h.Status.ObservedGeneration = h.Generation
		h.Status.Conditions = ready(h.Generation)
	})
	waitAllowedSoon(f, since)
	kr = waitRestartedOnce(f)
	wantOwner(f, kr, "HelmRelease", "web")
}
