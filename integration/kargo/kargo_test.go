// Package kargo proves the Kargo gate end to end: the real kick-manager
// with the Argo CD and Kargo integrations against a local control plane
// with the upstream Application, AppProject, Stage and Promotion CRDs.
// In TestKargo, Kargo objects are written as unstructured objects, their
// status through the status subresource, as Kargo's controllers do;
// TestKargoController (opt-in, KICK_KARGO_BIN) runs Kargo's own controller.
package kargo

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
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	gitopsargo "github.com/kick-operator/kick/gitops/argocd"
	"github.com/kick-operator/kick/gitops/kargo"
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

const kargoPolicy = `{discovery: {workloadSelector: {}}, gitOps: {provider: Kargo}}`

// env is the shared part: the Argo CD control-plane namespace and the
// manager.
type env struct {
	*fixture.F
	argo string
}

// project is one subtest: a namespace that is at once the Kargo project
// (Stages, Promotions) and the workloads' namespace.
type project struct {
	*fixture.F
	argo string
}

func setup(t *testing.T) *env {
	e := cluster.Get(t)
	ns := e.Namespace(t)
	f := &fixture.F{T: t, Env: e, NS: ns, Ctx: context.Background()}
	f.Mgr = e.StartManager(t, fixture.ManagerNamespace, "--argocd-namespace="+ns, "--enable-kargo")
	if err := e.Client.Create(f.Ctx, &argov1alpha1.AppProject{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "default"},
		Spec: argov1alpha1.AppProjectSpec{SourceRepos: []string{"*"}, Destinations: []argov1alpha1.ApplicationDestination{{Server: "*", Namespace: "*"}}}}); err != nil {
		t.Fatal(err)
	}
	return &env{F: f, argo: ns}
}

func (e *env) project(t *testing.T) *project {
	t.Parallel()
	f := &fixture.F{T: t, Env: e.Env, NS: e.Env.Namespace(t), Ctx: e.Ctx, Mgr: e.Mgr}
	p := &project{F: f, argo: e.argo}
	p.Policy("kargo", kargoPolicy)
	return p
}

// workload creates Secret NAME-db and a Deployment NAME consuming it,
// tracked by Application NAME, and waits until it is available and
// baselined.
func (p *project) workload(name string) {
	p.T.Helper()
	p.Secret(name+"-db", map[string]string{"password": "alpha"}, nil)
	labels := map[string]string{"app": name}
	p.Create(&appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: map[string]string{
			gitopsargo.TrackingIDAnnotation: name + ":apps/Deployment:" + p.NS + "/" + name}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: fixture.PodSpec(name + "-db")},
		},
	})
	p.WaitAvailable(name)
	p.WaitObservation(name + "-db")
}

func (p *project) change(name string) {
	p.T.Helper()
	p.SetSecret(name+"-db", map[string]string{"password": fmt.Sprintf("changed-%d", time.Now().UnixNano())})
}

// app creates Application NAME in the control-plane namespace with the
// given authorized-stage annotation ("" for none) and sync status.
func (p *project) app(name, stage string, sync argov1alpha1.SyncStatusCode) *argov1alpha1.Application {
	p.T.Helper()
	a := &argov1alpha1.Application{
		ObjectMeta: metav1.ObjectMeta{Namespace: p.argo, Name: name},
		Spec: argov1alpha1.ApplicationSpec{Project: "default",
			Source:      &argov1alpha1.ApplicationSource{RepoURL: "https://git.example.com/shop.git", Path: name},
			Destination: argov1alpha1.ApplicationDestination{Server: "https://kubernetes.default.svc", Namespace: p.NS}},
	}
	if stage != "" {
		a.Annotations = map[string]string{kargo.AuthorizedStageAnnotation: stage}
	}
	if err := p.Env.Client.Create(p.Ctx, a); err != nil {
		p.T.Fatal(err)
	}
	p.updateApp(a, func(a *argov1alpha1.Application) { a.Status.Sync.Status = sync })
	return a
}

// updateApp changes an Application with a plain update, as Argo CD does.
func (p *project) updateApp(a *argov1alpha1.Application, change func(*argov1alpha1.Application)) {
	p.T.Helper()
	cluster.Eventually(p.T, 10*time.Second, "update Application "+a.Name, func() (bool, error) {
		var cur argov1alpha1.Application
		if err := p.Env.Client.Get(p.Ctx, client.ObjectKeyFromObject(a), &cur); err != nil {
			return false, err
		}
		change(&cur)
		if err := p.Env.Client.Update(p.Ctx, &cur); err != nil {
			return false, err
		}
		*a = cur
		return true, nil
	})
}

func kargoObject(kind, namespace, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetAPIVersion("kargo.akuity.io/v1alpha1")
	u.SetKind(kind)
	u.SetNamespace(namespace)
	u.SetName(name)
	return u
}

// stage creates a Stage of the project.
func (p *project) stage(name string) *unstructured.Unstructured {
	p.T.Helper()
	s := kargoObject("Stage", p.NS, name, map[string]any{
		"requestedFreight": []any{map[string]any{
			"origin":  map[string]any{"kind": "Warehouse", "name": "images"},
			"sources": map[string]any{"direct": true},
		}},
	})
	if err := p.Env.Client.Create(p.Ctx, s); err != nil {
		p.T.Fatalf("create Stage %s: %v", name, err)
	}
	return s
}

// promotion creates a Promotion to a Stage and sets its phase through the
// status subresource ("" leaves it without status).
func (p *project) promotion(name, stage, phase string) *unstructured.Unstructured {
	p.T.Helper()
	pr := kargoObject("Promotion", p.NS, name, map[string]any{
		"stage":   stage,
		"freight": "f0123456789abcdef",
		"steps":   []any{map[string]any{"uses": "argocd-update"}},
	})
	if err := p.Env.Client.Create(p.Ctx, pr); err != nil {
		p.T.Fatalf("create Promotion %s: %v", name, err)
	}
	if phase != "" {
		p.setStatus(pr, map[string]any{"phase": phase})
	}
	return pr
}

// setStatus replaces an object's status through the status subresource.
func (p *project) setStatus(u *unstructured.Unstructured, status map[string]any) {
	p.T.Helper()
	cluster.Eventually(p.T, 10*time.Second, "update the status of "+u.GetKind()+" "+u.GetName(), func() (bool, error) {
		cur := &unstructured.Unstructured{}
		cur.SetGroupVersionKind(u.GroupVersionKind())
		if err := p.Env.Client.Get(p.Ctx, client.ObjectKeyFromObject(u), cur); err != nil {
			return false, err
		}
		if status == nil {
			delete(cur.Object, "status")
		} else {
			cur.Object["status"] = status
		}
		if err := p.Env.Client.Status().Update(p.Ctx, cur); err != nil {
			return false, err
		}
		return true, nil
	})
}

// waitGate waits until the workload's request waits for reason with a
// message containing msg, and checks nothing restarted it.
func (p *project) waitGate(name string, reason kickv1alpha1.GateReason, msg string) *kickv1alpha1.KickRequest {
	p.T.Helper()
	var kr *kickv1alpha1.KickRequest
	cluster.Eventually(p.T, 30*time.Second, fmt.Sprintf("request of %s to wait for %s", name, reason), func() (bool, error) {
		var err error
		if kr, err = p.Request("deployment-" + name); err != nil {
			return false, err
		}
		g := kr.Status.Gate
		return g != nil && g.Reason == reason && kr.Status.Phase == reason.WaitingPhase() && strings.Contains(g.Message, msg),
			fmt.Errorf("phase %q, gate %+v", kr.Status.Phase, g)
	})
	if stamp := p.RestartStamp(name); stamp != "" {
		p.T.Fatalf("%s was restarted (%s) although the gate did not allow it", name, stamp)
	}
	if rs := p.ReplicaSets(name); len(rs) != 1 {
		p.T.Fatalf("%s has ReplicaSets %v, want only the first", name, rs)
	}
	if kr.Status.Provider != kickv1alpha1.ProviderKargo {
		p.T.Fatalf("status.provider = %q", kr.Status.Provider)
	}
	return kr
}

// restarted waits until KICK restarted the workload with an Allowed gate.
func (p *project) restarted(name string) *kickv1alpha1.KickRequest {
	p.T.Helper()
	var kr *kickv1alpha1.KickRequest
	cluster.Eventually(p.T, 30*time.Second, name+" to be restarted", func() (bool, error) {
		var err error
		if kr, err = p.Request("deployment-" + name); err != nil {
			return false, err
		}
		g := kr.Status.Gate
		if p.RestartStamp(name) == "" || kr.Status.RestartCount == 0 || g == nil || g.Reason != kickv1alpha1.GateAllowed {
			return false, fmt.Errorf("phase %q, gate %+v", kr.Status.Phase, g)
		}
		return true, nil
	})
	return kr
}

// owner checks status.owner names the Application and the Stage.
func (p *project) owner(kr *kickv1alpha1.KickRequest, app, stage string) {
	p.T.Helper()
	o := kr.Status.Owner
	if o == nil || o.Provider != kickv1alpha1.ProviderKargo || o.Kind != "Application" || o.Name != app || o.Stage != stage {
		p.T.Fatalf("status.owner = %+v, want Application %s and Stage %s", o, app, stage)
	}
}

func TestKargo(t *testing.T) {
	e := setup(t)
	const synced = argov1alpha1.SyncStatusCodeSynced

	t.Run("running promotion blocks until it finishes", func(t *testing.T) {
		p := e.project(t)
		stage := p.NS + ":prod"
		p.app("promoted", stage, synced)
		p.stage("prod")
		p.promotion("prod-1", "prod", "Succeeded")
		running := p.promotion("prod-2", "prod", "Running")
		p.promotion("qa-1", "qa", "Running") // another Stage's promotion
		p.workload("promoted")
		p.change("promoted")
		kr := p.waitGate("promoted", kickv1alpha1.GatePromotionRunning, "Kargo Stage "+stage+" has promotions in flight: prod-2 (Running)")
		p.owner(kr, "promoted", stage)
		p.setStatus(running, map[string]any{"phase": "Succeeded"})
		p.owner(p.restarted("promoted"), "promoted", stage)
	})
	t.Run("pending promotion blocks", func(t *testing.T) {
		p := e.project(t)
		p.app("pending", p.NS+":prod", synced)
		p.stage("prod")
		p.promotion("prod-1", "prod", "")
		p.workload("pending")
		p.change("pending")
		p.waitGate("pending", kickv1alpha1.GatePromotionRunning, "prod-1 (not started)")
	})
	t.Run("finished promotion proceeds to the Argo CD gate", func(t *testing.T) {
		p := e.project(t)
		stage := p.NS + ":prod"
		app := p.app("synced-later", stage, argov1alpha1.SyncStatusCodeOutOfSync)
		p.stage("prod")
		p.promotion("prod-1", "prod", "Succeeded")
		p.workload("synced-later")
		p.change("synced-later")
		p.owner(p.waitGate("synced-later", kickv1alpha1.GateOwnerOutOfSync, "is OutOfSync"), "synced-later", stage)
		p.updateApp(app, func(a *argov1alpha1.Application) { a.Status.Sync.Status = synced })
		p.restarted("synced-later")
	})
	t.Run("Stage reporting a current promotion blocks", func(t *testing.T) {
		p := e.project(t)
		p.app("current", p.NS+":prod", synced)
		stage := p.stage("prod")
		p.setStatus(stage, map[string]any{"currentPromotion": map[string]any{"name": "prod-7"}})
		p.workload("current")
		p.change("current")
		p.waitGate("current", kickv1alpha1.GatePromotionRunning, "reports promotion prod-7 in progress")
		p.setStatus(stage, map[string]any{})
		p.restarted("current")
	})
	t.Run("unannotated Application blocks until annotated", func(t *testing.T) {
		p := e.project(t)
		app := p.app("unannotated", "", synced)
		p.stage("prod")
		p.workload("unannotated")
		p.change("unannotated")
		p.waitGate("unannotated", kickv1alpha1.GateOwnerUnknown, "has no kargo.akuity.io/authorized-stage annotation")
		p.updateApp(app, func(a *argov1alpha1.Application) {
			a.Annotations = map[string]string{kargo.AuthorizedStageAnnotation: p.NS + ":prod"}
		})
		p.owner(p.restarted("unannotated"), "unannotated", p.NS+":prod")
	})
	t.Run("multi-stage Application blocks", func(t *testing.T) {
		p := e.project(t)
		p.app("multi", p.NS+":prod,"+p.NS+":qa", synced)
		p.stage("prod")
		p.stage("qa")
		p.workload("multi")
		p.change("multi")
		p.waitGate("multi", kickv1alpha1.GateAmbiguousOwner, "authorizes 2 Stages")
	})
	t.Run("malformed annotation is a configuration error", func(t *testing.T) {
		p := e.project(t)
		p.app("malformed", "prod", synced)
		p.workload("malformed")
		p.change("malformed")
		p.waitGate("malformed", kickv1alpha1.GateConfigurationError, `"prod" is not <project>:<stage>`)
	})
	t.Run("missing Stage blocks until it exists", func(t *testing.T) {
		p := e.project(t)
		p.app("stageless", p.NS+":prod", synced)
		p.workload("stageless")
		p.change("stageless")
		p.waitGate("stageless", kickv1alpha1.GateOwnerUnknown, "Kargo Stage "+p.NS+":prod, which does not exist")
		p.stage("prod")
		p.restarted("stageless")
	})
}
