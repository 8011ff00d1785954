package fanout

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/integration/fixture"
)

// A StatefulSet is the canary wave; a Deployment the main wave. Midway
// through the canary's bake its only pod is deleted: the StatefulSet is
// unavailable until the pod is back. It records no moment of becoming
// available again (unlike a Deployment's Available condition), so the
// manager remembers it from the StatefulSet's status events, and the bake
// starts again from there: the main wave begins no earlier than a whole
// bake after the pod was deleted. Counting from the canary's completion
// instead, it would begin about midBake too early.
func TestWaveBakeStartsAgainWhenAStatefulSetDropsOut(t *testing.T) {
	f := fixture.Setup(t)
	run := f.NS
	const bake, midBake = 30 * time.Second, 15 * time.Second
	f.Policy("waved", `
discovery: {workloadSelector: {}}
restart:
  minInterval: 0s
  waves:
  - {name: canary, selector: {matchLabels: {tier: canary}}, bake: 30s}
  - {name: main, selector: {matchLabels: {tier: main}}}`)
	names := consumers(f, run, "shared", 1, func(_ int, d *appsv1.Deployment) { d.Labels["tier"] = "main" })
	watch := followRollouts(t, f.Env, fanoutLabel, run)

	labels := map[string]string{"app": "store", "tier": "canary"}
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "store", Labels: labels},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](1), ServiceName: "store",
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "store"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: fixture.PodSpec("shared")},
		},
	}
	f.Create(sts)
	available := func() (bool, error) {
		if err := f.Env.Client.Get(f.Ctx, client.ObjectKeyFromObject(sts), sts); err != nil {
			return false, err
		}
		return sts.Status.ObservedGeneration >= sts.Generation && sts.Status.AvailableReplicas == 1, nil
	}
	cluster.Eventually(t, time.Minute, "the StatefulSet to be available", available)

	f.SetSecret("shared", map[string]string{"v": "2"})
	canary := f.WaitPhase("statefulset-store", kickv1alpha1.PhaseSucceeded, 2*time.Minute)
	if canary.Status.CompletionTime == nil {
		t.Fatal("the canary's request recorded no completion time")
	}
	// The scenario, not a wait for a condition: the drop lands in the
	// middle of the bake, so a bake counted from the completion ends
	// visibly before one counted from the drop.
	time.Sleep(time.Until(canary.Status.CompletionTime.Add(midBake)))
	pod := &corev1.Pod{}
	if err := f.Env.Client.Get(f.Ctx, client.ObjectKey{Namespace: f.NS, Name: "store-0"}, pod); err != nil {
		t.Fatalf("read the canary's pod: %v", err)
	}
	gone := pod.UID
	dropped := time.Now()
	if err := f.Env.Client.Delete(f.Ctx, pod); err != nil {
		t.Fatalf("delete the canary's pod: %v", err)
	}
	cluster.Eventually(t, time.Minute, "a new canary pod, and the StatefulSet available again", func() (bool, error) {
		if err := f.Env.Client.Get(f.Ctx, client.ObjectKey{Namespace: f.NS, Name: "store-0"}, pod); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		if pod.UID == gone {
			return false, nil
		}
		return available()
	})

	f.WaitPhase("deployment-app-00", kickv1alpha1.PhaseSucceeded, 2*time.Minute)
	watch.WaitSettled(t, time.Minute, 1, names...)
	const slack = 2 * time.Second
	began, _ := watch.Times(names[0])
	if began.Before(dropped.Add(bake - slack)) {
		t.Errorf("the main wave began %s after the canary's pod was deleted (%s after its completion); the bake is %s and must count from its return",
			began.Sub(dropped).Round(time.Millisecond), dropped.Sub(canary.Status.CompletionTime.Time).Round(time.Millisecond), bake)
	}
	kr, err := f.Request("statefulset-store")
	if err != nil {
		t.Fatal(err)
	}
	if n := kr.Status.RestartCount; n != 1 {
		t.Errorf("the StatefulSet restarted %d times, want 1", n)
	}
	if n := watch.Restarts()[names[0]]; n != 1 {
		t.Errorf("%s restarted %d times, want 1", names[0], n)
	}
}
