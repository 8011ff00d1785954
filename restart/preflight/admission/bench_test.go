package admission

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/gitops"
	"github.com/kick-operator/kick/restart/discovery"
	"github.com/kick-operator/kick/restart/observe"
	"github.com/kick-operator/kick/restart/preflight"
	"github.com/kick-operator/kick/restart/workload"
)

// fixture: 10,000 Secrets with records and 1,000 Deployments (each with its
// ReplicaSet) in one namespace; Deployment i consumes Secrets 10i..10i+9
// and Secret "shared", which all of them consume.
func benchChecker(b testing.TB) *Checker {
	b.Helper()
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = kickv1alpha1.AddToScheme(s)
	now := time.Now()
	changed := kickv1alpha1.NewNanoTime(now.Add(-time.Hour))
	var objs []client.Object
	objs = append(objs, &kickv1alpha1.KickPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "default"},
		Spec: kickv1alpha1.KickPolicySpec{Discovery: &kickv1alpha1.DiscoverySpec{WorkloadSelector: &metav1.LabelSelector{}}}})
	record := func(name string) {
		objs = append(objs, &kickv1alpha1.SourceObservation{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: kickv1alpha1.ObservationName("Secret", name),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Secret", Name: name, UID: types.UID("uid-" + name)}}},
			Spec: kickv1alpha1.SourceObservationSpec{Source: kickv1alpha1.ObservedSource{APIVersion: "v1", Kind: "Secret", Name: name},
				Class: kickv1alpha1.ObservationRelevant, LastRelevantChangeTime: &changed, RelevantFingerprint: "00", FingerprintKeyID: "k1"}})
	}
	record("shared")
	for i := range 10000 {
		record(fmt.Sprintf("s-%05d", i))
	}
	for i := range 1000 {
		var env []corev1.EnvFromSource
		for _, n := range append([]string{"shared"}, secretNames(i)...) {
			env = append(env, corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: n}}})
		}
		name := fmt.Sprintf("web-%04d", i)
		labels := map[string]string{"app": name}
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, UID: types.UID("d-" + name), Labels: labels, Generation: 1},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "pause", EnvFrom: env}}}}},
			Status: appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 1, UpdatedReplicas: 1, AvailableReplicas: 1, ReadyReplicas: 1}}
		rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name + "-1", Labels: labels,
			CreationTimestamp: metav1.NewTime(now.Add(-2 * time.Hour)),
			Annotations:       map[string]string{"deployment.kubernetes.io/revision": "1"},
			OwnerReferences:   []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: name, UID: d.UID, Controller: ptr.To(true)}}},
			Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](1), Template: d.Spec.Template}}
		objs = append(objs, d, rs)
	}
	c := newMemReader(s)
	for _, o := range []client.Object{&appsv1.Deployment{}, &appsv1.StatefulSet{}, &appsv1.DaemonSet{}} {
		c.addIndex(o, discovery.SourceIndex, discovery.IndexFunc)
	}
	c.addIndex(&appsv1.ReplicaSet{}, workload.OwnerIndex, func(o client.Object) []string {
		for _, r := range o.GetOwnerReferences() {
			if r.Controller != nil && *r.Controller {
				return []string{string(r.UID)}
			}
		}
		return nil
	})
	c.add(objs...)
	return &Checker{Client: c, GitOps: gitops.NewRegistry(), Budget: time.Second}
}

// withKeys gives the benchmark's checker a fingerprint key.
var withKeys bool

// updateOf is the review of an update of s whose data was old before.
func updateOf(t testing.TB, s *corev1.Secret, old map[string][]byte) Write {
	t.Helper()
	before := s.DeepCopy()
	before.Data = old
	return Write{Operation: preflight.Update, Kind: "Secret", Namespace: s.Namespace, Name: s.Name,
		Object: mustJSON(t, s), Old: mustJSON(t, before)}
}

func mustJSON(t testing.TB, o any) []byte {
	t.Helper()
	raw, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func secretNames(i int) []string {
	out := make([]string, 10)
	for j := range out {
		out[j] = fmt.Sprintf("s-%05d", 10*i+j)
	}
	return out
}

func benchWrite(b *testing.B, name string, denyMode bool, want func(preflight.Answer) bool) {
	c := benchChecker(b)
	c.DenyInDenyWindows = denyMode
	if withKeys {
		c.Keys = observe.NewFingerprinter(make([]byte, observe.KeySize))
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, UID: types.UID("uid-" + name), ResourceVersion: "9"},
		Data: map[string][]byte{"k": []byte("v")}}
	ctx := context.Background()
	w := updateOf(b, s, map[string][]byte{"k": []byte("old")})
	if a := c.Check(ctx, w); !want(a) {
		b.Fatalf("answer %q, audit %.300q", a.Warnings, a.Audit)
	}
	durations := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		c.Check(ctx, w)
		durations = append(durations, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(durations)
	q := func(p float64) float64 {
		return float64(durations[int(p*float64(len(durations)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(q(0.5), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
}

// summary accepts an answer of MaxWarnings warnings ending with want, in
// which a restart is the decision.
func summary(want string) func(preflight.Answer) bool {
	return func(a preflight.Answer) bool {
		return len(a.Warnings) == preflight.MaxWarnings && a.Warnings[preflight.MaxWarnings-1] == want &&
			a.Audit[preflight.AuditDecision] == "Restart"
	}
}

// BenchmarkCheckOneConsumer: a Secret one Deployment of 1,000 consumes,
// among 10,000 Secrets.
func BenchmarkCheckOneConsumer(b *testing.B) {
	benchWrite(b, "s-04711", false, func(a preflight.Answer) bool {
		return len(a.Warnings) == 1 && a.Warnings[0] == "kick: restarts deployment/web-0471 now (policy default)"
	})
}

// BenchmarkCheckSharedSecret: a Secret all 1,000 Deployments consume; the
// first MaxAssessed are assessed, the rest named.
func BenchmarkCheckSharedSecret(b *testing.B) {
	benchWrite(b, "shared", false, summary("kick: … and 197 more (197 of them restart) and 800 not assessed (over 200 consumers); see the audit annotation"))
}

// BenchmarkCheckSharedSecretDenyMode: the same write in deny mode, which
// assesses all 1,000 consumers: the cost of an assessment per consumer.
func BenchmarkCheckSharedSecretDenyMode(b *testing.B) {
	benchWrite(b, "shared", true, summary("kick: … and 997 more (997 of them restart; see the audit annotation)"))
}
