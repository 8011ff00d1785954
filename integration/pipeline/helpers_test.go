package pipeline

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/restart/freshness"
)

func TestMain(m *testing.M) {
	cluster.Main(m, cluster.TestOptions{
		KickCRDs:    true,
		AddToScheme: []func(*runtime.Scheme) error{kickv1alpha1.AddToScheme},
	})
}

const managerNamespace = "kick-system"

// fx is one test's fixture: a namespace on the shared control plane and a
// kick-manager process.
type fx struct {
	t   *testing.T
	env *cluster.Env
	ns  string
	ctx context.Context
	mgr *cluster.Manager
}

func setup(t *testing.T, managerArgs ...string) *fx {
	env := cluster.Get(t)
	f := &fx{t: t, env: env, ns: env.Namespace(t), ctx: context.Background()}
	f.mgr = env.StartManager(t, managerNamespace, managerArgs...)
	return f
}

func (f *fx) create(obj client.Object) {
	f.t.Helper()
	obj.SetNamespace(f.ns)
	if err := f.env.Client.Create(f.ctx, obj); err != nil {
		f.t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
	}
}

func (f *fx) secret(name string, data map[string]string, labels map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, StringData: data}
	f.create(s)
	return s
}

func (f *fx) setSecret(name string, data map[string]string) {
	f.t.Helper()
	var s corev1.Secret
	if err := f.env.Client.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: name}, &s); err != nil {
		f.t.Fatal(err)
	}
	s.Data = nil
	s.StringData = data
	if err := f.env.Client.Update(f.ctx, &s); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fx) labelSecret(name, key, value string) {
	f.t.Helper()
	var s corev1.Secret
	if err := f.env.Client.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: name}, &s); err != nil {
		f.t.Fatal(err)
	}
	if s.Labels == nil {
		s.Labels = map[string]string{}
	}
	s.Labels[key] = value
	if err := f.env.Client.Update(f.ctx, &s); err != nil {
		f.t.Fatal(err)
	}
}

// podSpec consumes the named Secrets through envFrom.
func podSpec(secrets ...string) corev1.PodSpec {
	c := corev1.Container{Name: "app", Image: "registry.k8s.io/pause:3.10"}
	for _, s := range secrets {
		c.EnvFrom = append(c.EnvFrom, corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: s}}})
	}
	return corev1.PodSpec{Containers: []corev1.Container{c}}
}

func (f *fx) deployment(name string, replicas int32, spec corev1.PodSpec) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec},
		},
	}
	f.create(d)
	return d
}

func (f *fx) waitAvailable(name string) {
	f.t.Helper()
	cluster.Eventually(f.t, 60*time.Second, "Deployment "+name+" to become available", func() (bool, error) {
		var d appsv1.Deployment
		if err := f.env.Client.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: name}, &d); err != nil {
			return false, err
		}
		return cluster.DeploymentAvailable(&d), fmt.Errorf("status %+v", d.Status)
	})
}

func (f *fx) policy(name, body string) {
	f.t.Helper()
	p := &kickv1alpha1.KickPolicy{}
	if err := yaml.UnmarshalStrict([]byte(body), &p.Spec); err != nil {
		f.t.Fatalf("bad policy YAML: %v", err)
	}
	p.Name = name
	f.create(p)
}

func (f *fx) patchPolicy(name, mergePatch string) {
	f.t.Helper()
	p := &kickv1alpha1.KickPolicy{}
	p.Namespace, p.Name = f.ns, name
	if err := f.env.Client.Patch(f.ctx, p, client.RawPatch(types.MergePatchType, []byte(mergePatch))); err != nil {
		f.t.Fatal(err)
	}
}

// replicaSets lists the names of a Deployment's ReplicaSets.
func (f *fx) replicaSets(deployment string) []string {
	f.t.Helper()
	var list appsv1.ReplicaSetList
	if err := f.env.Client.List(f.ctx, &list, client.InNamespace(f.ns), client.MatchingLabels{"app": deployment}); err != nil {
		f.t.Fatal(err)
	}
	var out []string
	for _, rs := range list.Items {
		out = append(out, rs.Name)
	}
	sort.Strings(out)
	return out
}

func (f *fx) restartStamp(deployment string) string {
	f.t.Helper()
	var d appsv1.Deployment
	if err := f.env.Client.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: deployment}, &d); err != nil {
		f.t.Fatal(err)
	}
	return d.Spec.Template.Annotations[freshness.RestartedAtAnnotation]
}

func (f *fx) request(name string) (*kickv1alpha1.KickRequest, error) {
	var kr kickv1alpha1.KickRequest
	err := f.env.Client.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: name}, &kr)
	return &kr, err
}

func (f *fx) requests() []kickv1alpha1.KickRequest {
	f.t.Helper()
	var list kickv1alpha1.KickRequestList
	if err := f.env.Client.List(f.ctx, &list, client.InNamespace(f.ns)); err != nil {
		f.t.Fatal(err)
	}
	return list.Items
}

// waitPhase waits until the request reaches phase and returns it.
func (f *fx) waitPhase(name string, phase kickv1alpha1.KickRequestPhase, timeout time.Duration) *kickv1alpha1.KickRequest {
	f.t.Helper()
	var kr *kickv1alpha1.KickRequest
	cluster.Eventually(f.t, timeout, fmt.Sprintf("KickRequest %s to reach %s", name, phase), func() (bool, error) {
		var err error
		if kr, err = f.request(name); err != nil {
			return false, err
		}
		return kr.Status.Phase == phase, fmt.Errorf("phase %q, gate %+v", kr.Status.Phase, kr.Status.Gate)
	})
	return kr
}

// waitReplicaSets waits until the Deployment has n ReplicaSets.
func (f *fx) waitReplicaSets(deployment string, n int) {
	f.t.Helper()
	cluster.Eventually(f.t, 60*time.Second, fmt.Sprintf("%d ReplicaSets for %s", n, deployment), func() (bool, error) {
		got := f.replicaSets(deployment)
		return len(got) == n, fmt.Errorf("ReplicaSets: %s", strings.Join(got, ", "))
	})
}

// barrier makes a relevant change to a canary workload and waits until it
// restarted: the manager has then handled everything queued before it, so a
// test can assert that an earlier change did nothing.
func (f *fx) barrier() {
	f.t.Helper()
	name := fmt.Sprintf("canary-%d", time.Now().UnixNano()%100000)
	f.secret(name, map[string]string{"v": "1"}, nil)
	f.deployment(name, 1, podSpec(name))
	f.waitAvailable(name)
	f.waitObservation(name)
	f.setSecret(name, map[string]string{"v": "2"})
	f.waitPhase("deployment-"+name, kickv1alpha1.PhaseSucceeded, 60*time.Second)
}

// webWithSecret is the usual fixture: Secret db consumed by a one-replica
// Deployment web, available and baselined by KICK.
func (f *fx) webWithSecret() {
	f.t.Helper()
	f.secret("db", map[string]string{"password": "alpha"}, nil)
	f.deployment("web", 1, podSpec("db"))
	f.waitAvailable("web")
	f.waitObservation("db")
}

// waitObservation waits until KICK recorded a baseline for a Secret.
func (f *fx) waitObservation(secret string) *kickv1alpha1.SourceObservation {
	f.t.Helper()
	var rec kickv1alpha1.SourceObservation
	cluster.Eventually(f.t, 30*time.Second, "an observation record for Secret "+secret, func() (bool, error) {
		err := f.env.Client.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: kickv1alpha1.ObservationName("Secret", secret)}, &rec)
		return err == nil, err
	})
	return &rec
}
