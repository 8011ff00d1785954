package fanout

import (
	"fmt"
	"slices"
	"strings"
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

const fanoutLabel = "kick-test/fanout"

// consumers creates n Deployments in f's namespace reading Secret secret,
// labelled for the rollout watch, each changed by shape (given its index)
// before it is created, and waits until they are available and the Secret
// is baselined.
func consumers(f *fixture.F, run, secret string, n int, shape ...func(int, *appsv1.Deployment)) []string {
	f.T.Helper()
	f.Secret(secret, map[string]string{"v": "1"}, nil)
	var names []string
	for i := range n {
		name := fmt.Sprintf("app-%02d", i)
		labels := map[string]string{"app": name, fanoutLabel: run}
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](1),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: fixture.PodSpec(secret)},
			},
		}
		for _, s := range shape {
			s(i, d)
		}
		f.Create(d)
		names = append(names, f.NS+"/"+name)
	}
	for i := range n {
		f.WaitAvailable(fmt.Sprintf("app-%02d", i))
	}
	f.WaitObservation(secret)
	return names
}

// budgetWaits counts the requests whose status said they waited for a
// slot with the expected message.
func budgetWaits(t *testing.T, f *fixture.F, says string) int {
	t.Helper()
	n := 0
	for _, kr := range f.Requests() {
		for _, ev := range events(t, f, kr.Name) {
			if ev.Reason == "WaitingForRestartSlot" && strings.Contains(ev.Message, says) {
				n++
				break
			}
		}
	}
	return n
}

func events(t *testing.T, f *fixture.F, request string) []corev1.Event {
	t.Helper()
	var list corev1.EventList
	if err := f.Env.Client.List(f.Ctx, &list, client.InNamespace(f.NS)); err != nil {
		t.Fatal(err)
	}
	var out []corev1.Event
	for _, ev := range list.Items {
		if ev.InvolvedObject.Kind == "KickRequest" && ev.InvolvedObject.Name == request {
			out = append(out, ev)
		}
	}
	// events.k8s.io Events land as core Events with the regarding object.
	return out
}

// A Secret consumed by eight Deployments changes under a policy with
// restart.maxConcurrent 2: every Deployment restarts exactly once, and the
// Deployments' own status never shows more than two rollouts at a time.
func TestPolicyBudgetIsNeverExceeded(t *testing.T) {
	f := fixture.Setup(t)
	run := f.NS
	f.Policy("capped", `
discovery: {workloadSelector: {}}
restart: {maxConcurrent: 2, minInterval: 0s}`)
	names := consumers(f, run, "shared", 8)
	watch := followRollouts(t, f.Env, fanoutLabel, run)

	f.SetSecret("shared", map[string]string{"v": "2"})
	watch.WaitSettled(t, 3*time.Minute, 1, names...)
	f.Barrier()

	peak, when := watch.Peak()
	t.Logf("peak: %d rollouts in progress at once (%s); restarts began in the order %v", peak, when, watch.Started())
	if peak > 2 {
		t.Errorf("%d rollouts were in progress at once (%s); restart.maxConcurrent is 2", peak, when)
	} else if peak < 2 {
		t.Errorf("at most %d rollout was seen in progress: the cap was never reached, so the test proves nothing", peak)
	}
	for _, key := range names {
		if n := watch.Restarts()[key]; n != 1 {
			t.Errorf("%s restarted %d times, want exactly 1", key, n)
		}
	}
	// Eight restarts, two slots: at least six requests waited, and said so.
	cluster.Eventually(t, 30*time.Second, "the waiting requests' Events", func() (bool, error) {
		n := budgetWaits(t, f, "of 2 restarts of KickPolicy capped in progress (restart.maxConcurrent)")
		return n >= 6, fmt.Errorf("%d requests said they waited for a slot", n)
	})
	for _, kr := range f.Requests() {
		if kr.Status.Phase != kickv1alpha1.PhaseSucceeded || kr.Status.RestartCount != 1 {
			t.Errorf("request %s: phase %s, restartCount %d, want Succeeded after 1", kr.Name, kr.Status.Phase, kr.Status.RestartCount)
		}
	}
}

// With --max-concurrent-restarts 1, namespace busy fans a change out to
// six Deployments; a change in namespace quiet, made once busy's first
// restart runs, is served within busy's next two restarts instead of after
// all of them, and the cluster never has two rollouts at once.
func TestClusterBudgetIsFair(t *testing.T) {
	busy := fixture.Setup(t, "--max-concurrent-restarts=1")
	quiet := &fixture.F{T: t, Env: busy.Env, NS: busy.Env.Namespace(t), Ctx: busy.Ctx, Mgr: busy.Mgr}
	run := busy.NS
	for _, f := range []*fixture.F{busy, quiet} {
		f.Policy("all", `
discovery: {workloadSelector: {}}
restart: {minInterval: 0s}`)
	}
	busyNames := consumers(busy, run, "shared", 6)
	quietNames := consumers(quiet, run, "own", 1)
	watch := followRollouts(t, busy.Env, fanoutLabel, run)

	busy.SetSecret("shared", map[string]string{"v": "2"})
	cluster.Eventually(t, time.Minute, "busy's first restart", func() (bool, error) {
		return len(watch.Started()) > 0, nil
	})
	quiet.SetSecret("own", map[string]string{"v": "2"})
	watch.WaitSettled(t, 4*time.Minute, 1, append(busyNames, quietNames...)...)

	if peak, when := watch.Peak(); peak > 1 {
		t.Errorf("%d rollouts were in progress at once in the cluster (%s); --max-concurrent-restarts is 1", peak, when)
	}
	order := watch.Started()
	at := slices.Index(order, quietNames[0])
	t.Logf("restarts began in the order %v", order)
	if at < 0 || at > 3 {
		t.Errorf("restart order %v: quiet's only restart came at position %d; busy had one restart running when quiet's change came, and may take at most two more turns first", order, at)
	}
	for key, n := range watch.Restarts() {
		if n != 1 {
			t.Errorf("%s restarted %d times, want exactly 1", key, n)
		}
	}
}
