package argocd

import (
	"strings"
	"testing"

	argov1alpha1 "github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/integration/cluster"
)

// TestDestinationRule plays a hostile tenant on the real manager: a
// tracking annotation naming another team's synced Application does not
// let that Application gate (or un-gate) the tenant's workload, and an
// Application in a tenant namespace that lists another namespace's
// workload in status.resources is not believed, so it neither owns that
// workload nor makes its real owner ambiguous.
func TestDestinationRule(t *testing.T) {
	tenant := cluster.Get(t).Namespace(t)
	s := setup(t, nil, "--argocd-application-namespaces="+tenant)
	proj := s.project("default")
	proj.Spec.SourceNamespaces = []string{tenant}
	if err := s.Env.Client.Update(s.Ctx, proj); err != nil {
		t.Fatal(err)
	}
	elsewhere := func(ns string) func(*argov1alpha1.Application) {
		return func(a *argov1alpha1.Application) { a.Spec.Destination.Namespace = ns }
	}

	t.Run("tracking id naming another team's Application", func(t *testing.T) {
		t.Parallel()
		s := s.in(t)
		s.app("payments", appSpec{sync: synced, mutate: elsewhere("payments")})
		s.workload("hijack", tracking("payments", s.NS, "hijack"), nil)
		s.change("hijack")
		// Word for word what a name no Application has gets: nothing about
		// the other team's Application shows through.
		kr := s.waitGate("hijack", kickv1alpha1.PhaseWaitingForOwner, kickv1alpha1.GateOwnerUnknown,
			"names Application "+s.Argo+"/payments through its tracking annotation, but that Application cannot own it: an owner must exist and deploy to namespace "+s.NS)
		if strings.Contains(kr.Status.Gate.Message, "payments (") || strings.Contains(kr.Status.Gate.Message, "deploys to namespace payments") {
			t.Fatalf("the gate message reveals the other team's destination: %q", kr.Status.Gate.Message)
		}
	})
	t.Run("status.resources of a tenant's Application", func(t *testing.T) {
		t.Parallel()
		s := s.in(t)
		s.app("grab", appSpec{namespace: tenant, sync: synced, lists: []string{"victim"}, mutate: elsewhere(tenant)})
		s.workload("victim", nil, nil)
		s.change("victim")
		kr := s.waitGate("victim", kickv1alpha1.PhaseWaitingForOwner, kickv1alpha1.GateOwnerUnknown,
			"no Application that may own it lists it in status.resources")
		if strings.Contains(kr.Status.Gate.Message, "grab") {
			t.Fatalf("the gate message names the tenant's Application: %q", kr.Status.Gate.Message)
		}
		// The real owner appears: it owns the workload alone, the tenant's
		// listing does not make it ambiguous.
		s.app("victim-real", appSpec{sync: synced, lists: []string{"victim"}})
		s.owner(s.restarted("victim"), s.Argo, "victim-real", "default")
	})
}
