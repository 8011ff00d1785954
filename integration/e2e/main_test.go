// Package e2e runs KICK end to end against the real GitOps controllers:
// Argo CD's application controller and repo-server, Flux's source- and
// kustomize-controller and the Argo Rollouts controller, built from their
// modules (make gitops-controllers), syncing from a git server on
// 127.0.0.1. Every status KICK gates on here is written by those
// controllers, never by the test.
package e2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/cmd/kick-devcluster/gitopsstack"
	gitopsargo "github.com/kick-operator/kick/gitops/argocd"
	gitopsflux "github.com/kick-operator/kick/gitops/flux"
	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/integration/fixture"
	"github.com/kick-operator/kick/restart/rollout"
)

// TestMain runs the control plane with both GitOps tools and the Argo
// Rollouts controller, or only those $KICK_E2E_CONTROLLERS names ("argocd",
// "flux", "rollouts", comma-separated: "argocd,rollouts" for the tests of
// an Application owning a Rollout); the tests of a tool that is not
// running fail, they are not skipped.
func TestMain(m *testing.M) {
	gitops := gitopsstack.Options{Argo: true, Flux: true, Rollouts: true}
	if only := os.Getenv("KICK_E2E_CONTROLLERS"); only != "" {
		gitops.Argo, gitops.Flux = strings.Contains(only, "argocd"), strings.Contains(only, "flux")
		gitops.Rollouts = strings.Contains(only, "rollouts")
	}
	// helm-controller runs only when built (see helmNotRunning).
	gitops.HelmController = os.Getenv(helmControllerEnv)
	// The test process logs nothing through controller-runtime; say so
	// before its client warns (once start-up passes 30 s).
	ctrllog.SetLogger(logr.Discard())
	cluster.Main(m, cluster.TestOptions{
		KickCRDs:    true,
		GitOps:      gitops,
		AddToScheme: []func(*runtime.Scheme) error{kickv1alpha1.AddToScheme, gitopsargo.AddToScheme, gitopsflux.AddToScheme, rollout.AddToScheme},
	})
}

// suite is one test's namespace, manager and git repository (named after
// the namespace).
type suite struct {
	*fixture.F
	stack *gitopsstack.Stack
	// repo is the test's repository on the git server.
	repo string
	// before holds each workload's ReplicaSets as change found them, so
	// restartedOnce counts rollouts from the workload, not from KICK.
	before map[string][]string
}

// setup gives the test a namespace, a repository, and a kick-manager that
// looks for Applications in the Argo CD namespace. tools ("argocd",
// "flux", "rollouts", or several joined by "+", as "argocd+rollouts") must
// be running.
func setup(t *testing.T, tools string, args ...string) *suite {
	env := cluster.Get(t)
	for _, tool := range strings.Split(tools, "+") {
		if env.GitOps == nil || !env.GitOps.Runs(tool) {
			t.Fatalf("%s is not running in this test binary (KICK_E2E_CONTROLLERS=%q; this test needs %s)", tool, os.Getenv("KICK_E2E_CONTROLLERS"), tools)
		}
	}
	ns := env.Namespace(t)
	s := &suite{F: &fixture.F{T: t, Env: env, NS: ns, Ctx: context.Background()}, stack: env.GitOps, repo: ns}
	if err := s.stack.Git.Create(s.repo); err != nil {
		t.Fatal(err)
	}
	s.Mgr = env.StartManager(t, fixture.ManagerNamespace, append([]string{"--argocd-namespace=" + s.stack.ArgoNamespace}, args...)...)
	return s
}

// commit pushes files (path → content; "" deletes) to the test's
// repository and returns the commit SHA.
func (s *suite) commit(message string, files map[string]string) string {
	s.T.Helper()
	sha, err := s.stack.Git.Commit(s.repo, message, files)
	if err != nil {
		s.T.Fatal(err)
	}
	return sha
}

// deployment is the manifest of a one-replica Deployment NAME consuming
// Secret NAME-db; version goes into an environment variable, so a new
// version is a change of the pod template, as a release would be.
func deployment(name, version string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[1]s
  labels: {app: %[1]s}
spec:
  replicas: 1
  selector: {matchLabels: {app: %[1]s}}
  template:
    metadata: {labels: {app: %[1]s}}
    spec:
      containers:
      - name: app
        image: registry.k8s.io/pause:3.10
        env: [{name: VERSION, value: %[2]q}]
        envFrom: [{secretRef: {name: %[1]s-db}}]
`, name, version)
}

// get reads a Deployment of the test namespace.
func (s *suite) get(name string) *appsv1.Deployment {
	s.T.Helper()
	var d appsv1.Deployment
	if err := s.Env.Client.Get(s.Ctx, client.ObjectKey{Namespace: s.NS, Name: name}, &d); err != nil {
		s.T.Fatal(err)
	}
	return &d
}

// version is the VERSION the Deployment's pod template sets.
func version(d *appsv1.Deployment) string {
	for _, c := range d.Spec.Template.Spec.Containers {
		for _, e := range c.Env {
			if e.Name == "VERSION" {
				return e.Value
			}
		}
	}
	return ""
}

// waitDeployed waits until the Deployment exists with the given version
// and is available, and KICK recorded the baseline of its Secret.
func (s *suite) waitDeployed(name, want string) {
	s.T.Helper()
	cluster.Eventually(s.T, 90*time.Second, fmt.Sprintf("Deployment %s at version %s", name, want), func() (bool, error) {
		var d appsv1.Deployment
		if err := s.Env.Client.Get(s.Ctx, client.ObjectKey{Namespace: s.NS, Name: name}, &d); err != nil {
			return false, err
		}
		return version(&d) == want, fmt.Errorf("version %q", version(&d))
	})
	s.WaitAvailable(name)
	s.WaitObservation(name + "-db")
}

// change makes a relevant change to the workload's Secret.
func (s *suite) change(name string) time.Time {
	s.T.Helper()
	if s.before == nil {
		s.before = map[string][]string{}
	}
	s.before[name] = s.ReplicaSets(name)
	at := time.Now()
	s.SetSecret(name+"-db", map[string]string{"password": fmt.Sprintf("changed-%d", at.UnixNano())})
	return at
}

// waitGate waits until the workload's request waits in phase for reason,
// (any reason when empty), with a message containing msg, and checks the
// workload was not
// restarted.
func (s *suite) waitGate(name string, phase kickv1alpha1.KickRequestPhase, reason kickv1alpha1.GateReason, msg string) *kickv1alpha1.KickRequest {
	s.T.Helper()
	var kr *kickv1alpha1.KickRequest
	cluster.Eventually(s.T, 60*time.Second, fmt.Sprintf("request of %s to wait in %s for %s", name, phase, reason), func() (bool, error) {
		var err error
		if kr, err = s.Request("deployment-" + name); err != nil {
			return false, err
		}
		g := kr.Status.Gate
		return kr.Status.Phase == phase && g != nil && (reason == "" || g.Reason == reason) && strings.Contains(g.Message, msg),
			fmt.Errorf("phase %q, gate %+v", kr.Status.Phase, g)
	})
	if stamp := s.RestartStamp(name); stamp != "" {
		s.T.Fatalf("%s was restarted (restartedAt %s) although the gate did not allow it", name, stamp)
	}
	return kr
}

// restartedOnce waits until KICK's request for the workload succeeded
// (for three minutes after notBefore: a generous deadline for a busy
// machine), and checks from the workload itself that it was restarted
// exactly once since change: one new ReplicaSet, whose pod template
// carries a restart stamp not before notBefore. KICK's own
// status.restartCount is not the judge of KICK.
func (s *suite) restartedOnce(name string, notBefore time.Time) *kickv1alpha1.KickRequest {
	s.T.Helper()
	kr := s.WaitPhase("deployment-"+name, kickv1alpha1.PhaseSucceeded, max(time.Until(notBefore), 0)+3*time.Minute)
	before, ok := s.before[name]
	if !ok {
		s.T.Fatalf("restartedOnce(%s) without change(%s) first", name, name)
	}
	var added []string
	for _, rs := range s.ReplicaSets(name) {
		if !slices.Contains(before, rs) {
			added = append(added, rs)
		}
	}
	if len(added) != 1 {
		s.T.Fatalf("%s got %d new ReplicaSets since the change (%v), want one: one restart", name, len(added), added)
	}
	stamp := s.RestartStamp(name)
	at, err := time.Parse(time.RFC3339, stamp)
	if err != nil {
		s.T.Fatalf("restartedAt %q: %v", stamp, err)
	}
	if at.Before(notBefore.Truncate(time.Second)) {
		s.T.Fatalf("%s was restarted at %s, before %s", name, at.Format(time.RFC3339), notBefore.Format(time.RFC3339))
	}
	return kr
}

// owner checks the request's status.owner.
func (s *suite) owner(kr *kickv1alpha1.KickRequest, provider kickv1alpha1.GitOpsProvider, kind, namespace, name string) {
	s.T.Helper()
	o := kr.Status.Owner
	if o == nil || o.Provider != provider || o.Kind != kind || o.Namespace != namespace || o.Name != name {
		s.T.Fatalf("status.owner = %+v, want %s %s/%s from %s", o, kind, namespace, name, provider)
	}
}

// secret creates Secret NAME-db, which the Deployment in git consumes
// (Secrets stay out of git).
func (s *suite) secret(name string) {
	s.T.Helper()
	s.Create(&corev1.Secret{ObjectMeta: objectMeta(name + "-db"), StringData: map[string]string{"password": "alpha"}})
}

// pastSecondOf waits until the clock is in a later second than t.
// Kubernetes records when a ReplicaSet was created to the second, so a
// rollout that starts in the same second as a change cannot be told to
// have come after it, and KICK then restarts to be safe (docs/concepts/
// freshness.md); a test that means "after" starts the rollout a second on.
func (s *suite) pastSecondOf(t time.Time) {
	s.T.Helper()
	next := t.Truncate(time.Second).Add(time.Second)
	cluster.Eventually(s.T, 2*time.Second, "the next second", func() (bool, error) { return !time.Now().Before(next), nil })
}
