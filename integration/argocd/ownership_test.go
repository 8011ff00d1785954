// Package argocd proves the Argo CD gate end to end: the real kick-manager
// against a local control plane with the upstream Application and
// AppProject CRDs, whose status the tests write the way Argo CD does.
package argocd

import (
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	gitopsargo "github.com/kick-operator/kick/gitops/argocd"
	"github.com/kick-operator/kick/integration/cluster"
)

const synced = argov1alpha1.SyncStatusCodeSynced

// TestOwnership resolves owners through the tracking annotation (in the
// control-plane namespace and in a further application namespace), falls
// back to status.resources when the annotation is unusable, and blocks
// when no or several Applications own the workload.
func TestOwnership(t *testing.T) {
	apps := cluster.Get(t).Namespace(t)
	s := setup(t, nil, "--argocd-application-namespaces="+apps)
	proj := s.project("default")
	proj.Spec.SourceNamespaces = []string{apps}
	if err := s.Env.Client.Update(s.Ctx, proj); err != nil {
		t.Fatal(err)
	}

	t.Run("annotation in the control-plane namespace", func(t *testing.T) {
		t.Parallel()
		s := s.in(t)
		s.app("own-cp", appSpec{sync: synced})
		s.workload("own-cp", tracking("own-cp", s.NS, "own-cp"), nil)
		s.change("own-cp")
		s.owner(s.restarted("own-cp"), s.Argo, "own-cp", "default")
	})
	t.Run("annotation in another namespace", func(t *testing.T) {
		t.Parallel()
		s := s.in(t)
		s.app("own-other", appSpec{namespace: apps, sync: synced})
		s.workload("own-other", tracking(apps+"_own-other", s.NS, "own-other"), nil)
		s.change("own-other")
		s.owner(s.restarted("own-other"), apps, "own-other", "default")
	})
	t.Run("copied annotation falls back to status.resources", func(t *testing.T) {
		t.Parallel()
		s := s.in(t)
		// The annotation names a real, synced Application, but describes
		// another object: trusting it would pick the wrong owner.
		s.app("copied-src", appSpec{sync: synced})
		s.app("copied-real", appSpec{sync: synced, lists: []string{"copied"}})
		s.workload("copied", tracking("copied-src", s.NS, "copied-src"), nil)
		s.change("copied")
		s.owner(s.restarted("copied"), s.Argo, "copied-real", "default")
	})
	t.Run("malformed annotation falls back to status.resources", func(t *testing.T) {
		t.Parallel()
		s := s.in(t)
		s.app("malformed-real", appSpec{sync: synced, lists: []string{"malformed"}})
		s.workload("malformed", map[string]string{gitopsargo.TrackingIDAnnotation: "malformed-real:Deployment"}, nil)
		s.change("malformed")
		s.owner(s.restarted("malformed"), s.Argo, "malformed-real", "default")
	})
	t.Run("malformed annotation and no fallback blocks", func(t *testing.T) {
		t.Parallel()
		s := s.in(t)
		s.app("garbage", appSpec{sync: synced})
		s.workload("garbage", map[string]string{gitopsargo.TrackingIDAnnotation: "garbage::::/"}, nil)
		s.change("garbage")
		s.waitGate("garbage", kickv1alpha1.PhaseWaitingForOwner, kickv1alpha1.GateOwnerUnknown, `ignored the tracking annotation: tracking id "garbage::::/"`)
	})
	t.Run("fallback finds one owner", func(t *testing.T) {
		t.Parallel()
		s := s.in(t)
		s.app("one-owner", appSpec{sync: synced, lists: []string{"one"}})
		s.app("one-bystander", appSpec{sync: synced, lists: []string{"someone-else"}})
		s.workload("one", nil, nil)
		s.change("one")
		s.owner(s.restarted("one"), s.Argo, "one-owner", "default")
	})
	t.Run("no owner blocks until an Application lists the workload", func(t *testing.T) {
		t.Parallel()
		s := s.in(t)
		s.workload("none", nil, nil)
		s.change("none")
		kr := s.waitGate("none", kickv1alpha1.PhaseWaitingForOwner, kickv1alpha1.GateOwnerUnknown, "no Argo CD Application owns Deployment "+s.NS+"/none")
		if kr.Status.Owner != nil || kr.Status.Gate.RequeueAt != nil {
			t.Fatalf("owner %+v, requeueAt %v: want neither", kr.Status.Owner, kr.Status.Gate.RequeueAt)
		}
		// Argo CD starts listing it: the Application's change wakes the
		// request through the workload's key.
		s.app("none-late", appSpec{sync: synced, lists: []string{"none"}})
		s.owner(s.restarted("none"), s.Argo, "none-late", "default")
	})
	t.Run("two owners block", func(t *testing.T) {
		t.Parallel()
		s := s.in(t)
		s.app("two-a", appSpec{sync: synced, lists: []string{"two"}})
		s.app("two-b", appSpec{sync: synced, lists: []string{"two"}})
		s.workload("two", nil, nil)
		s.change("two")
		s.waitGate("two", kickv1alpha1.PhaseWaitingForOwner, kickv1alpha1.GateAmbiguousOwner, s.Argo+"/two-a, "+s.Argo+"/two-b")
	})
	t.Run("annotated Application missing blocks until it exists", func(t *testing.T) {
		t.Parallel()
		s := s.in(t)
		// Another Application lists the workload; the self-referencing
		// annotation still wins, so KICK waits for the one it names.
		s.app("ghost-decoy", appSpec{sync: synced, lists: []string{"ghost"}})
		s.workload("ghost", tracking("ghost", s.NS, "ghost"), nil)
		s.change("ghost")
		s.waitGate("ghost", kickv1alpha1.PhaseWaitingForOwner, kickv1alpha1.GateOwnerUnknown,
			"names Application "+s.Argo+"/ghost through its tracking annotation, but that Application cannot own it: an owner must exist and deploy to namespace "+s.NS)
		s.app("ghost", appSpec{sync: synced})
		s.owner(s.restarted("ghost"), s.Argo, "ghost", "default")
	})
}

// TestTrackingSettings reads the tracking method, instance label key and
// installation id from argocd-cm.
func TestTrackingSettings(t *testing.T) {
	s := setup(t, func(s *suite) {
		s.Create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: gitopsargo.SettingsConfigMap}, Data: map[string]string{
			"application.resourceTrackingMethod": "annotation+label",
			"application.instanceLabelKey":       "example.com/instance",
			"installationID":                     "kick-it",
		}})
	})
	s.project("default")

	t.Run("label tracking", func(t *testing.T) {
		t.Parallel()
		s := s.in(t)
		s.app("labelled", appSpec{sync: synced})
		s.workload("labelled", nil, map[string]string{"example.com/instance": "labelled"})
		s.change("labelled")
		s.owner(s.restarted("labelled"), s.Argo, "labelled", "default")
	})
	t.Run("default label key is not the configured one", func(t *testing.T) {
		t.Parallel()
		s := s.in(t)
		s.app("helm", appSpec{sync: synced})
		s.workload("helm", nil, map[string]string{gitopsargo.DefaultLabelKey: "helm"})
		s.change("helm")
		s.waitGate("helm", kickv1alpha1.PhaseWaitingForOwner, kickv1alpha1.GateOwnerUnknown, "no Argo CD Application owns")
	})
	t.Run("installation id matches", func(t *testing.T) {
		t.Parallel()
		s := s.in(t)
		s.installed("mine", "kick-it")
		s.owner(s.restarted("mine"), s.Argo, "mine", "default")
	})
	t.Run("installation id mismatch blocks", func(t *testing.T) {
		t.Parallel()
		s := s.in(t)
		s.installed("theirs", "someone-else")
		s.waitGate("theirs", kickv1alpha1.PhaseWaitingForOwner, kickv1alpha1.GateOwnerUnknown, `installation id "someone-else", but this Argo CD's is "kick-it"`)
	})
}

// TestSettingsChangeWakesWaitingRequests: a request waits because the
// workload's installation id is not the one argocd-cm names; correcting
// argocd-cm wakes it at once (the settings are otherwise remembered for a
// while, and nothing else would re-evaluate a request waiting for an
// owner) and the restart goes through.
func TestSettingsChangeWakesWaitingRequests(t *testing.T) {
	s := setup(t, func(s *suite) {
		s.Create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: gitopsargo.SettingsConfigMap}, Data: map[string]string{"installationID": "before"}})
	})
	s.project("default")
	sub := s.in(t)
	sub.installed("moved", "after")
	kr := sub.waitGate("moved", kickv1alpha1.PhaseWaitingForOwner, kickv1alpha1.GateOwnerUnknown, `installation id "after", but this Argo CD's is "before"`)
	if kr.Status.Gate.RequeueAt != nil {
		t.Fatalf("requeueAt %v: nothing but a wake may re-evaluate this request", kr.Status.Gate.RequeueAt)
	}

	var cm corev1.ConfigMap
	if err := s.Env.Client.Get(s.Ctx, client.ObjectKey{Namespace: s.Argo, Name: gitopsargo.SettingsConfigMap}, &cm); err != nil {
		t.Fatal(err)
	}
	cm.Data["installationID"] = "after"
	if err := s.Env.Client.Update(s.Ctx, &cm); err != nil {
		t.Fatal(err)
	}
	since := time.Now()
	sub.owner(sub.restarted("moved"), s.Argo, "moved", "default")
	if took := time.Since(since); took > 15*time.Second {
		t.Fatalf("the restart came %s after argocd-cm changed: not woken by the change", took)
	}
}

// installed creates a synced Application NAME and a Deployment NAME whose
// tracking annotation names it with installation id id, then changes the
// Deployment's Secret.
func (s *suite) installed(name, id string) {
	s.T.Helper()
	s.app(name, appSpec{sync: synced})
	a := tracking(name, s.NS, name)
	a[gitopsargo.InstallationIDAnnotation] = id
	s.workload(name, a, nil)
	s.change(name)
}
