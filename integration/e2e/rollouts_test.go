package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/restart/freshness"
	"github.com/kick-operator/kick/restart/rollout"
)

// minReady is the Rollouts' minReadySeconds: a replacement pod is Ready at
// once under kwok, and available only this long after, which leaves a wide
// window in which a restart is not finished although every pod was
// replaced.
const minReady = 5

// canaryRollout is the spec of a canary Rollout of two replicas: a weight
// step and a timed pause, which a template change would
// walk through and a restart (spec.restartAt) does not.
func canaryRollout() map[string]any {
	return map[string]any{
		"replicas": 2, "minReadySeconds": minReady,
		"strategy": map[string]any{"canary": map[string]any{"steps": []any{
			map[string]any{"setWeight": 50}, map[string]any{"pause": map[string]any{"duration": "2s"}},
		}}},
	}
}

// createRollout creates Rollout NAME labelled app=NAME from spec (plus
// selector and, unless spec has a workloadRef, a template consuming Secret
// NAME-db) and waits until the
// Rollouts controller reports it Healthy and KICK has the Secret's
// baseline.
func (s *suite) createRollout(name string, spec map[string]any) {
	s.T.Helper()
	labels := map[string]any{"app": name}
	spec["selector"] = map[string]any{"matchLabels": labels}
	if _, ok := spec["workloadRef"]; !ok {
		spec["template"] = map[string]any{
			"metadata": map[string]any{"labels": labels},
			"spec": map[string]any{"containers": []any{map[string]any{
				"name": "app", "image": "registry.k8s.io/pause:3.10",
				"envFrom": []any{map[string]any{"secretRef": map[string]any{"name": name + "-db"}}},
			}}},
		}
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
		"metadata": map[string]any{"name": name, "namespace": s.NS, "labels": labels},
		"spec":     spec,
	}}
	if err := s.Env.Client.Create(s.Ctx, u); err != nil {
		s.T.Fatalf("create Rollout %s: %v", name, err)
	}
	s.waitRollout(name, "Healthy", func(ro *rollout.Rollout) bool { return ro.Status.Phase == "Healthy" })
	s.WaitObservation(name + "-db")
}

func (s *suite) rollout(name string) *rollout.Rollout {
	s.T.Helper()
	var ro rollout.Rollout
	if err := s.Env.Client.Get(s.Ctx, client.ObjectKey{Namespace: s.NS, Name: name}, &ro); err != nil {
		s.T.Fatal(err)
	}
	return &ro
}

// waitRollout waits until the Rollout satisfies cond.
func (s *suite) waitRollout(name, what string, cond func(*rollout.Rollout) bool) *rollout.Rollout {
	s.T.Helper()
	var ro *rollout.Rollout
	cluster.Eventually(s.T, 2*time.Minute, "Rollout "+name+" "+what, func() (bool, error) {
		ro = s.rollout(name)
		st, _ := json.Marshal(ro.Status)
		return cond(ro), fmt.Errorf("generation %d, status %s", ro.Generation, st)
	})
	return ro
}

// pod is what the tests read of a Rollout's pod.
type pod struct {
	name            string
	created, readyT time.Time
	ready, deleting bool
}

func (p pod) String() string {
	return fmt.Sprintf("%s (created %s, ready %t at %s, deleting %t)", p.name,
		p.created.UTC().Format(time.RFC3339), p.ready, p.readyT.UTC().Format(time.RFC3339), p.deleting)
}

// pods lists the pods labelled app=NAME, by name.
func (s *suite) pods(name string) []pod {
	s.T.Helper()
	var list corev1.PodList
	if err := s.Env.Client.List(s.Ctx, &list, client.InNamespace(s.NS), client.MatchingLabels{"app": name}); err != nil {
		s.T.Fatal(err)
	}
	out := make([]pod, 0, len(list.Items))
	for _, p := range list.Items {
		q := pod{name: p.Name, created: p.CreationTimestamp.Time, deleting: p.DeletionTimestamp != nil}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				q.ready, q.readyT = true, c.LastTransitionTime.Time
			}
		}
		out = append(out, q)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// podNames returns the names of pods.
func podNames(pods []pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.name
	}
	return out
}

// rolloutRestartedOnce waits until KICK's request for Rollout NAME
// succeeded and checks, from the Rollout and its pods, that the Rollouts
// controller restarted it exactly once for the change at changed and had
// finished when KICK recorded success:
//   - spec.restartAt is a whole second not before the change, and
//     status.restartedAt (the controller's "every pod replaced") equals it;
//   - no new ReplicaSet: a restart replaces pods, it does not walk the steps;
//   - every pod before the change is gone, and each of the replicas now
//     running was created at or after restartAt, and was available (Ready
//     for minReadySeconds) when KICK recorded success.
func (s *suite) rolloutRestartedOnce(name string, replicas int, changed time.Time, podsBefore, rssBefore []string) *kickv1alpha1.KickRequest {
	s.T.Helper()
	kr := s.WaitPhase("rollout-"+name, kickv1alpha1.PhaseSucceeded, 3*time.Minute)
	now := s.pods(name) // as soon as KICK said done
	ro := s.rollout(name)
	st, _ := json.Marshal(ro.Status)
	s.T.Logf("Rollout %s when KICK succeeded: restartAt %v, status %s", name, ro.Spec.RestartAt, st)
	s.T.Logf("pods then: %v; KickRequest completionTime %v, restartCount %d", now, kr.Status.CompletionTime, kr.Status.RestartCount)
	if kr.Status.RestartCount != 1 {
		s.T.Fatalf("KICK's restartCount %d, want 1", kr.Status.RestartCount)
	}
	if ro.Spec.RestartAt == nil {
		s.T.Fatal("spec.restartAt is unset")
	}
	restartAt := ro.Spec.RestartAt.Time
	if restartAt.Nanosecond() != 0 || restartAt.Before(changed.Truncate(time.Second)) {
		s.T.Fatalf("restartAt %s is not a whole second at or after the change (%s)", restartAt.Format(time.RFC3339Nano), changed.Format(time.RFC3339Nano))
	}
	if ro.Status.RestartedAt == nil || !ro.Status.RestartedAt.Time.Equal(restartAt) {
		s.T.Fatalf("status.restartedAt %v: the Rollouts controller had not finished restartAt %s", ro.Status.RestartedAt, restartAt.Format(time.RFC3339))
	}
	if rss := s.ReplicaSets(name); !slices.Equal(rss, rssBefore) {
		s.T.Fatalf("ReplicaSets %v, before the change %v: the restart rolled a new revision", rss, rssBefore)
	}
	s.assertReplaced(now, replicas, restartAt, kr.Status.CompletionTime.Time, podsBefore)
	return kr
}

// recordStatuses polls Rollout NAME until the test ends and logs each
// status the controller wrote that differs from the one before (with
// managedFields' time of its last status write): what the real
// controller writes, for the unit tests of rollout.InspectAt.
func (s *suite) recordStatuses(name string) {
	ctx, stop := context.WithCancel(s.Ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		last := ""
		for ctx.Err() == nil {
			var ro rollout.Rollout
			if err := s.Env.Client.Get(ctx, client.ObjectKey{Namespace: s.NS, Name: name}, &ro); err == nil {
				st, _ := json.Marshal(ro.Status)
				if string(st) != last {
					w, _ := rollout.LastStatusWrite(&ro)
					s.T.Logf("%s status (written %s, seen %s): %s", name, w.UTC().Format(time.RFC3339), time.Now().UTC().Format("15:04:05.000"), st)
					last = string(st)
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	s.T.Cleanup(func() { stop(); <-done })
}

// assertReplaced checks pods, read as soon as KICK recorded success at
// done: there are replicas of them, none from before restartAt or among
// podsBefore, and each was available (Ready for minReadySeconds) at done.
func (s *suite) assertReplaced(pods []pod, replicas int, restartAt, done time.Time, podsBefore []string) {
	s.T.Helper()
	for _, p := range pods {
		if slices.Contains(podsBefore, p.name) || p.created.Before(restartAt) {
			s.T.Fatalf("pod %s (created %s) from before restartAt %s was still there when KICK recorded success", p.name, p.created.Format(time.RFC3339), restartAt.Format(time.RFC3339))
		}
		// Both times are whole seconds: a second of slack.
		if !p.ready || p.deleting || done.Add(time.Second).Before(p.readyT.Add(minReady*time.Second)) {
			s.T.Fatalf("pod %s (ready %t since %s) was not available when KICK recorded success at %s", p.name, p.ready, p.readyT.Format(time.RFC3339), done.Format(time.RFC3339))
		}
	}
	if len(pods) != replicas {
		s.T.Fatalf("%d pods when KICK recorded success, want %d: %v", len(pods), replicas, podNames(pods))
	}
}

// blueGreenRollout creates the active Service NAME-active and returns the
// spec of a blue-green Rollout of two replicas that promotes by itself.
func (s *suite) blueGreenRollout(name string) map[string]any {
	s.T.Helper()
	s.Create(&corev1.Service{
		ObjectMeta: objectMeta(name + "-active"),
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": name},
			Ports:    []corev1.ServicePort{{Port: 80}},
		},
	})
	return map[string]any{
		"replicas": 2, "minReadySeconds": minReady,
		"strategy": map[string]any{"blueGreen": map[string]any{"activeService": name + "-active", "autoPromotionEnabled": true}},
	}
}

// TestRolloutCanaryRestart: a Secret change restarts a canary Rollout run by
// the real Rollouts controller exactly once, through spec.restartAt, and
// KICK records success only once the controller replaced every pod and the
// replacements are available; nothing more happens afterwards.
func TestRolloutCanaryRestart(t *testing.T) {
	s := setup(t, "rollouts", "--enable-argo-rollouts")
	s.Policy("all", "{discovery: {workloadSelector: {}}, restart: {minInterval: 0s}}")
	s.secret("web")
	s.createRollout("web", canaryRollout())
	podsBefore, rssBefore := podNames(s.pods("web")), s.ReplicaSets("web")
	if len(podsBefore) != 2 || len(rssBefore) != 1 {
		t.Fatalf("pods %v, ReplicaSets %v: want 2 and 1", podsBefore, rssBefore)
	}

	changed := time.Now()
	s.SetSecret("web-db", map[string]string{"password": "bravo"})
	s.rolloutRestartedOnce("web", 2, changed, podsBefore, rssBefore)

	// Nothing more happens for that change: the same restartAt, the same
	// pods, after the manager handled a later change elsewhere.
	restartAt, pods := s.rollout("web").Spec.RestartAt.Time, podNames(s.pods("web"))
	s.Barrier()
	if ro := s.rollout("web"); !ro.Spec.RestartAt.Time.Equal(restartAt) {
		t.Fatalf("restartAt moved from %s to %s after the request succeeded", restartAt, ro.Spec.RestartAt)
	}
	if got := podNames(s.pods("web")); !slices.Equal(got, pods) {
		t.Fatalf("pods changed after the request succeeded: %v, then %v", pods, got)
	}
	if kr, _ := s.Request("rollout-web"); kr.Status.RestartCount != 1 {
		t.Fatalf("restartCount %d after the barrier, want 1", kr.Status.RestartCount)
	}
}

// TestRolloutBlueGreenRestart: the same for a blue-green Rollout, whose
// active Service the Rollouts controller points at its revision. Its
// controller evicts the last old pod and, in the same status write, sets
// status.restartedAt with the availability counts of before that eviction;
// KICK must not take that write for a finished restart (see
// rollout.RestartSettle): it records success only once the replacements
// are available.
func TestRolloutBlueGreenRestart(t *testing.T) {
	s := setup(t, "rollouts", "--enable-argo-rollouts")
	s.Policy("all", "{discovery: {workloadSelector: {}}, restart: {minInterval: 0s}}")
	s.secret("web")
	s.createRollout("web", s.blueGreenRollout("web"))
	podsBefore, rssBefore := podNames(s.pods("web")), s.ReplicaSets("web")
	if len(podsBefore) != 2 || len(rssBefore) != 1 {
		t.Fatalf("pods %v, ReplicaSets %v: want 2 and 1", podsBefore, rssBefore)
	}
	s.recordStatuses("web")
	changed := time.Now()
	s.SetSecret("web-db", map[string]string{"password": "bravo"})
	s.rolloutRestartedOnce("web", 2, changed, podsBefore, rssBefore)

	restartAt := s.rollout("web").Spec.RestartAt.Time
	s.Barrier()
	if ro := s.rollout("web"); !ro.Spec.RestartAt.Time.Equal(restartAt) {
		t.Fatalf("restartAt moved from %s to %s after the request succeeded", restartAt, ro.Spec.RestartAt)
	}
	if kr, _ := s.Request("rollout-web"); kr.Status.RestartCount != 1 {
		t.Fatalf("restartCount %d after the barrier, want 1", kr.Status.RestartCount)
	}
}

// TestRolloutPausedAtCanaryStep: a Secret change while a new revision of a
// canary Rollout waits at an indefinite pause step. KICK does not write
// spec.restartAt then (the controller would evict the pods of both
// revisions mid-rollout): the request waits in WaitingForRollout with
// RolloutComplete=False (Paused). Once someone promotes the Rollout and the
// controller finishes it, KICK restarts it once, and succeeds once the
// controller finished that restart.
func TestRolloutPausedAtCanaryStep(t *testing.T) {
	s := setup(t, "rollouts", "--enable-argo-rollouts")
	s.Policy("all", "{discovery: {workloadSelector: {}}, restart: {minInterval: 0s}}")
	s.secret("web")
	s.createRollout("web", map[string]any{
		"replicas": 2,
		"strategy": map[string]any{"canary": map[string]any{"steps": []any{
			map[string]any{"setWeight": 50}, map[string]any{"pause": map[string]any{}},
		}}},
	})
	if err := s.Env.Client.Patch(s.Ctx, s.rollout("web"), client.RawPatch(types.MergePatchType,
		[]byte(`{"spec":{"template":{"metadata":{"annotations":{"release":"2"}}}}}`))); err != nil {
		t.Fatal(err)
	}
	s.waitRollout("web", "paused at its pause step", func(ro *rollout.Rollout) bool { return len(ro.Status.PauseConditions) > 0 })

	changed := time.Now()
	s.SetSecret("web-db", map[string]string{"password": "bravo"})
	var kr *kickv1alpha1.KickRequest
	cluster.Eventually(t, time.Minute, "the request to wait for the paused rollout", func() (bool, error) {
		var err error
		if kr, err = s.Request("rollout-web"); err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(kr.Status.Conditions, kickv1alpha1.ConditionRolloutComplete)
		return kr.Status.Phase == kickv1alpha1.PhaseWaitingForRollout && c != nil && c.Status == metav1.ConditionFalse && c.Reason == freshness.Paused,
			fmt.Errorf("phase %s, conditions %+v", kr.Status.Phase, kr.Status.Conditions)
	})
	// It keeps waiting: after the manager handled a later change elsewhere,
	// still no restart.
	s.Barrier()
	if ro := s.rollout("web"); ro.Spec.RestartAt != nil {
		t.Fatalf("spec.restartAt %s written while the Rollout is paused at a step", ro.Spec.RestartAt)
	}
	if kr, _ = s.Request("rollout-web"); kr.Status.Phase != kickv1alpha1.PhaseWaitingForRollout || kr.Status.RestartCount != 0 {
		t.Fatalf("phase %s, restartCount %d while paused, want WaitingForRollout and 0", kr.Status.Phase, kr.Status.RestartCount)
	}

	// Promote, as kubectl argo rollouts promote does.
	if err := s.Env.Client.Status().Patch(s.Ctx, s.rollout("web"), client.RawPatch(types.MergePatchType, []byte(`{"status":{"pauseConditions":null}}`))); err != nil {
		t.Fatal(err)
	}
	kr = s.WaitPhase("rollout-web", kickv1alpha1.PhaseSucceeded, 3*time.Minute)
	ro := s.rollout("web")
	st, _ := json.Marshal(ro.Status)
	pods := s.pods("web")
	t.Logf("succeeded at %v: restartCount %d; restartAt %v; status %s; pods %v", kr.Status.CompletionTime, kr.Status.RestartCount, ro.Spec.RestartAt, st, pods)
	if kr.Status.RestartCount != 1 || ro.Spec.RestartAt == nil || ro.Spec.RestartAt.Time.Before(changed.Truncate(time.Second)) {
		t.Fatalf("restartCount %d, restartAt %v: want one restart after the change (%s)", kr.Status.RestartCount, ro.Spec.RestartAt, changed.Format(time.RFC3339))
	}
	if ro.Status.RestartedAt == nil || !ro.Status.RestartedAt.Equal(ro.Spec.RestartAt) || ro.Status.Phase != "Healthy" || ro.Status.CurrentPodHash != ro.Status.StableRS {
		t.Fatalf("KICK succeeded before the controller finished the promotion and the restart: status %s", st)
	}
	for _, p := range pods {
		if p.created.Before(ro.Spec.RestartAt.Time) || !p.ready || p.deleting {
			t.Fatalf("pod %v is older than restartAt %s or not ready when KICK succeeded", p, ro.Spec.RestartAt)
		}
	}
}

// TestRolloutChangeDuringRestart: a second Secret change while the
// controller is still replacing pods for the first is carried, not lost
// and not doubled: KICK lets the first restart finish (status.restartedAt
// reaches the first restartAt), then writes one more restartAt, not before
// the second change, and succeeds after the controller finished that one.
// It is judged from the Rollout: the restartAt values written, polled.
func TestRolloutChangeDuringRestart(t *testing.T) {
	for _, strategy := range []string{"canary", "blue-green"} {
		t.Run(strategy, func(t *testing.T) {
			s := setup(t, "rollouts", "--enable-argo-rollouts")
			s.Policy("all", "{discovery: {workloadSelector: {}}, restart: {minInterval: 0s}}")
			s.secret("web")
			spec := canaryRollout()
			if strategy == "blue-green" {
				spec = s.blueGreenRollout("web")
			}
			s.createRollout("web", spec)
			changeDuringRestart(t, s)
		})
	}
}

// changeDuringRestart is TestRolloutChangeDuringRestart on Rollout web of
// two replicas.
func changeDuringRestart(t *testing.T, s *suite) {
	s.recordStatuses("web")

	s.SetSecret("web-db", map[string]string{"password": "bravo"})
	first := s.waitRollout("web", "to get spec.restartAt", func(ro *rollout.Rollout) bool { return ro.Spec.RestartAt != nil }).Spec.RestartAt.Time
	// The second change comes after the first restartAt (a change in the
	// same second is answered by it), while pods are being replaced:
	// minReadySeconds holds the second eviction back 5 s.
	cluster.Eventually(t, 5*time.Second, "the clock to pass the first restartAt", func() (bool, error) {
		return time.Now().After(first.Add(time.Second)), nil
	})
	if ro := s.rollout("web"); ro.Status.RestartedAt != nil && ro.Status.RestartedAt.Equal(ro.Spec.RestartAt) {
		t.Fatalf("the first restart finished before the second change; the test needs it in flight (status %+v)", ro.Status)
	}
	second := time.Now()
	s.SetSecret("web-db", map[string]string{"password": "charlie"})

	var kr *kickv1alpha1.KickRequest
	written := []time.Time{first}
	cluster.Eventually(t, 3*time.Minute, "the request to succeed with the second change restarted", func() (bool, error) {
		var err error
		if kr, err = s.Request("rollout-web"); err != nil {
			return false, err
		}
		ro := s.rollout("web")
		if at := ro.Spec.RestartAt.Time; !at.Equal(written[len(written)-1]) {
			written = append(written, at)
			if done := ro.Status.RestartedAt; done == nil || !done.Time.Equal(written[len(written)-2]) {
				t.Fatalf("restartAt moved to %s while the controller had not finished %s (status.restartedAt %v): an in-flight restart was cut short",
					at.Format(time.RFC3339), written[len(written)-2].Format(time.RFC3339), done)
			}
		}
		return kr.Status.Phase == kickv1alpha1.PhaseSucceeded && len(written) > 1,
			fmt.Errorf("phase %s, restartAt written %v", kr.Status.Phase, written)
	})
	ro := s.rollout("web")
	st, _ := json.Marshal(ro.Status)
	t.Logf("second change %s; restartAt written %v; at success: status %s, pods %v, request conditions %+v", second.Format(time.RFC3339Nano), written, st, s.pods("web"), kr.Status.Conditions)
	if len(written) != 2 || written[1].Before(second.Truncate(time.Second)) {
		t.Fatalf("restartAt written %v for changes at %s and %s: want one restart per change, the second not before the second change",
			written, first.Format(time.RFC3339), second.Format(time.RFC3339))
	}
	if ro.Status.RestartedAt == nil || !ro.Status.RestartedAt.Equal(ro.Spec.RestartAt) {
		t.Fatalf("KICK succeeded before the controller finished restartAt %s (status.restartedAt %v)", ro.Spec.RestartAt, ro.Status.RestartedAt)
	}
	s.assertReplaced(s.pods("web"), 2, ro.Spec.RestartAt.Time, kr.Status.CompletionTime.Time, nil)
}
