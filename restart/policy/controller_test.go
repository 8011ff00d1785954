package policy

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
)

// harness is a Reconciler over a fake client that counts status patches.
type harness struct {
	t       *testing.T
	c       client.Client
	r       *Reconciler
	rec     *events.FakeRecorder
	patches atomic.Int32
}

func newHarness(t *testing.T, objs ...client.Object) *harness {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := kickv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, rec: events.NewFakeRecorder(16)}
	h.c = fake.NewClientBuilder().WithScheme(scheme).
		WithStatusSubresource(&kickv1alpha1.KickPolicy{}).
		WithObjects(objs...).
		WithInterceptorFuncs(interceptor.Funcs{
			SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
				h.patches.Add(1)
				return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
			},
		}).Build()
	h.r = &Reconciler{Client: h.c, Recorder: h.rec}
	return h
}

func (h *harness) reconcile(name string) *kickv1alpha1.KickPolicy {
	h.t.Helper()
	key := types.NamespacedName{Namespace: ns, Name: name}
	if _, err := h.r.Reconcile(context.Background(), reconcile.Request{NamespacedName: key}); err != nil {
		h.t.Fatalf("reconcile %s: %v", name, err)
	}
	var p kickv1alpha1.KickPolicy
	if err := h.c.Get(context.Background(), key, &p); err != nil {
		h.t.Fatal(err)
	}
	return &p
}

// events drains the recorded events.
func (h *harness) events() []string {
	var out []string
	for {
		select {
		case e := <-h.rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func policyObject(name string, opts ...option) *kickv1alpha1.KickPolicy {
	p := pol(name, opts...)
	p.UID = ""
	return &p
}

func deployment(name string, kv ...string) *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbl(kv...)}}
}

func ready(p *kickv1alpha1.KickPolicy) *metav1.Condition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == kickv1alpha1.ConditionReady {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func TestReconcileWritesOnlyChanges(t *testing.T) {
	h := newHarness(t,
		policyObject("web", workloads(match("app", "web")), generation(3)),
		deployment("web", "app", "web"), deployment("api", "app", "api"),
		&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db", Labels: lbl("app", "web")}},
		&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agent", Labels: lbl("app", "web")}},
	)
	p := h.reconcile("web")
	if p.Status.ObservedGeneration != 3 || p.Status.MatchedWorkloads != 3 || p.Status.BlockedWorkloads != 0 {
		t.Fatalf("status %+v, want observedGeneration 3, matched 3, blocked 0", p.Status)
	}
	if c := ready(p); c == nil || c.Status != metav1.ConditionTrue || c.Reason != ReasonReady || c.LastTransitionTime.IsZero() || c.ObservedGeneration != 3 {
		t.Fatalf("Ready %+v", c)
	}
	if got := h.events(); len(got) != 1 || got[0] != "Normal Ready "+ready(p).Message {
		t.Fatalf("events %q, want one Normal Ready event", got)
	}
	if h.patches.Load() != 1 {
		t.Fatalf("%d status patches, want 1", h.patches.Load())
	}

	// Nothing changed: no write, no event.
	h.reconcile("web")
	h.reconcile("web")
	if n := h.patches.Load(); n != 1 {
		t.Fatalf("%d status patches after unchanged reconciles, want still 1", n)
	}
	if got := h.events(); len(got) != 0 {
		t.Fatalf("events %q without a Ready change", got)
	}

	// A count change writes but does not announce: Ready did not change.
	if err := h.c.Create(context.Background(), deployment("web-2", "app", "web")); err != nil {
		t.Fatal(err)
	}
	if p := h.reconcile("web"); p.Status.MatchedWorkloads != 4 {
		t.Fatalf("matched %d, want 4", p.Status.MatchedWorkloads)
	}
	if n := h.patches.Load(); n != 2 {
		t.Fatalf("%d status patches, want 2", n)
	}
	if got := h.events(); len(got) != 0 {
		t.Fatalf("events %q without a Ready change", got)
	}

	// A second policy makes both ambiguous: Ready changes, one Warning.
	if err := h.c.Create(context.Background(), policyObject("all")); err != nil {
		t.Fatal(err)
	}
	p = h.reconcile("web")
	if p.Status.MatchedWorkloads != 0 || p.Status.AmbiguousWorkloads != 4 {
		t.Fatalf("status %+v, want matched 0 blocked 4", p.Status)
	}
	c := ready(p)
	if c.Status != metav1.ConditionFalse || c.Reason != ReasonAmbiguous || !strings.Contains(c.Message, "4 workloads are also selected by policy all") {
		t.Fatalf("Ready %+v", c)
	}
	if got := h.events(); len(got) != 1 || !strings.HasPrefix(got[0], "Warning Ambiguous 4 workloads") {
		t.Fatalf("events %q, want one Warning Ambiguous", got)
	}
	all := h.reconcile("all")
	if all.Status.MatchedWorkloads != 1 || all.Status.AmbiguousWorkloads != 4 {
		t.Fatalf("select-all status %+v, want matched 1 (api) blocked 4", all.Status)
	}
}

// A reconcile that still sees the old status (stale cache) must not repeat
// the Event it already emitted.
func TestReconcileDoesNotRepeatEvents(t *testing.T) {
	h := newHarness(t, policyObject("p", windows(allow("61 * * * *", "1h", ""))))
	p := h.reconcile("p")
	if c := ready(p); c.Reason != ReasonInvalidSchedule || !strings.Contains(c.Message, "window 0") {
		t.Fatalf("Ready %+v", c)
	}
	if got := h.events(); len(got) != 1 || !strings.HasPrefix(got[0], "Warning InvalidSchedule spec.schedule: window 0") {
		t.Fatalf("events %q", got)
	}
	// Put the old status back, as a lagging cache would show it.
	stale := p.DeepCopy()
	stale.Status = kickv1alpha1.KickPolicyStatus{}
	if err := h.c.Status().Update(context.Background(), stale); err != nil {
		t.Fatal(err)
	}
	h.reconcile("p")
	if got := h.events(); len(got) != 0 {
		t.Fatalf("repeated events %q", got)
	}
}

func TestReconcileIgnoresMissingAndDeletingPolicies(t *testing.T) {
	gone := policyObject("gone", deleting)
	h := newHarness(t, gone)
	for _, name := range []string{"missing", "gone"} {
		if _, err := h.r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if n := h.patches.Load(); n != 0 {
		t.Fatalf("%d status patches, want none", n)
	}
}

// TestBlockedCountsGateWaits: blockedWorkloads counts the workloads whose
// open request waits for a gate under this policy; a request waiting for a
// running rollout, a finished one and another policy's do not count.
func TestBlockedCountsGateWaits(t *testing.T) {
	req := func(name, target, policy string, phase kickv1alpha1.KickRequestPhase) *kickv1alpha1.KickRequest {
		return &kickv1alpha1.KickRequest{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec:       kickv1alpha1.KickRequestSpec{TargetRef: kickv1alpha1.TargetRef{Kind: kickv1alpha1.TargetDeployment, Name: target}},
			Status:     kickv1alpha1.KickRequestStatus{PolicyRef: policy, Phase: phase},
		}
	}
	h := newHarness(t, policyObject("web"),
		req("a", "a", "web", kickv1alpha1.PhaseWaitingForGate),
		req("b", "b", "web", kickv1alpha1.PhaseWaitingForApplicationSync),
		req("c", "c", "web", kickv1alpha1.PhaseWaitingForOwner),
		req("d", "d", "web", kickv1alpha1.PhaseWaitingForRollout),
		req("e", "e", "web", kickv1alpha1.PhaseSucceeded),
		req("f", "f", "other", kickv1alpha1.PhaseWaitingForGate),
	)
	if p := h.reconcile("web"); p.Status.BlockedWorkloads != 3 {
		t.Fatalf("blockedWorkloads = %d, want 3 (gate, sync and owner waits)", p.Status.BlockedWorkloads)
	}
}
