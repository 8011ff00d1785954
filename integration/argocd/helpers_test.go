package argocd

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	argov1alpha1 "github.com/argoproj/argo-cd/v3/pkg/apis/application/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	gitopsargo "github.com/kick-operator/kick/gitops/argocd"
	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/integration/fixture"
)

func TestMain(m *testing.M) {
	cluster.Main(m, cluster.TestOptions{
		KickCRDs:     true,
		UpstreamCRDs: true,
		AddToScheme:  []func(*runtime.Scheme) error{kickv1alpha1.AddToScheme, gitopsargo.AddToScheme},
	})
}

// argoPolicy gates every workload of the namespace on Argo CD.
const argoPolicy = `{discovery: {workloadSelector: {}}, gitOps: {provider: ArgoCD}}`

// suite is one test's Argo CD control plane and manager. The test
// namespace is the Argo CD control-plane namespace (Applications,
// AppProjects, argocd-cm); every subtest gets a namespace of its own for
// its workloads, so nothing but the objects under test re-evaluates its
// requests.
type suite struct {
	*fixture.F
	// Argo is the Argo CD control-plane namespace.
	Argo string
}

// setup creates the control-plane namespace, runs prepare (objects the
// manager must find from its first decision, such as argocd-cm), then
// starts the manager with that namespace as --argocd-namespace.
func setup(t *testing.T, prepare func(s *suite), args ...string) *suite {
	env := cluster.Get(t)
	ns := env.Namespace(t)
	s := &suite{F: &fixture.F{T: t, Env: env, NS: ns, Ctx: context.Background()}, Argo: ns}
	if prepare != nil {
		prepare(s)
	}
	s.Mgr = env.StartManager(t, fixture.ManagerNamespace, append([]string{"--argocd-namespace=" + ns}, args...)...)
	return s
}

// in returns the suite for a subtest, with a fresh workload namespace
// whose KickPolicy gates every workload on Argo CD.
func (s *suite) in(t *testing.T) *suite {
	f := &fixture.F{T: t, Env: s.Env, NS: s.Env.Namespace(t), Ctx: s.Ctx, Mgr: s.Mgr}
	sub := &suite{F: f, Argo: s.Argo}
	sub.Policy("argo", argoPolicy)
	return sub
}

// workload creates Secret NAME-db and a Deployment NAME consuming it with
// the given metadata, and waits until it is available and baselined.
func (s *suite) workload(name string, annotations, labels map[string]string) {
	s.T.Helper()
	s.Secret(name+"-db", map[string]string{"password": "alpha"}, nil)
	l := map[string]string{"app": name}
	for k, v := range labels {
		l[k] = v
	}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l, Annotations: annotations},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}}, Spec: fixture.PodSpec(name + "-db")},
		},
	}
	s.Create(d)
	s.WaitAvailable(name)
	s.WaitObservation(name + "-db")
}

// change makes a relevant change to the workload's Secret.
func (s *suite) change(name string) {
	s.T.Helper()
	s.SetSecret(name+"-db", map[string]string{"password": fmt.Sprintf("changed-%d", time.Now().UnixNano())})
}

// tracking is a self-referencing tracking annotation for Deployment
// NAMESPACE/NAME, owned by application instance APP.
func tracking(app, namespace, name string) map[string]string {
	return map[string]string{gitopsargo.TrackingIDAnnotation: app + ":apps/Deployment:" + namespace + "/" + name}
}

// appSpec describes an Application for app().
type appSpec struct {
	namespace string // default: the control-plane namespace
	project   string // default: "default"
	lists     []string
	sync      argov1alpha1.SyncStatusCode // "": no status at all
	mutate    func(*argov1alpha1.Application)
}

// app creates an Application, then writes its status with a plain update,
// as the Argo CD application controller does (the CRD has no status
// subresource). lists names Deployments of the test namespace its
// status.resources reports.
func (s *suite) app(name string, spec appSpec) *argov1alpha1.Application {
	s.T.Helper()
	if spec.namespace == "" {
		spec.namespace = s.Argo
	}
	if spec.project == "" {
		spec.project = "default"
	}
	a := &argov1alpha1.Application{
		ObjectMeta: metav1.ObjectMeta{Namespace: spec.namespace, Name: name},
		Spec: argov1alpha1.ApplicationSpec{
			Project:     spec.project,
			Source:      &argov1alpha1.ApplicationSource{RepoURL: "https://git.example.com/shop.git", Path: name, TargetRevision: "HEAD"},
			Destination: argov1alpha1.ApplicationDestination{Server: "https://kubernetes.default.svc", Namespace: s.NS},
		},
	}
	if err := s.Env.Client.Create(s.Ctx, a); err != nil {
		s.T.Fatalf("create Application %s: %v", name, err)
	}
	if spec.sync == "" && len(spec.lists) == 0 && spec.mutate == nil {
		return a
	}
	s.updateApp(a, func(a *argov1alpha1.Application) {
		if spec.sync != "" {
			a.Status.Sync.Status = spec.sync
		}
		for _, d := range spec.lists {
			a.Status.Resources = append(a.Status.Resources, argov1alpha1.ResourceStatus{
				Group: "apps", Version: "v1", Kind: "Deployment", Namespace: s.NS, Name: d, Status: argov1alpha1.SyncStatusCodeSynced,
			})
		}
		// Something the cache transform drops, so the test runs with
		// realistic objects.
		a.Status.Resources = append(a.Status.Resources, argov1alpha1.ResourceStatus{Version: "v1", Kind: "Service", Namespace: s.NS, Name: name})
		if spec.mutate != nil {
			spec.mutate(a)
		}
	})
	return a
}

// updateApp re-reads an Application, applies change and updates the whole
// object, retrying on conflicts.
func (s *suite) updateApp(a *argov1alpha1.Application, change func(*argov1alpha1.Application)) {
	s.T.Helper()
	cluster.Eventually(s.T, 10*time.Second, "update Application "+a.Name, func() (bool, error) {
		var cur argov1alpha1.Application
		if err := s.Env.Client.Get(s.Ctx, client.ObjectKeyFromObject(a), &cur); err != nil {
			return false, err
		}
		change(&cur)
		if err := s.Env.Client.Update(s.Ctx, &cur); err != nil {
			return false, err
		}
		*a = cur
		return true, nil
	})
}

// project creates an AppProject in the control-plane namespace.
func (s *suite) project(name string, windows ...*argov1alpha1.InlineSyncWindow) *argov1alpha1.AppProject {
	s.T.Helper()
	p := &argov1alpha1.AppProject{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.Argo, Name: name},
		Spec: argov1alpha1.AppProjectSpec{
			SourceRepos:  []string{"*"},
			Destinations: []argov1alpha1.ApplicationDestination{{Server: "*", Namespace: "*"}},
			SyncWindows:  windows,
		},
	}
	if err := s.Env.Client.Create(s.Ctx, p); err != nil {
		s.T.Fatalf("create AppProject %s: %v", name, err)
	}
	return p
}

// waitGate waits until the workload's request waits in phase for reason,
// with a message containing msg, and checks the workload was not
// restarted.
func (s *suite) waitGate(name string, phase kickv1alpha1.KickRequestPhase, reason kickv1alpha1.GateReason, msg string) *kickv1alpha1.KickRequest {
	s.T.Helper()
	var kr *kickv1alpha1.KickRequest
	cluster.Eventually(s.T, 30*time.Second, fmt.Sprintf("request of %s to wait in %s for %s", name, phase, reason), func() (bool, error) {
		var err error
		if kr, err = s.Request("deployment-" + name); err != nil {
			return false, err
		}
		g := kr.Status.Gate
		return kr.Status.Phase == phase && g != nil && g.Reason == reason && strings.Contains(g.Message, msg),
			fmt.Errorf("phase %q, gate %+v", kr.Status.Phase, g)
	})
	s.notRestarted(name)
	return kr
}

// notRestarted checks that KICK never patched the workload.
func (s *suite) notRestarted(name string) {
	s.T.Helper()
	if stamp := s.RestartStamp(name); stamp != "" {
		s.T.Fatalf("%s was restarted (restartedAt %s) although the gate did not allow it", name, stamp)
	}
	if rs := s.ReplicaSets(name); len(rs) != 1 {
		s.T.Fatalf("%s has ReplicaSets %v, want only the first", name, rs)
	}
}

// restarted waits until KICK restarted the workload and recorded it with
// an Allowed gate (the patch comes first, the status write right after),
// and returns the request.
func (s *suite) restarted(name string) *kickv1alpha1.KickRequest {
	s.T.Helper()
	var kr *kickv1alpha1.KickRequest
	cluster.Eventually(s.T, 30*time.Second, name+" to be restarted", func() (bool, error) {
		var err error
		if kr, err = s.Request("deployment-" + name); err != nil {
			return false, err
		}
		g := kr.Status.Gate
		if s.RestartStamp(name) == "" || kr.Status.RestartCount == 0 {
			return false, fmt.Errorf("not restarted: phase %q, gate %+v", kr.Status.Phase, g)
		}
		if g == nil || g.Reason != kickv1alpha1.GateAllowed {
			return false, fmt.Errorf("restarted, but the recorded gate is %+v", g)
		}
		return true, nil
	})
	return kr
}

// owner checks the request's status.owner.
func (s *suite) owner(kr *kickv1alpha1.KickRequest, namespace, name, project string) {
	s.T.Helper()
	o := kr.Status.Owner
	if o == nil || o.Provider != kickv1alpha1.ProviderArgoCD || o.APIVersion != "argoproj.io/v1alpha1" || o.Kind != "Application" ||
		o.Namespace != namespace || o.Name != name || o.Project != project {
		s.T.Fatalf("status.owner = %+v, want Application %s/%s in project %s", o, namespace, name, project)
	}
	if kr.Status.Provider != kickv1alpha1.ProviderArgoCD {
		s.T.Fatalf("status.provider = %q", kr.Status.Provider)
	}
}
