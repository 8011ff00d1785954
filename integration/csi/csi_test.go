// Package csi proves the Secrets Store CSI integration on the local control
// plane with the upstream CRDs and the real kick-manager. No CSI driver runs
// here (kwok runs the pods): the tests write each pod's
// SecretProviderClassPodStatus as the driver would, owned by the pod. The
// first versions the pods agree on are a baseline that restarts nothing; a
// rotation every pod reports restarts the workload once; a write of the same
// versions restarts nothing; a staged rotation waits until the pods agree.
package csi

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/cmd/kick-devcluster/controlplane"
	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/integration/fixture"
	"github.com/kick-operator/kick/restart/csi"
)

func TestMain(m *testing.M) {
	cluster.Main(m, cluster.TestOptions{
		KickCRDs:     true,
		UpstreamCRDs: true,
		AddToScheme:  []func(*runtime.Scheme) error{kickv1alpha1.AddToScheme, csi.AddToScheme},
	})
}

// secretProviderClass creates a SecretProviderClass.
func secretProviderClass(f *fixture.F, name string) {
	f.T.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "secrets-store.csi.x-k8s.io/v1", "kind": "SecretProviderClass",
		"metadata": map[string]any{"name": name, "namespace": f.NS},
		"spec":     map[string]any{"provider": "vault", "parameters": map[string]any{"objects": "- objectName: db-password"}},
	}}
	if err := f.Env.Client.Create(f.Ctx, u); err != nil {
		f.T.Fatal(err)
	}
}

// mounting is a pod spec that mounts a class through the Secrets Store CSI
// driver.
func mounting(class string) corev1.PodSpec {
	return corev1.PodSpec{
		Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10",
			VolumeMounts: []corev1.VolumeMount{{Name: "secrets", MountPath: "/mnt/secrets", ReadOnly: true}}}},
		Volumes: []corev1.Volume{{Name: "secrets", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{
			Driver: "secrets-store.csi.k8s.io", ReadOnly: ptr.To(true),
			VolumeAttributes: map[string]string{"secretProviderClass": class},
		}}}},
	}
}

// settledPods waits until the Deployment's rollout is over (only pods of
// its current ReplicaSet left, n of them) and returns their names.
func settledPods(f *fixture.F, app string, n int) []corev1.Pod {
	f.T.Helper()
	var pods []corev1.Pod
	cluster.Eventually(f.T, 90*time.Second, fmt.Sprintf("%d settled pods of %s", n, app), func() (bool, error) {
		var d appsv1.Deployment
		if err := f.Env.Client.Get(f.Ctx, client.ObjectKey{Namespace: f.NS, Name: app}, &d); err != nil {
			return false, err
		}
		if !controlplane.DeploymentAvailable(&d) || d.Status.ObservedGeneration != d.Generation || d.Status.UpdatedReplicas != int32(n) {
			return false, fmt.Errorf("deployment status %+v", d.Status)
		}
		var list corev1.PodList
		if err := f.Env.Client.List(f.Ctx, &list, client.InNamespace(f.NS), client.MatchingLabels{"app": app}); err != nil {
			return false, err
		}
		pods = list.Items
		names := make([]string, len(pods))
		for i, p := range pods {
			names[i] = p.Name
			if p.DeletionTimestamp != nil {
				names[i] += "(terminating)"
			}
		}
		return len(pods) == n && !strings.Contains(strings.Join(names, ","), "terminating"), fmt.Errorf("pods %v", names)
	})
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	return pods
}

// report writes a pod's SecretProviderClassPodStatus as the driver does:
// named after pod, namespace and class, owned by the pod. touch changes an
// annotation, so that rewriting the same versions is still a write.
func report(f *fixture.F, pod *corev1.Pod, class, touch string, versions ...string) {
	f.T.Helper()
	s := &csi.SecretProviderClassPodStatus{ObjectMeta: metav1.ObjectMeta{Namespace: f.NS, Name: pod.Name + "-" + f.NS + "-" + class}}
	err := f.Env.Client.Get(f.Ctx, client.ObjectKeyFromObject(s), s)
	if err != nil && !apierrors.IsNotFound(err) {
		f.T.Fatal(err)
	}
	exists := err == nil
	s.Annotations = map[string]string{"test.kick.corewire.io/touch": touch}
	s.Labels = map[string]string{"secrets-store.csi.k8s.io/node-name": pod.Spec.NodeName}
	s.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID}}
	s.Status = csi.PodStatus{PodName: pod.Name, SecretProviderClassName: class, Mounted: true}
	for i, v := range versions {
		s.Status.Objects = append(s.Status.Objects, csi.Object{ID: fmt.Sprintf("secret/object-%d", i), Version: v})
	}
	if exists {
		err = f.Env.Client.Update(f.Ctx, s)
	} else {
		err = f.Env.Client.Create(f.Ctx, s)
	}
	if err != nil {
		f.T.Fatalf("write pod status of %s: %v", pod.Name, err)
	}
}

func waitRecord(f *fixture.F, class, workload string) *kickv1alpha1.SourceObservation {
	f.T.Helper()
	var rec kickv1alpha1.SourceObservation
	name := kickv1alpha1.ConsumerObservationName("SecretProviderClass", class, kickv1alpha1.TargetDeployment, workload)
	cluster.Eventually(f.T, 30*time.Second, "the observation record of "+class+" for "+workload, func() (bool, error) {
		err := f.Env.Client.Get(f.Ctx, client.ObjectKey{Namespace: f.NS, Name: name}, &rec)
		return err == nil, err
	})
	return &rec
}

func restarts(f *fixture.F, request string) int32 {
	f.T.Helper()
	kr, err := f.Request(request)
	if apierrors.IsNotFound(err) {
		return 0
	}
	if err != nil {
		f.T.Fatal(err)
	}
	return kr.Status.RestartCount
}

// waitRestarts waits until the request succeeded with n restarts.
func waitRestarts(f *fixture.F, request string, n int32) {
	f.T.Helper()
	cluster.Eventually(f.T, 90*time.Second, fmt.Sprintf("%s to succeed with %d restarts", request, n), func() (bool, error) {
		kr, err := f.Request(request)
		if err != nil {
			return false, err
		}
		return kr.Status.Phase == kickv1alpha1.PhaseSucceeded && kr.Status.RestartCount == n,
			fmt.Errorf("phase %s, restartCount %d", kr.Status.Phase, kr.Status.RestartCount)
	})
}

// waitLogged waits until the manager logged line for the workload more
// often than before (a reached waiting state of the observer).
func waitLogged(f *fixture.F, line, workload string, before int) {
	f.T.Helper()
	cluster.Eventually(f.T, 30*time.Second, "the manager to log "+line, func() (bool, error) {
		n := logged(f, line, workload)
		return n > before, fmt.Errorf("logged %d times", n)
	})
}

func logged(f *fixture.F, line, workload string) int {
	n := 0
	for _, l := range strings.Split(f.Mgr.Log(), "\n") {
		if strings.Contains(l, line) && strings.Contains(l, workload) {
			n++
		}
	}
	return n
}

const disagree = "pods report different mounted versions"

func TestRotationRestartsOnceWhenEveryPodAgrees(t *testing.T) {
	f := fixture.Setup(t, "--enable-csi-integration")
	f.Policy("all", "discovery: {workloadSelector: {}}\nrestart: {minInterval: 0s}")
	secretProviderClass(f, "vault")
	f.Deployment("web", 2, mounting("vault"))
	pods := settledPods(f, "web", 2)
	workload := "Deployment " + f.NS + "/web"

	// The first versions the pods agree on are a baseline: no restart.
	for _, p := range pods {
		report(f, &p, "vault", "1", "v1", "w1")
	}
	rec := waitRecord(f, "vault", "web")
	if rec.Spec.Class != kickv1alpha1.ObservationBaseline || !rec.Spec.LastRelevantChangeTime.Equal(csi.Epoch) {
		t.Fatalf("first record: class %s, change %v; want an epoch baseline", rec.Spec.Class, rec.Spec.LastRelevantChangeTime)
	}
	if strings.Contains(rec.Spec.RelevantFingerprint, "v1") || len(rec.Spec.RelevantFingerprint) != 64 {
		t.Fatalf("record fingerprint %q is not a keyed hash", rec.Spec.RelevantFingerprint)
	}
	if len(f.Requests()) != 0 {
		t.Fatalf("the baseline created a KickRequest: %+v", f.Requests())
	}

	// A rotation every pod reports: one restart.
	rotated := time.Now()
	for _, p := range pods {
		report(f, &p, "vault", "2", "v2", "w1")
	}
	waitRestarts(f, "deployment-web", 1)
	kr, err := f.Request("deployment-web")
	if err != nil {
		t.Fatal(err)
	}
	if c := kr.Status.LatestObservedDependencyChange; c == nil || c.Time.Before(rotated.Add(-time.Second)) {
		t.Fatalf("latestObservedDependencyChange %v is older than the rotation (%s)", c, rotated)
	}
	f.WaitReplicaSets("web", 2)
	if rec := waitRecord(f, "vault", "web"); rec.Spec.Class != kickv1alpha1.ObservationRelevant {
		t.Fatalf("record after the rotation: class %s", rec.Spec.Class)
	}

	// The restarted pods mount the current versions.
	pods = settledPods(f, "web", 2)
	for _, p := range pods {
		report(f, &p, "vault", "3", "v2", "w1")
	}
	// Rewriting the same versions restarts nothing. The staged rotation
	// below goes through the same queue key, so once the observer logged
	// that it waits for it, the identical write has been handled too.
	for _, p := range pods {
		report(f, &p, "vault", "4", "v2", "w1")
	}

	// A staged rotation: one pod reports new versions, the other the old
	// ones. KICK waits.
	before := logged(f, disagree, workload)
	report(f, &pods[0], "vault", "5", "v3", "w1")
	waitLogged(f, disagree, workload, before)
	if n := restarts(f, "deployment-web"); n != 1 {
		t.Fatalf("restartCount %d during a staged rotation (or after an identical write), want 1", n)
	}
	if rss := f.ReplicaSets("web"); len(rss) != 2 {
		t.Fatalf("ReplicaSets %v: restarted during a staged rotation", rss)
	}

	// Once the other pod agrees: exactly one more restart.
	report(f, &pods[1], "vault", "6", "v3", "w1")
	waitRestarts(f, "deployment-web", 2)
	f.WaitReplicaSets("web", 3)
	for _, p := range settledPods(f, "web", 2) {
		report(f, &p, "vault", "7", "v3", "w1")
	}
	f.Barrier()
	if n := restarts(f, "deployment-web"); n != 2 {
		t.Fatalf("restartCount %d after the staged rotation settled, want 2", n)
	}
	if log := f.Mgr.Log(); strings.Contains(log, "w1") || strings.Contains(log, "object-0") || strings.Contains(log, rec.Spec.RelevantFingerprint) {
		t.Fatal("the manager log holds mounted object ids, versions or fingerprints")
	}
}

func TestUnmanagedWorkloadGetsNoRecord(t *testing.T) {
	f := fixture.Setup(t, "--enable-csi-integration")
	f.Policy("not-other", `discovery: {workloadSelector: {matchExpressions: [{key: app, operator: NotIn, values: [other]}]}}`)
	secretProviderClass(f, "vault")
	f.Deployment("other", 1, mounting("vault"))
	pods := settledPods(f, "other", 1)
	report(f, &pods[0], "vault", "1", "v1")
	report(f, &pods[0], "vault", "2", "v2")
	f.Barrier()
	var list kickv1alpha1.SourceObservationList
	if err := f.Env.Client.List(f.Ctx, &list, client.InNamespace(f.NS)); err != nil {
		t.Fatal(err)
	}
	for _, rec := range list.Items {
		if rec.Spec.Source.Kind == kickv1alpha1.SourceSecretProviderClass {
			t.Fatalf("an unmanaged workload got a record: %s", rec.Name)
		}
	}
	if len(f.Requests()) != 1 { // the barrier's own
		t.Fatalf("requests: %d, want only the barrier's", len(f.Requests()))
	}
}
