package e2e

import (
	"fmt"
	"slices"
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/integration/fixture"
	"github.com/kick-operator/kick/restart/rollout"
)

// TestRolloutWorkloadRef: a Rollout runs the template of Deployment web
// through spec.workloadRef, and the Rollouts controller scales the
// Deployment to zero once the Rollout is Healthy (scaleDown: onsuccess), as
// after a migration. A change of the Secret that template consumes is the
// Deployment's (request deployment-web), and KICK restarts the Rollout
// through spec.restartAt exactly once; the Deployment's template is not
// touched and it stays at zero.
func TestRolloutWorkloadRef(t *testing.T) {
	s := setup(t, "rollouts", "--enable-argo-rollouts")
	s.Policy("all", "{discovery: {workloadSelector: {}}, restart: {minInterval: 0s}}")
	s.secret("web")
	s.Deployment("web", 1, fixture.PodSpec("web-db"))
	s.WaitAvailable("web")
	s.createRollout("web", map[string]any{
		"replicas": 2, "minReadySeconds": minReady,
		"workloadRef": map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "scaleDown": "onsuccess"},
		"strategy": map[string]any{"canary": map[string]any{"steps": []any{
			map[string]any{"setWeight": 50}, map[string]any{"pause": map[string]any{"duration": "2s"}},
		}}},
	})
	// The Deployment's own pod gone, the Rollout's two left.
	cluster.Eventually(t, 2*time.Minute, "the Deployment scaled to zero and its pod gone", func() (bool, error) {
		d := s.get("web")
		pods := s.pods("web")
		return d.Spec.Replicas != nil && *d.Spec.Replicas == 0 && d.Status.Replicas == 0 && len(pods) == 2,
			fmt.Errorf("Deployment replicas %v (status %d), pods %v", ptr.Deref(d.Spec.Replicas, -1), d.Status.Replicas, pods)
	})
	deploymentBefore := s.get("web")
	podsBefore, rssBefore := podNames(s.pods("web")), s.ReplicaSets("web") // the Deployment's and the Rollout's
	s.recordStatuses("web")

	changed := time.Now()
	s.SetSecret("web-db", map[string]string{"password": "bravo"})
	kr := s.WaitPhase("deployment-web", kickv1alpha1.PhaseSucceeded, 3*time.Minute)
	pods, ro := s.pods("web"), s.rollout("web")
	t.Logf("succeeded at %v: restartCount %d, restartAt %v, restartedAt %v, pods %v", kr.Status.CompletionTime, kr.Status.RestartCount, ro.Spec.RestartAt, ro.Status.RestartedAt, pods)
	if kr.Status.RestartCount != 1 || ro.Spec.RestartAt == nil || ro.Spec.RestartAt.Time.Before(changed.Truncate(time.Second)) {
		t.Fatalf("restartCount %d, Rollout restartAt %v: want one restart of the Rollout not before the change (%s)", kr.Status.RestartCount, ro.Spec.RestartAt, changed.Format(time.RFC3339))
	}
	if ro.Status.RestartedAt == nil || !ro.Status.RestartedAt.Equal(ro.Spec.RestartAt) {
		t.Fatalf("KICK succeeded before the Rollouts controller finished restartAt %s (status.restartedAt %v)", ro.Spec.RestartAt, ro.Status.RestartedAt)
	}
	s.assertReplaced(pods, 2, ro.Spec.RestartAt.Time, kr.Status.CompletionTime.Time, podsBefore)
	d := s.get("web")
	if stamp := s.RestartStamp("web"); stamp != "" || d.Generation != deploymentBefore.Generation || ptr.Deref(d.Spec.Replicas, -1) != 0 {
		t.Fatalf("the Deployment was touched: restart stamp %q, generation %d (was %d), replicas %v", stamp, d.Generation, deploymentBefore.Generation, ptr.Deref(d.Spec.Replicas, -1))
	}
	if rss := s.ReplicaSets("web"); !slices.Equal(rss, rssBefore) {
		t.Fatalf("ReplicaSets %v, before the change %v: a new revision was rolled", rss, rssBefore)
	}

	// Nothing more for that change.
	restartAt := ro.Spec.RestartAt.Time
	s.Barrier()
	if ro := s.rollout("web"); !ro.Spec.RestartAt.Time.Equal(restartAt) {
		t.Fatalf("restartAt moved from %s to %s after the request succeeded", restartAt, ro.Spec.RestartAt)
	}
	if s.RestartStamp("web") != "" {
		t.Fatal("the Deployment was restarted after the request succeeded")
	}
}

// rolloutManifest is a canary Rollout NAME of two replicas in Git,
// consuming Secret NAME-db.
func rolloutManifest(name string) string {
	return fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata:
  name: %[1]s
  labels: {app: %[1]s}
spec:
  replicas: 2
  minReadySeconds: %[2]d
  selector: {matchLabels: {app: %[1]s}}
  template:
    metadata: {labels: {app: %[1]s}}
    spec:
      containers:
      - name: app
        image: registry.k8s.io/pause:3.10
        envFrom: [{secretRef: {name: %[1]s-db}}]
  strategy:
    canary:
      steps:
      - setWeight: 50
      - pause: {duration: 2s}
`, name, minReady)
}

// clearWindows removes every sync window of an AppProject.
func (s *suite) clearWindows(project string) {
	s.T.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var p argov1alpha1.AppProject
		if err := s.Env.Client.Get(s.Ctx, client.ObjectKey{Namespace: s.stack.ArgoNamespace, Name: project}, &p); err != nil {
			return err
		}
		p.Spec.SyncWindows = nil
		return s.Env.Client.Update(s.Ctx, &p)
	})
	if err != nil {
		s.T.Fatal(err)
	}
}

// TestArgoCDRolloutSyncWindow: Argo CD syncs a canary Rollout from Git,
// and the Rollouts controller runs it. While a deny window of the
// Application's AppProject is open, a change of the Secret the Rollout
// consumes waits in WaitingForGate (OutsideSchedule) and nothing is
// written to the Rollout; once the window is lifted, KICK restarts the
// Rollout exactly once through spec.restartAt, and the Application stays
// Synced (restartAt is not in Git).
func TestArgoCDRolloutSyncWindow(t *testing.T) {
	s := setup(t, "argocd+rollouts", "--enable-argo-rollouts")
	s.Policy("argo", argoPolicy)
	project := "win-" + s.NS[len(s.NS)-6:]
	s.project(project)
	s.secret("web")
	sha := s.commit("v1", map[string]string{"web/rollout.yaml": rolloutManifest("web")})
	app := "web-" + s.NS[len(s.NS)-6:]
	s.application(app, "web", project, true)
	s.syncedAt(app, sha)
	s.waitRollout("web", "Healthy", func(ro *rollout.Rollout) bool { return ro.Status.Phase == "Healthy" })
	s.WaitObservation("web-db")
	s.waitApp(app, "Healthy", 2*time.Minute, func(a *argov1alpha1.Application) bool { return a.Status.Health.Status == "Healthy" })
	podsBefore, rssBefore := podNames(s.pods("web")), s.ReplicaSets("web")

	end := s.denyNow(project)
	changed := time.Now()
	s.SetSecret("web-db", map[string]string{"password": "bravo"})
	var kr *kickv1alpha1.KickRequest
	cluster.Eventually(t, time.Minute, "the request to wait for the deny window", func() (bool, error) {
		var err error
		if kr, err = s.Request("rollout-web"); err != nil {
			return false, err
		}
		g := kr.Status.Gate
		return kr.Status.Phase == kickv1alpha1.PhaseWaitingForGate && g != nil && g.Reason == kickv1alpha1.GateOutsideSchedule,
			fmt.Errorf("phase %q, gate %+v", kr.Status.Phase, g)
	})
	s.owner(kr, kickv1alpha1.ProviderArgoCD, "Application", s.stack.ArgoNamespace, app)
	if rq := kr.Status.Gate.RequeueAt; rq == nil || rq.Time.Sub(end).Abs() > time.Second {
		t.Fatalf("requeueAt %v, want the window's end %s", kr.Status.Gate.RequeueAt, end)
	}
	// (No barrier: its Deployment has no Application and would wait for
	// one.) restartAt is checked again below: one restart, after the lift.
	if ro := s.rollout("web"); ro.Spec.RestartAt != nil {
		t.Fatalf("spec.restartAt %s written inside the deny window", ro.Spec.RestartAt)
	}
	if read := time.Now(); !read.Before(end) {
		t.Fatalf("the deny window ended (%s) before the test checked it held (%s)", end.Format(time.RFC3339), read.Format(time.RFC3339))
	}

	// Lift the window, as someone removing it from the AppProject.
	lifted := time.Now()
	s.clearWindows(project)
	kr = s.rolloutRestartedOnce("web", 2, changed, podsBefore, rssBefore)
	if done := kr.Status.CompletionTime.Time; done.After(end) {
		t.Logf("note: the restart finished at %s, after the window's own end %s", done.Format(time.RFC3339), end.Format(time.RFC3339))
	}
	if at := s.rollout("web").Spec.RestartAt.Time; at.Before(lifted.Truncate(time.Second)) {
		t.Fatalf("restartAt %s is before the window was lifted (%s)", at.Format(time.RFC3339), lifted.Format(time.RFC3339))
	}
	s.refresh(app)
	s.waitApp(app, "to stay Synced after the restart", time.Minute, func(a *argov1alpha1.Application) bool {
		_, refreshing := a.Annotations[argov1alpha1.AnnotationKeyRefresh]
		return !refreshing && a.Status.Sync.Status == argov1alpha1.SyncStatusCodeSynced
	})
}
