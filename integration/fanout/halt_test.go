package fanout

import (
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/integration/fixture"
)

// fragileConsumers creates n one-replica Deployments reading Secret secret
// that roll out by surging one new pod first (maxUnavailable 0) and give up
// after five seconds without progress, then caps the namespace's pods at
// what runs now: every restart's surge pod is refused, so its rollout
// really fails (ProgressDeadlineExceeded), as a bad configuration would.
func fragileConsumers(f *fixture.F, run, secret string, n int) []string {
	f.T.Helper()
	names := consumers(f, run, secret, n, func(_ int, d *appsv1.Deployment) {
		d.Spec.ProgressDeadlineSeconds = ptr.To[int32](5)
		d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
			MaxSurge: ptr.To(intstr.FromInt32(1)), MaxUnavailable: ptr.To(intstr.FromInt32(0)),
		}}
	})
	f.Create(&corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "pods"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse(fmt.Sprint(n))}},
	})
	cluster.Eventually(f.T, time.Minute, "the pod quota to be counted", func() (bool, error) {
		var q corev1.ResourceQuota
		if err := f.Env.Client.Get(f.Ctx, client.ObjectKey{Namespace: f.NS, Name: "pods"}, &q); err != nil {
			return false, err
		}
		used, ok := q.Status.Used[corev1.ResourcePods]
		return ok && used.Value() == int64(n), fmt.Errorf("quota status %+v", q.Status)
	})
	return names
}

func removeQuota(f *fixture.F) {
	f.T.Helper()
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: f.NS, Name: "pods"}}
	if err := f.Env.Client.Delete(f.Ctx, q); err != nil {
		f.T.Fatal(err)
	}
}

// waitHalted waits until the fan-out's first restart failed and each of
// the other requests is held, naming it. It returns the failed request.
func waitHalted(t *testing.T, f *fixture.F, others int) *kickv1alpha1.KickRequest {
	t.Helper()
	var failed *kickv1alpha1.KickRequest
	cluster.Eventually(t, 2*time.Minute, "one failed restart halting the others", func() (bool, error) {
		failed = nil
		held := 0
		var states []string
		for _, kr := range f.Requests() {
			gate := kickv1alpha1.GateReason("")
			if kr.Status.Gate != nil {
				gate = kr.Status.Gate.Reason
			}
			states = append(states, fmt.Sprintf("%s=%s/%s/%s %s", kr.Name, kr.Status.Phase, gate,
				conditionReason(&kr, kickv1alpha1.ConditionCompleted), conditionMessage(&kr, kickv1alpha1.ConditionCompleted)))
			switch {
			case kr.Status.Phase == kickv1alpha1.PhaseFailed:
				failed = kr.DeepCopy()
			case kr.Status.Phase == kickv1alpha1.PhaseWaitingForGate && kr.Status.Gate.Reason == kickv1alpha1.GateRolloutHalted:
				held++
			}
		}
		ok := failed != nil && held == others
		return ok, fmt.Errorf("requests: %s", strings.Join(states, ", "))
	})
	if c := conditionReason(failed, kickv1alpha1.ConditionCompleted); c != kickv1alpha1.ReasonProgressDeadlineExceeded {
		t.Errorf("the failed request ended with %q, want %s", c, kickv1alpha1.ReasonProgressDeadlineExceeded)
	}
	if src := failed.Status.RestartedFor; src == nil || src.String() != "Secret/shared" {
		t.Errorf("the failed request says it restarted for %v, want Secret/shared", src)
	}
	// The held requests name the failed workload in their message and,
	// for tools, in status.gate.cause.
	cause := kickv1alpha1.GateCause{APIVersion: "apps/v1", Kind: "Deployment", Namespace: f.NS, Name: failed.Spec.TargetRef.Name}
	for _, kr := range f.Requests() {
		if kr.Status.Phase != kickv1alpha1.PhaseWaitingForGate {
			continue
		}
		if !strings.Contains(kr.Status.Gate.Message, "halted after Deployment "+f.NS+"/"+failed.Spec.TargetRef.Name+" failed its rollout") {
			t.Errorf("held request %s does not name the failed workload: %q", kr.Name, kr.Status.Gate.Message)
		}
		if got := kr.Status.Gate.Cause; got == nil || *got != cause {
			t.Errorf("held request %s has gate cause %v, want %+v", kr.Name, got, cause)
		}
	}
	want := fmt.Sprintf("Secret/shared: halted after Deployment %s/%s failed its rollout; %d restarts held", f.NS, failed.Spec.TargetRef.Name, others)
	cluster.Eventually(t, 30*time.Second, "the halt's Event", func() (bool, error) {
		for _, ev := range events(t, f, failed.Name) {
			if ev.Reason == "RolloutHalted" && strings.HasPrefix(ev.Message, want) {
				return true, nil
			}
		}
		return false, fmt.Errorf("no RolloutHalted Event starting %q", want)
	})
	return failed
}

func conditionMessage(kr *kickv1alpha1.KickRequest, typ string) string {
	for _, c := range kr.Status.Conditions {
		if c.Type == typ {
			return c.Message
		}
	}
	return ""
}

func conditionReason(kr *kickv1alpha1.KickRequest, typ string) string {
	for _, c := range kr.Status.Conditions {
		if c.Type == typ {
			return c.Reason
		}
	}
	return ""
}

// The first restart of a capped fan-out really fails (its surge pod is
// refused by a quota), which halts the three others; the fix, a new change
// of the Secret, resumes the fan-out and restarts every consumer once, the
// failed one included.
func TestFailedRolloutHaltsTheFanOutUntilTheFix(t *testing.T) {
	f := fixture.Setup(t)
	run := f.NS
	f.Policy("capped", `
discovery: {workloadSelector: {}}
restart: {maxConcurrent: 1, minInterval: 0s}`)
	names := fragileConsumers(f, run, "shared", 4)
	watch := followRollouts(t, f.Env, fanoutLabel, run)

	f.SetSecret("shared", map[string]string{"v": "2-broken"})
	failed := waitHalted(t, f, 3)
	failedKey := f.NS + "/" + failed.Spec.TargetRef.Name
	if got := watch.Restarts(); len(got) != 1 || got[failedKey] != 1 {
		t.Fatalf("restarts while halted: %v; want only %s's", got, failedKey)
	}

	// The environment is fixed first: without the quota the failed
	// rollout finishes by itself (KICK no longer counts a restart whose
	// request failed), then the fix of the content arrives.
	removeQuota(f)
	watch.WaitSettled(t, 2*time.Minute, 1, failedKey)
	f.SetSecret("shared", map[string]string{"v": "3-fixed"})
	cluster.Eventually(t, 3*time.Minute, "every consumer restarted for the fix", func() (bool, error) {
		got := watch.Restarts()
		for _, key := range names {
			want := 1
			if key == failedKey {
				want = 2
			}
			if got[key] < want {
				return false, fmt.Errorf("restarts %v", got)
			}
		}
		return true, nil
	})
	watch.WaitSettled(t, 2*time.Minute, 1, names...)
	f.Barrier()
	for _, key := range names {
		want := 1
		if key == failedKey {
			want = 2
		}
		if n := watch.Restarts()[key]; n != want {
			t.Errorf("%s restarted %d times, want %d", key, n, want)
		}
	}
	if peak, when := watch.Peak(); peak > 1 {
		t.Errorf("%d rollouts in progress at once (%s); restart.maxConcurrent is 1", peak, when)
	}
}

// A person releases the halt by annotating the failed request: the held
// restarts go ahead with the change as it is, once each; the failed
// workload is not restarted again.
func TestReleasingAHaltLetsTheHeldRestartsGo(t *testing.T) {
	f := fixture.Setup(t)
	run := f.NS
	f.Policy("capped", `
discovery: {workloadSelector: {}}
restart: {maxConcurrent: 1, minInterval: 0s}`)
	names := fragileConsumers(f, run, "shared", 3)
	watch := followRollouts(t, f.Env, fanoutLabel, run)

	f.SetSecret("shared", map[string]string{"v": "2"})
	failed := waitHalted(t, f, 2)

	removeQuota(f)
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"true"}}}`, kickv1alpha1.ReleaseHaltAnnotation)
	if err := f.Env.Client.Patch(f.Ctx, failed, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatal(err)
	}
	watch.WaitSettled(t, 3*time.Minute, 1, names...)
	f.Barrier()
	for _, key := range names {
		if n := watch.Restarts()[key]; n != 1 {
			t.Errorf("%s restarted %d times, want 1 (the failed one is not restarted again)", key, n)
		}
	}
	if _, err := f.Request(failed.Name); err != nil {
		t.Errorf("the released request is gone: %v", err)
	}
}
