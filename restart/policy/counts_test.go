package policy

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
)

// TestBlockedCountIsCoalesced: while a capped fan-out hands its slots over,
// blockedWorkloads moves at every hand-over; the policy's status is written
// at most every countRefresh for a count that stays above zero, and at once
// when a wait starts or ends.
func TestBlockedCountIsCoalesced(t *testing.T) {
	waiting := func(name string) *kickv1alpha1.KickRequest {
		return &kickv1alpha1.KickRequest{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec:       kickv1alpha1.KickRequestSpec{TargetRef: kickv1alpha1.TargetRef{Kind: kickv1alpha1.TargetDeployment, Name: name}},
			Status:     kickv1alpha1.KickRequestStatus{PolicyRef: "web", Phase: kickv1alpha1.PhaseWaitingForGate},
		}
	}
	a, b, c := waiting("a"), waiting("b"), waiting("c")
	h := newHarness(t, policyObject("web"), a, b, c)
	now := time.Date(2026, 12, 4, 22, 0, 0, 0, time.UTC)
	h.r.Now = func() time.Time { return now }
	step := func(want int32, writes int32, requeue bool) {
		t.Helper()
		res, err := h.r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: "web"}})
		if err != nil {
			t.Fatal(err)
		}
		var p kickv1alpha1.KickPolicy
		if err := h.c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "web"}, &p); err != nil {
			t.Fatal(err)
		}
		if p.Status.BlockedWorkloads != want || h.patches.Load() != writes || (res.RequeueAfter > 0) != requeue {
			t.Fatalf("at %s: blocked %d after %d writes (requeue %s), want %d after %d (requeue %v)",
				now.Format(time.TimeOnly), p.Status.BlockedWorkloads, h.patches.Load(), res.RequeueAfter, want, writes, requeue)
		}
	}
	step(3, 1, false) // the wait starts: written at once
	if err := h.c.Delete(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Second)
	step(3, 1, true) // 3 → 2, a second after the last write: later
	now = now.Add(countRefresh)
	step(2, 2, false)
	if err := h.c.Delete(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if err := h.c.Delete(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Second)
	step(0, 3, false) // the wait ends: written at once
}
