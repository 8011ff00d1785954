// Package rollouts proves the Argo Rollouts integration on the local control
// plane with the upstream Rollout CRD and the real kick-manager: a change to
// a Secret a Rollout consumes restarts it through spec.restartAt (whole
// seconds, never older than the change) without touching its pod template,
// the request completes only when the Rollout status says the restart is
// done, and a Deployment run by a Rollout through workloadRef is the target
// but is restarted through that Rollout, once, even when it is scaled while
// that restart is in flight. No Argo Rollouts controller runs here: the
// tests write the Rollout status as it would.
package rollouts

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/integration/fixture"
	"github.com/kick-operator/kick/restart/freshness"
	"github.com/kick-operator/kick/restart/rollout"
)

func TestMain(m *testing.M) {
	cluster.Main(m, cluster.TestOptions{
		KickCRDs:     true,
		UpstreamCRDs: true,
		AddToScheme:  []func(*runtime.Scheme) error{kickv1alpha1.AddToScheme, rollout.AddToScheme},
	})
}

const selectAll = `discovery: {workloadSelector: {}}`

// createRollout creates a Rollout labelled app=NAME with a full object
// (selector, strategy) as a user would apply it, and marks it healthy.
func createRollout(f *fixture.F, name string, replicas int32, spec map[string]any) {
	f.T.Helper()
	labels := map[string]any{"app": name}
	body := map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
		"metadata": map[string]any{"name": name, "namespace": f.NS, "labels": labels},
		"spec": map[string]any{
			"replicas": replicas,
			"selector": map[string]any{"matchLabels": labels},
			"strategy": map[string]any{"canary": map[string]any{"steps": []any{
				map[string]any{"setWeight": 20}, map[string]any{"pause": map[string]any{}},
			}}},
		},
	}
	for k, v := range spec {
		body["spec"].(map[string]any)[k] = v
	}
	data, err := json.Marshal(body)
	if err != nil {
		f.T.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal(data, &u.Object); err != nil {
		f.T.Fatal(err)
	}
	if err := f.Env.Client.Create(f.Ctx, u); err != nil {
		f.T.Fatalf("create Rollout %s: %v", name, err)
	}
	replicaSet(f, name, replicas)
	settle(f, name)
}

// podHash is the rollouts-pod-template-hash of every Rollout's one
// revision here.
const podHash = "5d4f8c7b9"

// replicaSet plays the Rollouts controller creating the Rollout's
// ReplicaSet: NAME-<podHash>, labelled with the hash and controlled by the
// Rollout, whose pods the control plane runs (kwok makes them Ready). The
// real controller always has one, and KICK reads its status to tell a
// finished restart; it waits until every replica is available.
func replicaSet(f *fixture.F, name string, replicas int32) {
	f.T.Helper()
	ro := getRollout(f, name)
	labels := map[string]string{"app": name, rollout.PodTemplateHashLabel: podHash}
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-" + podHash, Labels: labels, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "argoproj.io/v1alpha1", Kind: "Rollout", Name: name, UID: ro.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
		}}},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: fixture.PodSpec()},
		},
	}
	f.Create(rs)
	cluster.Eventually(f.T, 60*time.Second, "ReplicaSet "+rs.Name+" to have its replicas available", func() (bool, error) {
		if err := f.Env.Client.Get(f.Ctx, client.ObjectKeyFromObject(rs), rs); err != nil {
			return false, err
		}
		return rs.Status.AvailableReplicas == replicas && rs.Status.ObservedGeneration == rs.Generation, fmt.Errorf("status %+v", rs.Status)
	})
}

// template is a pod template consuming the named Secrets through envFrom.
func template(app string, secrets ...string) map[string]any {
	return map[string]any{
		"metadata": map[string]any{"labels": map[string]any{"app": app}},
		"spec":     toMap(fixture.PodSpec(secrets...)),
	}
}

func toMap(v any) map[string]any {
	data, _ := json.Marshal(v)
	var m map[string]any
	_ = json.Unmarshal(data, &m)
	return m
}

func getRollout(f *fixture.F, name string) *rollout.Rollout {
	f.T.Helper()
	var ro rollout.Rollout
	if err := f.Env.Client.Get(f.Ctx, client.ObjectKey{Namespace: f.NS, Name: name}, &ro); err != nil {
		f.T.Fatal(err)
	}
	return &ro
}

// settle plays the Rollouts controller once: it observes the current
// generation, finishes any requested restart (status.restartedAt =
// spec.restartAt) and reports the Rollout Healthy with every replica
// updated and available. It writes through the status subresource. Like the
// real controller, it does not start a restart before spec.restartAt: it
// waits for the clock to reach it (at most a second, KICK rounds up).
func settle(f *fixture.F, name string) *rollout.Rollout {
	f.T.Helper()
	ro := getRollout(f, name)
	if at := ro.Spec.RestartAt; at != nil {
		cluster.Eventually(f.T, 5*time.Second, "the clock to reach restartAt", func() (bool, error) {
			return !time.Now().Before(at.Time), fmt.Errorf("restartAt %s is ahead", at.UTC().Format(time.RFC3339))
		})
	}
	replicas := int32(1)
	if ro.Spec.Replicas != nil {
		replicas = *ro.Spec.Replicas
	}
	status := map[string]any{
		"observedGeneration": strconv.FormatInt(ro.Generation, 10),
		"replicas":           replicas, "updatedReplicas": replicas, "readyReplicas": replicas, "availableReplicas": replicas,
		"currentPodHash": podHash, "stableRS": podHash, "phase": "Healthy", "message": nil,
		"restartedAt": nil,
	}
	if ro.Spec.RestartAt != nil {
		status["restartedAt"] = ro.Spec.RestartAt.UTC().Format(time.RFC3339)
	}
	patch, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		f.T.Fatal(err)
	}
	if err := f.Env.Client.Status().Patch(f.Ctx, ro, client.RawPatch(types.MergePatchType, patch)); err != nil {
		f.T.Fatalf("write Rollout status: %v", err)
	}
	return ro
}

// observe plays the Rollouts controller noticing a spec change it has not
// acted on yet: it records the generation and, for a requested restart it
// has not finished, reports the Rollout Progressing as the real controller
// does ("rollout is restarting"); it leaves everything else.
func observe(f *fixture.F, name string) {
	f.T.Helper()
	ro := getRollout(f, name)
	phase := ""
	if ro.Spec.RestartAt != nil && (ro.Status.RestartedAt == nil || !ro.Status.RestartedAt.Equal(ro.Spec.RestartAt)) {
		phase = `,"phase":"Progressing","message":"rollout is restarting"`
	}
	patch := fmt.Sprintf(`{"status":{"observedGeneration":%q%s}}`, strconv.FormatInt(ro.Generation, 10), phase)
	if err := f.Env.Client.Status().Patch(f.Ctx, ro, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		f.T.Fatalf("write Rollout status: %v", err)
	}
}

// waitRestartAt waits until spec.restartAt is set and after prev.
func waitRestartAt(f *fixture.F, name string, prev time.Time) time.Time {
	f.T.Helper()
	var got time.Time
	cluster.Eventually(f.T, 60*time.Second, "Rollout "+name+" to get a new spec.restartAt", func() (bool, error) {
		ro := getRollout(f, name)
		if ro.Spec.RestartAt == nil {
			return false, fmt.Errorf("no restartAt")
		}
		got = ro.Spec.RestartAt.UTC()
		return got.After(prev), fmt.Errorf("restartAt %s", got)
	})
	return got
}

// waitCondition waits until a request has a condition with this status and
// reason (a reached waiting state).
func waitCondition(f *fixture.F, request, typ string, status metav1.ConditionStatus, reason string) *kickv1alpha1.KickRequest {
	f.T.Helper()
	var kr *kickv1alpha1.KickRequest
	cluster.Eventually(f.T, 60*time.Second, fmt.Sprintf("KickRequest %s condition %s=%s (%s)", request, typ, status, reason), func() (bool, error) {
		var err error
		if kr, err = f.Request(request); err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(kr.Status.Conditions, typ)
		return c != nil && c.Status == status && c.Reason == reason, fmt.Errorf("phase %s, conditions %+v", kr.Status.Phase, kr.Status.Conditions)
	})
	return kr
}

// assertRestartAnswers checks that restartAt is a whole second, not older
// than the change the request recorded.
func assertRestartAnswers(t *testing.T, restartAt time.Time, kr *kickv1alpha1.KickRequest) {
	t.Helper()
	if restartAt.Nanosecond() != 0 {
		t.Fatalf("restartAt %s is not a whole second", restartAt)
	}
	change := kr.Status.LatestObservedDependencyChange
	if change == nil || restartAt.Before(change.Time) {
		t.Fatalf("restartAt %s is older than the change it answers (%v)", restartAt, change)
	}
}

func TestSecretChangeRestartsThroughRestartAt(t *testing.T) {
	f := fixture.Setup(t, "--enable-argo-rollouts")
	f.Policy("all", selectAll+"\nrestart: {minInterval: 0s}")
	f.Secret("db", map[string]string{"password": "alpha"}, nil)
	createRollout(f, "web", 2, map[string]any{"template": template("web", "db")})
	f.WaitObservation("db")
	if len(f.Requests()) != 0 {
		t.Fatalf("adopting a fresh Rollout created a KickRequest: %+v", f.Requests())
	}
	cluster.Eventually(t, 30*time.Second, "the policy to count the Rollout", func() (bool, error) {
		var p kickv1alpha1.KickPolicy
		if err := f.Env.Client.Get(f.Ctx, client.ObjectKey{Namespace: f.NS, Name: "all"}, &p); err != nil {
			return false, err
		}
		return p.Status.MatchedWorkloads == 1, fmt.Errorf("matchedWorkloads %d", p.Status.MatchedWorkloads)
	})
	before := getRollout(f, "web")

	f.SetSecret("db", map[string]string{"password": "bravo"})
	restartAt := waitRestartAt(f, "web", time.Time{})
	// Until the Rollouts controller reports the restart done, the request
	// follows it and does not finish.
	observe(f, "web")
	kr := waitCondition(f, "rollout-web", kickv1alpha1.ConditionRolloutComplete, metav1.ConditionFalse, rollout.RestartPending)
	if kr.Status.Phase != kickv1alpha1.PhaseExecuting {
		t.Fatalf("phase %s while the restart is pending, want Executing", kr.Status.Phase)
	}
	if kr.Spec.TargetRef.APIVersion != kickv1alpha1.ArgoRolloutsAPIVersion || kr.Spec.TargetRef.Kind != kickv1alpha1.TargetRollout {
		t.Fatalf("targetRef %+v", kr.Spec.TargetRef)
	}
	assertRestartAnswers(t, restartAt, kr)
	after := getRollout(f, "web")
	if !equality.Semantic.DeepEqual(before.Spec.Template, after.Spec.Template) {
		t.Fatalf("the pod template changed:\nbefore %+v\nafter  %+v", before.Spec.Template, after.Spec.Template)
	}
	if _, ok := after.Spec.Template.Annotations[freshness.RestartedAtAnnotation]; ok {
		t.Fatal("the pod template got a restartedAt annotation")
	}
	if marker := kr.Status.CurrentRollout; marker == nil || marker.RestartedAt != restartAt.Format(time.RFC3339) {
		t.Fatalf("rollout marker %+v, want restartedAt %s", marker, restartAt.Format(time.RFC3339))
	}

	settle(f, "web")
	kr = f.WaitPhase("rollout-web", kickv1alpha1.PhaseSucceeded, 60*time.Second)
	if kr.Status.RestartCount != 1 {
		t.Fatalf("restartCount = %d, want 1", kr.Status.RestartCount)
	}

	// Nothing more happens for that change.
	f.Barrier()
	kr, err := f.Request("rollout-web")
	if err != nil {
		t.Fatal(err)
	}
	if ro := getRollout(f, "web"); kr.Status.RestartCount != 1 || !ro.Spec.RestartAt.Time.Equal(restartAt) {
		t.Fatalf("a settled change restarted again: restartCount %d, restartAt %v (was %s)", kr.Status.RestartCount, ro.Spec.RestartAt, restartAt)
	}

	// The next change restarts once more, with a newer restartAt.
	f.SetSecret("db", map[string]string{"password": "charlie"})
	second := waitRestartAt(f, "web", restartAt)
	settle(f, "web")
	cluster.Eventually(t, 60*time.Second, "the second restart to succeed", func() (bool, error) {
		kr, err = f.Request("rollout-web")
		if err != nil {
			return false, err
		}
		return kr.Status.Phase == kickv1alpha1.PhaseSucceeded && kr.Status.RestartCount == 2, fmt.Errorf("phase %s, restartCount %d", kr.Status.Phase, kr.Status.RestartCount)
	})
	assertRestartAnswers(t, second, kr)
}

func TestManualRequestForARollout(t *testing.T) {
	f := fixture.Setup(t, "--enable-argo-rollouts")
	f.Policy("all", selectAll)
	f.Secret("db", map[string]string{"password": "alpha"}, nil)
	createRollout(f, "web", 1, map[string]any{"template": template("web", "db")})

	seen := time.Now()
	f.Create(&kickv1alpha1.KickRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "rotate"},
		Spec: kickv1alpha1.KickRequestSpec{Reason: "rotated by CI", TargetRef: kickv1alpha1.TargetRef{
			APIVersion: kickv1alpha1.ArgoRolloutsAPIVersion, Kind: kickv1alpha1.TargetRollout, Name: "web"}},
	})
	restartAt := waitRestartAt(f, "web", time.Time{})
	if restartAt.Before(seen.Truncate(time.Second)) {
		t.Fatalf("restartAt %s is older than the request (%s)", restartAt, seen)
	}
	observe(f, "web")
	kr := waitCondition(f, "rotate", kickv1alpha1.ConditionRolloutComplete, metav1.ConditionFalse, rollout.RestartPending)
	assertRestartAnswers(t, restartAt, kr)
	settle(f, "web")
	if kr = f.WaitPhase("rotate", kickv1alpha1.PhaseSucceeded, 60*time.Second); kr.Status.RestartCount != 1 {
		t.Fatalf("restartCount = %d, want 1", kr.Status.RestartCount)
	}
}

// workloadRefFixture starts a manager with the Rollouts integration and
// creates Secret db, consumed by Deployment web, which Rollout web-rollout
// runs through workloadRef: the Deployment holds the template (and so the
// dependency), the Rollout runs its pods, and the Deployment is scaled to
// zero.
func workloadRefFixture(t *testing.T) *fixture.F {
	t.Helper()
	f := fixture.Setup(t, "--enable-argo-rollouts")
	f.Policy("all", selectAll)
	f.Secret("db", map[string]string{"password": "alpha"}, nil)
	f.Deployment("web", 0, fixture.PodSpec("db"))
	f.WaitAvailable("web")
	createRollout(f, "web-rollout", 2, map[string]any{
		"workloadRef": map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "scaleDown": "onsuccess"},
	})
	f.WaitObservation("db")
	return f
}

func TestWorkloadRefRestartsTheReferencedDeploymentThroughItsRollout(t *testing.T) {
	f := workloadRefFixture(t)
	if len(f.Requests()) != 0 {
		t.Fatalf("adoption created a KickRequest: %+v", f.Requests())
	}
	deploymentStampBefore := f.RestartStamp("web")

	f.SetSecret("db", map[string]string{"password": "bravo"})
	restartAt := waitRestartAt(f, "web-rollout", time.Time{})
	observe(f, "web-rollout")
	kr := waitCondition(f, "deployment-web", kickv1alpha1.ConditionRolloutComplete, metav1.ConditionFalse, rollout.RestartPending)
	if kr.Spec.TargetRef.Kind != kickv1alpha1.TargetDeployment || kr.Spec.TargetRef.Name != "web" {
		t.Fatalf("targetRef %+v, want the referenced Deployment", kr.Spec.TargetRef)
	}
	assertRestartAnswers(t, restartAt, kr)
	if got := f.RestartStamp("web"); got != deploymentStampBefore {
		t.Fatalf("the Deployment's pod template was stamped (%q): the Rollout would re-run its steps", got)
	}
	if rss := f.ReplicaSets("web"); len(rss) != 1 {
		t.Fatalf("the Deployment rolled a new ReplicaSet: %v", rss)
	}

	settle(f, "web-rollout")
	if kr = f.WaitPhase("deployment-web", kickv1alpha1.PhaseSucceeded, 60*time.Second); kr.Status.RestartCount != 1 {
		t.Fatalf("restartCount = %d, want 1", kr.Status.RestartCount)
	}
	f.Barrier()
	if ro := getRollout(f, "web-rollout"); !ro.Spec.RestartAt.Time.Equal(restartAt) {
		t.Fatalf("restarted again: restartAt %s, was %s", ro.Spec.RestartAt, restartAt)
	}
}

// TestArgoCDClaimOnARollout: the Argo CD provider's claim index covers
// Rollouts when that integration runs. A Rollout whose tracking annotation
// names an Application that does not exist yet waits for its owner; when
// the Application appears (listing nothing in status.resources), its wake
// reaches the Rollout's request through the claim, and the Rollout is
// restarted with the Application recorded as its owner.
func TestArgoCDClaimOnARollout(t *testing.T) {
	env := cluster.Get(t)
	argo := env.Namespace(t)
	project := argoObject("AppProject", argo, "default", map[string]any{
		"sourceRepos":  []any{"*"},
		"destinations": []any{map[string]any{"server": "*", "namespace": "*"}},
	}, nil)
	if err := env.Client.Create(t.Context(), project); err != nil {
		t.Fatalf("create AppProject: %v", err)
	}
	f := fixture.Setup(t, "--enable-argo-rollouts", "--argocd-namespace="+argo)
	f.Policy("argo", selectAll+"\ngitOps: {provider: ArgoCD}")
	f.Secret("db", map[string]string{"password": "alpha"}, nil)
	createRollout(f, "web", 1, map[string]any{"template": template("web", "db")})
	claim := fmt.Sprintf(`{"metadata":{"annotations":{"argocd.argoproj.io/tracking-id":"web:argoproj.io/Rollout:%s/web"}}}`, f.NS)
	if err := env.Client.Patch(f.Ctx, getRollout(f, "web"), client.RawPatch(types.MergePatchType, []byte(claim))); err != nil {
		t.Fatalf("annotate Rollout: %v", err)
	}
	f.WaitObservation("db")

	f.SetSecret("db", map[string]string{"password": "bravo"})
	want := "names Application " + argo + "/web through its tracking annotation, but that Application cannot own it"
	cluster.Eventually(t, 30*time.Second, "the Rollout's request to wait for its Application", func() (bool, error) {
		kr, err := f.Request("rollout-web")
		if err != nil {
			return false, err
		}
		g := kr.Status.Gate
		return kr.Status.Phase == kickv1alpha1.PhaseWaitingForOwner && g != nil && g.Reason == kickv1alpha1.GateOwnerUnknown && strings.Contains(g.Message, want),
			fmt.Errorf("phase %q, gate %+v", kr.Status.Phase, g)
	})
	if ro := getRollout(f, "web"); ro.Spec.RestartAt != nil {
		t.Fatalf("restarted (restartAt %s) while the owner was missing", ro.Spec.RestartAt)
	}

	app := argoObject("Application", argo, "web", map[string]any{
		"project":     "default",
		"source":      map[string]any{"repoURL": "https://git.example.com/shop.git", "path": "web", "targetRevision": "HEAD"},
		"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": f.NS},
	}, map[string]any{"sync": map[string]any{"status": "Synced"}})
	if err := env.Client.Create(f.Ctx, app); err != nil {
		t.Fatalf("create Application: %v", err)
	}
	waitRestartAt(f, "web", time.Time{})
	settle(f, "web")
	kr := f.WaitPhase("rollout-web", kickv1alpha1.PhaseSucceeded, 60*time.Second)
	if o := kr.Status.Owner; o == nil || o.Kind != "Application" || o.Namespace != argo || o.Name != "web" || kr.Status.Provider != kickv1alpha1.ProviderArgoCD {
		t.Fatalf("provider %q, owner %+v: want Application %s/web", kr.Status.Provider, o, argo)
	}
}

// argoObject builds an Argo CD object (the Application CRD has no status
// subresource, so its status is written with the object).
func argoObject(kind, namespace, name string, spec, status map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": kind,
		"metadata": map[string]any{"namespace": namespace, "name": name},
		"spec":     spec,
	}}
	if status != nil {
		u.Object["status"] = status
	}
	return u
}

// scaleDeployment sets a Deployment's spec.replicas, as `kubectl scale`, a
// GitOps sync or the Rollouts controller (workloadRef.scaleDown) would,
// checks that this bumped its generation, and waits until it is available.
func scaleDeployment(f *fixture.F, name string, replicas int32) {
	f.T.Helper()
	var d appsv1.Deployment
	if err := f.Env.Client.Get(f.Ctx, client.ObjectKey{Namespace: f.NS, Name: name}, &d); err != nil {
		f.T.Fatal(err)
	}
	before := d.Generation
	patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)
	if err := f.Env.Client.Patch(f.Ctx, &d, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		f.T.Fatalf("scale Deployment %s to %d: %v", name, replicas, err)
	}
	if d.Generation <= before {
		f.T.Fatalf("scaling Deployment %s to %d left its generation at %d", name, replicas, d.Generation)
	}
	f.WaitAvailable(name)
}

// TestWorkloadRefDeploymentScaledDuringARestartIsRestartedOnce: a Deployment
// run by a Rollout through workloadRef is restarted through that Rollout.
// While the restart is in flight the Deployment is scaled up (a GitOps sync
// of its manifest's replicas, a person) and back to zero (the Rollouts
// controller's workloadRef.scaleDown), each bumping its generation; the
// request keeps following the Rollout it restarted and finishes once the
// Rollout reports the restart done, with one restart: neither the
// Deployment's pod template nor the Rollout is stamped again. The second
// case restarts the manager while the Deployment runs pods of its own, so
// nothing this process remembers can stand in for what the request says.
func TestWorkloadRefDeploymentScaledDuringARestartIsRestartedOnce(t *testing.T) {
	for _, tc := range []struct {
		name           string
		restartManager bool
	}{{"one manager", false}, {"manager restarted while scaled up", true}} {
		t.Run(tc.name, func(t *testing.T) {
			f := workloadRefFixture(t)
			stampBefore, rssBefore := f.RestartStamp("web"), f.ReplicaSets("web")

			f.SetSecret("db", map[string]string{"password": "bravo"})
			restartAt := waitRestartAt(f, "web-rollout", time.Time{})
			observe(f, "web-rollout")
			waitCondition(f, "deployment-web", kickv1alpha1.ConditionRolloutComplete, metav1.ConditionFalse, rollout.RestartPending)

			// inFlight checks that the request still follows its one
			// restart and that nothing was stamped again.
			inFlight := func(when string) {
				t.Helper()
				kr, err := f.Request("deployment-web")
				if err != nil {
					t.Fatal(err)
				}
				if kr.Status.Phase != kickv1alpha1.PhaseExecuting || kr.Status.RestartCount != 1 {
					t.Fatalf("%s: phase %s, restartCount %d; want Executing with one restart", when, kr.Status.Phase, kr.Status.RestartCount)
				}
				if m := kr.Status.CurrentRollout; m == nil || m.RestartedAt != restartAt.Format(time.RFC3339) {
					t.Fatalf("%s: rollout marker %+v, want the restart at %s", when, m, restartAt.Format(time.RFC3339))
				}
				assertRestartedOnce(f, when, restartAt, stampBefore, rssBefore)
			}
			inFlight("before the scale")

			// Scaled up while the restart is in flight: the Deployment now
			// runs pods of its own.
			scaleDeployment(f, "web", 2)
			if tc.restartManager {
				f.Mgr.Stop()
				f.Mgr = f.Env.StartManager(t, fixture.ManagerNamespace, "--enable-argo-rollouts")
			}
			f.Barrier()
			inFlight("scaled up during the restart")

			// The Rollouts controller scales it back to zero.
			scaleDeployment(f, "web", 0)
			f.Barrier()
			inFlight("scaled back to zero during the restart")

			settle(f, "web-rollout")
			kr := f.WaitPhase("deployment-web", kickv1alpha1.PhaseSucceeded, 60*time.Second)
			if kr.Status.RestartCount != 1 {
				t.Fatalf("restartCount = %d, want 1", kr.Status.RestartCount)
			}
			f.Barrier()
			if kr, err := f.Request("deployment-web"); err != nil || kr.Status.Phase != kickv1alpha1.PhaseSucceeded || kr.Status.RestartCount != 1 {
				t.Fatalf("after settling: %v, phase %s, restartCount %d; want Succeeded with one restart", err, kr.Status.Phase, kr.Status.RestartCount)
			}
			assertRestartedOnce(f, "after settling", restartAt, stampBefore, rssBefore)
		})
	}
}

// assertRestartedOnce checks that the Rollout still carries the one
// restartAt and that the Deployment's template was never stamped (which
// would also make the Rollout roll a new revision through its steps).
func assertRestartedOnce(f *fixture.F, when string, restartAt time.Time, stampBefore string, rssBefore []string) {
	f.T.Helper()
	if ro := getRollout(f, "web-rollout"); ro.Spec.RestartAt == nil || !ro.Spec.RestartAt.Time.Equal(restartAt) {
		f.T.Fatalf("%s: the Rollout was restarted again: restartAt %v, was %s", when, ro.Spec.RestartAt, restartAt)
	}
	if got := f.RestartStamp("web"); got != stampBefore {
		f.T.Fatalf("%s: the Deployment's pod template was stamped (%q): a second restart", when, got)
	}
	if got := f.ReplicaSets("web"); !equality.Semantic.DeepEqual(got, rssBefore) {
		f.T.Fatalf("%s: the Deployment rolled a new ReplicaSet: %v, was %v", when, got, rssBefore)
	}
}
