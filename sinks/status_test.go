package sinks

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/router"
)

// TestStatusWritesAreBatched: deliveries only change counters in memory; the flusher writes
// them at most once per interval, while a reconciled change is written at once.
func TestStatusWritesAreBatched(t *testing.T) {
	p := policy("https://hooks.example.com/x")
	var patches atomic.Int32
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(p.DeepCopy()).
		WithStatusSubresource(&kickv1alpha1.NotificationPolicy{}).
		WithInterceptorFuncs(interceptor.Funcs{SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			patches.Add(1)
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		}}).Build()
	opts, _ := Options{Router: router.New(router.Options{}), Registerer: prometheus.NewRegistry(), StatusInterval: time.Hour}.withDefaults()
	d := newDispatcher(opts, c, nil, logr.Discard())
	m, _ := newMatcher(p.Spec)
	cfg := mustBuild(t, p, nil)
	ctx := context.Background()

	d.apply(p, m, cfg, nil)
	d.flush(ctx, false)
	if n := patches.Load(); n != 1 {
		t.Fatalf("%d writes for a newly reconciled policy, want 1", n)
	}
	st := d.policies[keyOf(p)]
	for range 50 {
		d.record(st, cfg, p.Generation, outcome{kind: outcomeSuccess})
	}
	d.flush(ctx, false)
	if n := patches.Load(); n != 1 {
		t.Fatalf("%d writes after 50 deliveries within the interval, want none more", n)
	}
	d.flush(ctx, true) // as when stopping
	if n := patches.Load(); n != 2 {
		t.Fatalf("%d writes after the final flush, want 2", n)
	}
	var got kickv1alpha1.NotificationPolicy
	if err := c.Get(ctx, keyOf(p), &got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Delivered != 50 || got.Status.ObservedGeneration != p.Generation || got.Status.LastDeliveryTime == nil {
		t.Fatalf("status %+v", got.Status)
	}
	d.flush(ctx, true)
	if n := patches.Load(); n != 2 {
		t.Fatalf("an unchanged status was written again (%d writes)", n)
	}
}
