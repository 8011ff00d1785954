package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	gitopsargo "github.com/kick-operator/kick/gitops/argocd"
	"github.com/kick-operator/kick/integration/cluster"
)

// argoPolicy gates every workload of the namespace on Argo CD.
const argoPolicy = `{discovery: {workloadSelector: {}}, gitOps: {provider: ArgoCD}}`

func objectMeta(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name} }

// application creates Application NAME in the Argo CD namespace that
// deploys PATH of the test's repository into the test namespace, in
// project; automated syncs by itself, otherwise it starts with one sync
// operation, as `argocd app create --sync` would.
func (s *suite) application(name, path, project string, automated bool) *argov1alpha1.Application {
	s.T.Helper()
	app := &argov1alpha1.Application{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.stack.ArgoNamespace},
		Spec: argov1alpha1.ApplicationSpec{
			Project:     project,
			Source:      &argov1alpha1.ApplicationSource{RepoURL: s.stack.Git.RepoURL(s.repo), Path: path, TargetRevision: "main"},
			Destination: argov1alpha1.ApplicationDestination{Server: argov1alpha1.KubernetesInternalAPIServerAddr, Namespace: s.NS},
		},
	}
	if automated {
		app.Spec.SyncPolicy = &argov1alpha1.SyncPolicy{Automated: &argov1alpha1.SyncPolicyAutomated{}}
	} else {
		app.Operation = syncOperation()
	}
	if err := s.Env.Client.Create(s.Ctx, app); err != nil {
		s.T.Fatalf("create Application %s: %v", name, err)
	}
	s.T.Cleanup(func() { _ = s.Env.Client.Delete(s.Ctx, app) })
	return app
}

// syncOperation is the operation `argocd app sync` writes.
func syncOperation() *argov1alpha1.Operation {
	return &argov1alpha1.Operation{
		Sync:        &argov1alpha1.SyncOperation{Revision: "main"},
		InitiatedBy: argov1alpha1.OperationInitiator{Username: "e2e"},
	}
}

// readApp reads an Application of the Argo CD namespace.
func (s *suite) readApp(name string) (*argov1alpha1.Application, error) {
	var app argov1alpha1.Application
	err := s.Env.Client.Get(s.Ctx, client.ObjectKey{Namespace: s.stack.ArgoNamespace, Name: name}, &app)
	return &app, err
}

// updateApp re-reads an Application, changes it and writes it back.
func (s *suite) updateApp(name string, change func(*argov1alpha1.Application)) {
	s.T.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		app, err := s.readApp(name)
		if err != nil {
			return err
		}
		change(app)
		return s.Env.Client.Update(s.Ctx, app)
	})
	if err != nil {
		s.T.Fatalf("update Application %s: %v", name, err)
	}
}

// refresh asks Argo CD to compare the Application with Git now, as its
// webhook or `argocd app get --refresh` does.
func (s *suite) refresh(name string) {
	s.T.Helper()
	s.updateApp(name, func(a *argov1alpha1.Application) {
		if a.Annotations == nil {
			a.Annotations = map[string]string{}
		}
		a.Annotations[argov1alpha1.AnnotationKeyRefresh] = string(argov1alpha1.RefreshTypeNormal)
	})
}

// waitApp waits until the Application satisfies cond, reporting its
// status while it does not.
func (s *suite) waitApp(name, what string, timeout time.Duration, cond func(*argov1alpha1.Application) bool) *argov1alpha1.Application {
	s.T.Helper()
	var app *argov1alpha1.Application
	cluster.Eventually(s.T, timeout, fmt.Sprintf("Application %s %s", name, what), func() (bool, error) {
		var err error
		if app, err = s.readApp(name); err != nil {
			return false, err
		}
		return cond(app), fmt.Errorf("sync %s at %.7s, health %s, operation %s, conditions %v",
			app.Status.Sync.Status, app.Status.Sync.Revision, app.Status.Health.Status, opPhase(app), app.Status.Conditions)
	})
	return app
}

func opPhase(app *argov1alpha1.Application) string {
	if app.Status.OperationState == nil {
		return "none"
	}
	return fmt.Sprintf("%s (%s)", app.Status.OperationState.Phase, app.Status.OperationState.Message)
}

// syncedAt waits until the Application is Synced to revision, its last
// operation succeeded and nothing more is requested.
func (s *suite) syncedAt(name, revision string) *argov1alpha1.Application {
	s.T.Helper()
	return s.waitApp(name, "to be Synced at "+revision[:7], 3*time.Minute, func(a *argov1alpha1.Application) bool {
		op := a.Status.OperationState
		return a.Operation == nil && a.Status.Sync.Status == argov1alpha1.SyncStatusCodeSynced && a.Status.Sync.Revision == revision &&
			op != nil && op.Phase == "Succeeded" && op.SyncResult != nil && op.SyncResult.Revision == revision
	})
}

// setTracking sets argocd-cm's resource tracking method; Argo CD's
// settings watch picks it up for the next sync.
func setTracking(t *testing.T, env *cluster.Env, method string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var cm corev1.ConfigMap
		if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: env.GitOps.ArgoNamespace, Name: "argocd-cm"}, &cm); err != nil {
			return err
		}
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data["application.resourceTrackingMethod"] = method
		return env.Client.Update(context.Background(), &cm)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestArgoCDTracking: Argo CD deploys a Deployment from Git with automated
// sync, marking it by annotation, then by label; KICK resolves the owner
// from what Argo CD wrote and restarts on a Secret change while the
// Application is Synced.
func TestArgoCDTracking(t *testing.T) {
	for _, method := range []string{"annotation", "label"} {
		t.Run(method, func(t *testing.T) {
			env := cluster.Get(t)
			if env.GitOps == nil || !env.GitOps.Runs("argocd") {
				t.Fatal("Argo CD is not running in this test binary")
			}
			// The method must be in argocd-cm before the manager starts, so
			// its first read of the settings sees it.
			setTracking(t, env, method)
			t.Cleanup(func() { setTracking(t, env, "annotation") })
			s := setup(t, "argocd")
			s.Policy("argo", argoPolicy)
			s.secret("web")
			sha := s.commit("web v1", map[string]string{"web/deployment.yaml": deployment("web", "1")})
			app := "web-" + s.NS[len(s.NS)-6:]
			s.application(app, "web", "default", true)
			synced := s.syncedAt(app, sha)
			s.waitDeployed("web", "1")
			if method == "annotation" {
				logStatus(t, synced)
			}

			d := s.get("web")
			id := fmt.Sprintf("%s:apps/Deployment:%s/web", app, s.NS)
			gotID, gotLabel := d.Annotations[gitopsargo.TrackingIDAnnotation], d.Labels[gitopsargo.DefaultLabelKey]
			t.Logf("Argo CD wrote tracking annotation %q, instance label %q", gotID, gotLabel)
			switch method {
			case "annotation":
				if gotID != id || gotLabel != "" {
					t.Fatalf("annotation tracking: annotation %q (want %q), label %q (want none)", gotID, id, gotLabel)
				}
			case "label":
				if gotLabel != app || gotID != "" {
					t.Fatalf("label tracking: label %q (want %q), annotation %q (want none)", gotLabel, app, gotID)
				}
			}

			changed := s.change("web")
			kr := s.restartedOnce("web", changed)
			s.owner(kr, kickv1alpha1.ProviderArgoCD, "Application", s.stack.ArgoNamespace, app)
			if kr.Status.Owner.Project != "default" {
				t.Fatalf("owner project %q", kr.Status.Owner.Project)
			}
			// KICK's restart stamp is not in Git, and Argo CD leaves fields
			// it did not apply alone: the Application stays Synced.
			s.refresh(app)
			s.waitApp(app, "to stay Synced after the restart", time.Minute, func(a *argov1alpha1.Application) bool {
				_, refreshing := a.Annotations[argov1alpha1.AnnotationKeyRefresh]
				return !refreshing && a.Status.Sync.Status == argov1alpha1.SyncStatusCodeSynced
			})
		})
	}
}

// project creates an AppProject in the Argo CD namespace that admits
// everything.
func (s *suite) project(name string) {
	s.T.Helper()
	p := &argov1alpha1.AppProject{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.stack.ArgoNamespace},
		Spec: argov1alpha1.AppProjectSpec{
			SourceRepos:  []string{"*"},
			Destinations: []argov1alpha1.ApplicationDestination{{Server: "*", Namespace: "*"}},
		},
	}
	if err := s.Env.Client.Create(s.Ctx, p); err != nil {
		s.T.Fatalf("create AppProject %s: %v", name, err)
	}
	s.T.Cleanup(func() { _ = s.Env.Client.Delete(s.Ctx, p) })
}

// denyNow adds to the AppProject a deny window that opened at the start of
// the current minute and lasts five, and returns when it ends (between four
// and five minutes from now: room for the checks made inside it on a busy
// machine).
func (s *suite) denyNow(project string) time.Time {
	s.T.Helper()
	now := time.Now().UTC()
	start := now.Truncate(time.Minute)
	w := &argov1alpha1.InlineSyncWindow{Kind: "deny", Schedule: fmt.Sprintf("%d %d * * *", start.Minute(), start.Hour()),
		Duration: "5m", Applications: []string{"*"}, TimeZone: "UTC"}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var p argov1alpha1.AppProject
		if err := s.Env.Client.Get(s.Ctx, client.ObjectKey{Namespace: s.stack.ArgoNamespace, Name: project}, &p); err != nil {
			return err
		}
		p.Spec.SyncWindows = append(p.Spec.SyncWindows, w)
		return s.Env.Client.Update(s.Ctx, &p)
	})
	if err != nil {
		s.T.Fatal(err)
	}
	return start.Add(5 * time.Minute)
}

// TestArgoCDSyncWindow: an AppProject deny window holds KICK's restart of
// a Synced Application's workload and Argo CD's own automated sync of a
// new commit alike; when it ends, KICK restarts once and Argo CD syncs.
func TestArgoCDSyncWindow(t *testing.T) {
	s := setup(t, "argocd")
	s.Policy("argo", argoPolicy)
	project := "win-" + s.NS[len(s.NS)-6:]
	s.project(project)
	s.secret("held")
	s.secret("moved")
	first := s.commit("v1", map[string]string{
		"held/deployment.yaml":  deployment("held", "1"),
		"moved/deployment.yaml": deployment("moved", "1"),
	})
	held, moved := "held-"+s.NS[len(s.NS)-6:], "moved-"+s.NS[len(s.NS)-6:]
	s.application(held, "held", project, true)
	s.application(moved, "moved", project, true)
	s.syncedAt(held, first)
	s.syncedAt(moved, first)
	s.waitDeployed("held", "1")
	s.waitDeployed("moved", "1")

	end := s.denyNow(project)
	t.Logf("deny window until %s (%s from now)", end.Format(time.RFC3339), time.Until(end).Round(time.Second))

	// KICK: the Secret of the Synced Application's workload changes.
	s.change("held")
	kr := s.waitGate("held", kickv1alpha1.PhaseWaitingForGate, kickv1alpha1.GateOutsideSchedule, "inside deny window 1")
	if rq := kr.Status.Gate.RequeueAt; rq == nil || rq.Time.Sub(end).Abs() > time.Second {
		t.Fatalf("requeueAt %v, want the window's end %s", kr.Status.Gate.RequeueAt, end)
	}
	s.owner(kr, kickv1alpha1.ProviderArgoCD, "Application", s.stack.ArgoNamespace, held)

	// Argo CD: a new commit for the other Application is seen, not synced.
	second := s.commit("moved v2", map[string]string{"moved/deployment.yaml": deployment("moved", "2")})
	s.refresh(moved)
	s.waitApp(moved, "to see the new commit as OutOfSync", time.Minute, func(a *argov1alpha1.Application) bool {
		return a.Status.Sync.Status == argov1alpha1.SyncStatusCodeOutOfSync && a.Status.Sync.Revision == second
	})
	a, _ := s.readApp(moved)
	deployed := version(s.get("moved"))
	// What was read proves the window held only if it was read while the
	// window was open: a condition on when, not a budget for how long.
	if read := time.Now(); !read.Before(end) {
		t.Fatalf("the deny window ended (%s) before the test could check it held both (read at %s)", end.Format(time.RFC3339), read.Format(time.RFC3339))
	}
	if a.Status.OperationState.SyncResult.Revision != first || deployed != "1" {
		t.Fatalf("Argo CD synced %s inside the deny window: operation %s", moved, opPhase(a))
	}

	// When the window ends, both go ahead.
	s.restartedOnce("held", end)
	synced := s.syncedAt(moved, second)
	if started := synced.Status.OperationState.StartedAt.Time; started.Before(end.Add(-time.Second)) {
		t.Fatalf("Argo CD's automated sync started at %s, inside the window that ended at %s", started, end)
	}
	s.waitDeployed("moved", "2")
	if s.RestartStamp("moved") != "" {
		t.Fatal("KICK restarted moved, whose Secret did not change")
	}
}

// TestArgoCDCommitAndSecretChange: a commit that changes the Deployment and
// a change of its Secret land together. KICK waits while the Application
// is OutOfSync (requireReconciled); the sync's rollout already starts the
// pods with the new Secret, so KICK does not restart again.
func TestArgoCDCommitAndSecretChange(t *testing.T) {
	s := setup(t, "argocd")
	s.Policy("argo", argoPolicy)
	s.secret("web")
	first := s.commit("v1", map[string]string{"web/deployment.yaml": deployment("web", "1")})
	app := "web-" + s.NS[len(s.NS)-6:]
	// Synced by hand (an operation per sync), so the test decides when the
	// commit goes out, after the Secret changed.
	s.application(app, "web", "default", false)
	s.syncedAt(app, first)
	s.waitDeployed("web", "1")
	rsBefore := len(s.ReplicaSets("web"))

	second := s.commit("v2", map[string]string{"web/deployment.yaml": deployment("web", "2")})
	s.refresh(app)
	s.waitApp(app, "to be OutOfSync at the new commit", time.Minute, func(a *argov1alpha1.Application) bool {
		return a.Status.Sync.Status == argov1alpha1.SyncStatusCodeOutOfSync && a.Status.Sync.Revision == second
	})
	s.change("web")
	kr := s.waitGate("web", kickv1alpha1.PhaseWaitingForApplicationSync, kickv1alpha1.GateOwnerOutOfSync, "is OutOfSync, not Synced")
	s.owner(kr, kickv1alpha1.ProviderArgoCD, "Application", s.stack.ArgoNamespace, app)

	// After the second in which KICK saw the change (the test's own clock
	// read before the write can be a second earlier): a rollout in that
	// second would rightly count as older than the change.
	if kr.Status.LatestObservedDependencyChange == nil {
		t.Fatalf("the waiting request has no latestObservedDependencyChange: %+v", kr.Status)
	}
	s.pastSecondOf(kr.Status.LatestObservedDependencyChange.Time)
	s.updateApp(app, func(a *argov1alpha1.Application) { a.Operation = syncOperation() })
	s.syncedAt(app, second)
	s.waitDeployed("web", "2")
	kr = s.WaitPhase("deployment-web", kickv1alpha1.PhaseNoLongerRequired, 60*time.Second)
	if stamp := s.RestartStamp("web"); stamp != "" {
		t.Fatalf("KICK restarted web after the sync had rolled it out (%s): stamp %q", kr.Name, stamp)
	}
	if got := len(s.ReplicaSets("web")); got != rsBefore+1 {
		t.Fatalf("web has %d ReplicaSets, want %d (one rollout, the sync's)", got, rsBefore+1)
	}
}

// logStatus records what the application controller wrote, for the
// comparison with the CRD-level tests (integration/argocd).
func logStatus(t *testing.T, a *argov1alpha1.Application) {
	t.Helper()
	op := a.Status.OperationState
	t.Logf("Argo CD wrote: operation %v; operationState phase %s, initiatedBy %+v, syncResult revision %.7s; sync %s at %.7s; health %s; resources %+v",
		a.Operation, op.Phase, op.Operation.InitiatedBy, op.SyncResult.Revision, a.Status.Sync.Status, a.Status.Sync.Revision, a.Status.Health.Status, a.Status.Resources)
}
