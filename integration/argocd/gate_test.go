package argocd

import (
	"fmt"
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
)

// openWindow is open at any time.
func openWindow(kind string) *argov1alpha1.InlineSyncWindow {
	return &argov1alpha1.InlineSyncWindow{Kind: kind, Schedule: "* * * * *", Duration: "1h", Applications: []string{"*"}}
}

// distantAllow is an allow window that opens for one minute, hours from
// now.
func distantAllow() *argov1alpha1.InlineSyncWindow {
	at := time.Now().Add(10 * time.Hour).UTC()
	return &argov1alpha1.InlineSyncWindow{Kind: "allow", Schedule: fmt.Sprintf("%d %d * * *", at.Minute(), at.Hour()), Duration: "1m", Applications: []string{"*"}}
}

// TestSyncWindows gates on the owning AppProject's sync windows.
func TestSyncWindows(t *testing.T) {
	s := setup(t, nil)

	// scenario runs one workload owned by an Application of its own
	// AppProject holding windows.
	scenario := func(t *testing.T, name string, windows ...*argov1alpha1.InlineSyncWindow) *suite {
		t.Parallel()
		s := s.in(t)
		s.project(name, windows...)
		s.app(name, appSpec{project: name, sync: synced})
		s.workload(name, tracking(name, s.NS, name), nil)
		s.change(name)
		return s
	}

	t.Run("open allow window", func(t *testing.T) {
		s := scenario(t, "open", openWindow("allow"))
		s.owner(s.restarted("open"), s.Argo, "open", "open")
	})
	t.Run("closed allow window waits", func(t *testing.T) {
		s := scenario(t, "closed", distantAllow())
		kr := s.waitGate("closed", kickv1alpha1.PhaseWaitingForGate, kickv1alpha1.GateOutsideSchedule, "outside allow window 1")
		if rq := kr.Status.Gate.RequeueAt; rq == nil || time.Until(rq.Time) < 9*time.Hour {
			t.Fatalf("requeueAt = %v, want the window's start in about 10h", rq)
		}
		s.owner(kr, s.Argo, "closed", "closed")
	})
	t.Run("deny window waits", func(t *testing.T) {
		s := scenario(t, "deny", openWindow("allow"), openWindow("deny"))
		kr := s.waitGate("deny", kickv1alpha1.PhaseWaitingForGate, kickv1alpha1.GateOutsideSchedule, "inside deny window 2")
		if kr.Status.Gate.RequeueAt == nil {
			t.Fatal("no requeueAt for a window boundary")
		}
	})
	t.Run("AND-mode deny window matches only when every selector does", func(t *testing.T) {
		// Matched by application name, not by destination namespace: with
		// AND it does not apply; read as OR it would block.
		and := openWindow("deny")
		and.Applications, and.Namespaces, and.UseAndOperator = []string{"and-*"}, []string{"elsewhere"}, true
		s := scenario(t, "and-mode", and)
		s.restarted("and-mode")
	})
	t.Run("OR-mode deny window matches on one selector", func(t *testing.T) {
		or := openWindow("deny")
		or.Applications, or.Namespaces = []string{"or-*"}, []string{"elsewhere"}
		s := scenario(t, "or-mode", or)
		s.waitGate("or-mode", kickv1alpha1.PhaseWaitingForGate, kickv1alpha1.GateOutsideSchedule, "inside deny window 1")
	})
	t.Run("time zone", func(t *testing.T) {
		// Open from an hour ago to two hours ahead on Tokyo's clock; read
		// as UTC it would open eight hours from now.
		tokyo, err := time.LoadLocation("Asia/Tokyo")
		if err != nil {
			t.Fatal(err)
		}
		w := &argov1alpha1.InlineSyncWindow{Kind: "allow", Schedule: fmt.Sprintf("0 %d * * *", (time.Now().In(tokyo).Hour()+23)%24),
			Duration: "3h", TimeZone: "Asia/Tokyo", Applications: []string{"*"}}
		s := scenario(t, "tokyo", w)
		s.restarted("tokyo")
	})
	t.Run("broken window is a configuration error", func(t *testing.T) {
		broken := openWindow("deny")
		broken.TimeZone = "Nowhere/Land"
		s := scenario(t, "broken", openWindow("allow"), broken)
		s.waitGate("broken", kickv1alpha1.PhaseWaitingForGate, kickv1alpha1.GateConfigurationError,
			fmt.Sprintf(`AppProject %s/broken: sync window 2 (deny "* * * * *" for 1h, Nowhere/Land): time zone "Nowhere/Land" is unknown`, s.Argo))
	})
	t.Run("unparsable schedule is a configuration error", func(t *testing.T) {
		bad := openWindow("allow")
		bad.Schedule = "every night"
		s := scenario(t, "unparsable", bad)
		s.waitGate("unparsable", kickv1alpha1.PhaseWaitingForGate, kickv1alpha1.GateConfigurationError, `schedule "every night" does not parse`)
	})
	t.Run("window edit wakes the request", func(t *testing.T) {
		s := scenario(t, "edited", distantAllow())
		kr := s.waitGate("edited", kickv1alpha1.PhaseWaitingForGate, kickv1alpha1.GateOutsideSchedule, "outside allow")
		// Its timer is for the distant window, hours away: a restart
		// within restarted's deadline can only come from the edit waking
		// it (a condition, not a stopwatch on the busy test machine).
		if at := kr.Status.Gate.RequeueAt; at == nil || time.Until(at.Time) < time.Hour {
			t.Fatalf("the request should wait for the distant window, hours away: requeueAt %v", at)
		}
		var proj argov1alpha1.AppProject
		if err := s.Env.Client.Get(s.Ctx, client.ObjectKey{Namespace: s.Argo, Name: "edited"}, &proj); err != nil {
			t.Fatal(err)
		}
		proj.Spec.SyncWindows = argov1alpha1.SyncWindows{openWindow("allow")}
		if err := s.Env.Client.Update(s.Ctx, &proj); err != nil {
			t.Fatal(err)
		}
		s.restarted("edited")
	})
	t.Run("missing AppProject waits until it exists", func(t *testing.T) {
		t.Parallel()
		s := s.in(t)
		s.app("orphan", appSpec{project: "orphan", sync: synced})
		s.workload("orphan", tracking("orphan", s.NS, "orphan"), nil)
		s.change("orphan")
		kr := s.waitGate("orphan", kickv1alpha1.PhaseWaitingForGate, kickv1alpha1.GateProjectUnknown, "AppProject orphan, which does not exist")
		s.owner(kr, s.Argo, "orphan", "orphan")
		s.project("orphan")
		s.restarted("orphan")
	})
}

// TestSyncState gates on the owning Application's sync and operation state,
// and re-evaluates on the Application's own changes, without polling.
func TestSyncState(t *testing.T) {
	s := setup(t, nil)
	s.project("default")

	t.Run("OutOfSync waits, then proceeds as soon as it is Synced", func(t *testing.T) {
		t.Parallel()
		s := s.in(t)
		app := s.app("drift", appSpec{sync: argov1alpha1.SyncStatusCodeOutOfSync})
		s.workload("drift", tracking("drift", s.NS, "drift"), nil)
		s.change("drift")
		kr := s.waitGate("drift", kickv1alpha1.PhaseWaitingForApplicationSync, kickv1alpha1.GateOwnerOutOfSync, "is OutOfSync, not Synced")
		if kr.Status.Gate.RequeueAt != nil {
			t.Fatalf("a request waiting for a sync has a timer: requeueAt %v", kr.Status.Gate.RequeueAt)
		}
		s.owner(kr, s.Argo, "drift", "default")
		s.updateApp(app, func(a *argov1alpha1.Application) { a.Status.Sync.Status = synced })
		// It has no timer (above), so the restart proves the Application's
		// change woke it.
		s.restarted("drift")
	})
	t.Run("running operation waits until it finishes", func(t *testing.T) {
		t.Parallel()
		s := s.in(t)
		started := metav1.Now()
		// As the application controller writes it (integration/e2e runs
		// the real one): the operation stays set while it runs, and one
		// patch clears it and records the completed phase.
		op := argov1alpha1.Operation{Sync: &argov1alpha1.SyncOperation{Revision: "HEAD"}, InitiatedBy: argov1alpha1.OperationInitiator{Automated: true}}
		app := s.app("syncing", appSpec{sync: synced, mutate: func(a *argov1alpha1.Application) {
			a.Operation = op.DeepCopy()
			a.Status.OperationState = &argov1alpha1.OperationState{Phase: "Running", StartedAt: started, Operation: op}
		}})
		s.workload("syncing", tracking("syncing", s.NS, "syncing"), nil)
		s.change("syncing")
		s.waitGate("syncing", kickv1alpha1.PhaseWaitingForApplicationSync, kickv1alpha1.GateOwnerReconciling, "has a sync operation Running")
		s.updateApp(app, func(a *argov1alpha1.Application) {
			a.Operation = nil
			a.Status.OperationState.Phase = "Succeeded"
			finished := metav1.Now()
			a.Status.OperationState.FinishedAt = &finished
		})
		s.restarted("syncing")
	})
	t.Run("requested operation waits", func(t *testing.T) {
		t.Parallel()
		s := s.in(t)
		s.app("requested", appSpec{sync: synced, mutate: func(a *argov1alpha1.Application) {
			a.Operation = &argov1alpha1.Operation{Sync: &argov1alpha1.SyncOperation{Revision: "HEAD"},
				InitiatedBy: argov1alpha1.OperationInitiator{Username: "alice"}}
		}})
		s.workload("requested", tracking("requested", s.NS, "requested"), nil)
		s.change("requested")
		s.waitGate("requested", kickv1alpha1.PhaseWaitingForApplicationSync, kickv1alpha1.GateOwnerReconciling, "operation requested by alice")
	})
	t.Run("Application without status waits", func(t *testing.T) {
		t.Parallel()
		s := s.in(t)
		s.app("fresh", appSpec{})
		s.workload("fresh", tracking("fresh", s.NS, "fresh"), nil)
		s.change("fresh")
		s.waitGate("fresh", kickv1alpha1.PhaseWaitingForApplicationSync, kickv1alpha1.GateOwnerOutOfSync, "has no sync status yet")
	})
	t.Run("Degraded but Synced proceeds", func(t *testing.T) {
		t.Parallel()
		s := s.in(t)
		s.app("degraded", appSpec{sync: synced, mutate: func(a *argov1alpha1.Application) { a.Status.Health.Status = "Degraded" }})
		s.workload("degraded", tracking("degraded", s.NS, "degraded"), nil)
		s.change("degraded")
		s.restarted("degraded")
	})
}

// TestAutoPicksArgoCD: provider Auto on a cluster with Argo CD (and Flux)
// installed resolves an Argo-tracked workload to its Application and
// applies the Argo CD gate; a workload no GitOps tool manages waits.
func TestAutoPicksArgoCD(t *testing.T) {
	s := setup(t, nil)
	s.project("default")

	t.Run("tracked workload", func(t *testing.T) {
		t.Parallel()
		s := s.in(t)
		s.PatchPolicy("argo", `{"spec":{"gitOps":{"provider":"Auto"}}}`)
		app := s.app("auto", appSpec{sync: argov1alpha1.SyncStatusCodeOutOfSync})
		s.workload("auto", tracking("auto", s.NS, "auto"), nil)
		s.change("auto")
		kr := s.waitGate("auto", kickv1alpha1.PhaseWaitingForApplicationSync, kickv1alpha1.GateOwnerOutOfSync, "is OutOfSync, not Synced")
		if kr.Status.Provider != kickv1alpha1.ProviderArgoCD {
			t.Fatalf("provider %q, want Auto to have picked ArgoCD", kr.Status.Provider)
		}
		s.owner(kr, s.Argo, "auto", "default")
		s.updateApp(app, func(a *argov1alpha1.Application) { a.Status.Sync.Status = synced })
		s.restarted("auto")
	})
	t.Run("unmanaged workload", func(t *testing.T) {
		t.Parallel()
		s := s.in(t)
		s.PatchPolicy("argo", `{"spec":{"gitOps":{"provider":"Auto"}}}`)
		s.workload("loose", nil, nil)
		s.change("loose")
		s.waitGate("loose", kickv1alpha1.PhaseWaitingForGate, kickv1alpha1.GateProviderUnavailable, "found no GitOps owner")
		s.notRestarted("loose")
	})
}
