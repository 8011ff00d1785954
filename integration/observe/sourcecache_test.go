package observe

import (
	"context"
	"maps"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/restart/observe"
	"github.com/kick-operator/kick/router"
)

// cachedSource reads a Secret from the manager's cache; nil when the cache does not hold it.
func (o *observer) cachedSource(ns, name string) *metav1.PartialObjectMetadata {
	o.t.Helper()
	src := observe.SourceMetadata("Secret")
	err := o.mgr.GetClient().Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, src)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		o.t.Fatal(err)
	}
	return src
}

// cachedCount reads kick_observe_cached_sources for a kind; -1 when it is not exported.
func (o *observer) cachedCount(kind string) float64 {
	o.t.Helper()
	mfs, err := o.reg.Gather()
	if err != nil {
		o.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "kick_observe_cached_sources" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "kind" && l.GetValue() == kind {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	return -1
}

func deleteAndWait(t *testing.T, obj client.Object) {
	t.Helper()
	c := cluster.Get(t).Client
	if err := c.Delete(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
	cluster.Eventually(t, eventTimeout, obj.GetName()+" to be gone", func() (bool, error) {
		err := c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
}

// TestCacheKeepsOnlyFollowedSources: the manager caches the Secrets a workload consumes and
// those with a record, not the others; a Secret that gains its first consumer is fetched into
// the cache and then seen like any other (baseline, then each content change once), and
// stays current in the cache after its consumer goes.
func TestCacheKeepsOnlyFollowedSources(t *testing.T) {
	env := cluster.Get(t)
	ns, keyNS := env.Namespace(t), env.Namespace(t)

	// A Secret that keeps its record after its only consumer went, while the manager was down.
	o := startObserver(t, ns, keyNS)
	kept := newSecret(ns, "kept", map[string]string{"k": "v1"})
	create(t, kept)
	oldReader := deployment(ns, "old-reader", secretEnv("kept", "k"))
	create(t, oldReader)
	o.expect("Secret", "kept", router.ClassBaseline)
	o.stop()
	deleteAndWait(t, oldReader)

	lonely := newSecret(ns, "lonely", map[string]string{"k": "v1"})
	create(t, lonely)
	used := newSecret(ns, "used", map[string]string{"k": "v1"})
	create(t, used)
	create(t, deployment(ns, "reader", secretEnv("used", "k")))

	o = startObserver(t, ns, keyNS)
	o.expect("Secret", "used", router.ClassBaseline)
	if o.cachedSource(ns, "used") == nil {
		t.Error("the cache does not hold a consumed Secret")
	}
	if o.cachedSource(ns, "kept") == nil {
		t.Error("the cache does not hold a Secret with a record")
	}
	if o.cachedSource(ns, "lonely") != nil {
		t.Error("the cache holds a Secret nothing consumes and nothing recorded")
	}
	if n := o.cachedCount("Secret"); n != 2 {
		t.Errorf("kick_observe_cached_sources{kind=Secret} = %v, want 2 (used, kept)", n)
	}

	// Writes to the others: the unconsumed one stays out of the cache; the recorded one's
	// record follows its content quietly (a later consumer starts with it).
	update(t, lonely, func(s *corev1.Secret) { s.Labels = map[string]string{"touched": "yes"} })
	update(t, kept, func(s *corev1.Secret) { s.Data["k"] = []byte("v2") })
	cluster.Eventually(t, eventTimeout, "the record of the unconsumed Secret to follow its content", func() (bool, error) {
		rec := record(t, ns, "Secret", "kept")
		return rec != nil && rec.Spec.RelevantFingerprint == o.keys.Secret(kept), nil
	})
	meta := o.observed("Secret", "MetaOnly")
	update(t, used, func(s *corev1.Secret) { s.Labels = map[string]string{"barrier": "1"} }) // after both, on one watch
	o.waitObserved("Secret", "MetaOnly", meta+1)
	if o.cachedSource(ns, "lonely") != nil {
		t.Error("a write to an unconsumed Secret put it into the cache")
	}
	o.expectNone("Secret", "kept", "content change of a Secret nothing consumes")

	// A first consumer: fetched into the cache, dated from its last write.
	create(t, deployment(ns, "late-reader", secretEnv("lonely", "k")))
	ev := o.expect("Secret", "lonely", router.ClassBaseline)
	if lambda := lastWrite(t, newSecret(ns, "lonely", nil)); !ev.ChangeTime.Equal(lambda) {
		t.Errorf("baseline change time %s, want λ %s", ev.ChangeTime, lambda)
	}
	if c := o.cachedSource(ns, "lonely"); c == nil || c.Labels["touched"] != "yes" {
		t.Errorf("after its first consumer the cache holds %+v, want the Secret with its labels", c)
	}
	if n := o.cachedCount("Secret"); n != 3 {
		t.Errorf("kick_observe_cached_sources{kind=Secret} = %v, want 3", n)
	}

	// Its content changes from now on are seen, each once, dated when the cache got them.
	before := time.Now()
	update(t, lonely, func(s *corev1.Secret) { s.Data["k"] = []byte("v2") })
	ev = o.expect("Secret", "lonely", router.ClassRelevant)
	if ev.ChangeTime.Before(before) || ev.ChangeTime.After(time.Now()) {
		t.Errorf("relevant change time %s, want after the update at %s", ev.ChangeTime, before)
	}
	meta = o.observed("Secret", "MetaOnly")
	update(t, used, func(s *corev1.Secret) { s.Labels = map[string]string{"barrier": "2"} })
	o.waitObserved("Secret", "MetaOnly", meta+1)
	o.expectNone("Secret", "lonely", "after its one content change")

	// Its consumer goes: the cached copy still follows the Secret, never stale.
	deleteAndWait(t, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "late-reader"}})
	update(t, lonely, func(s *corev1.Secret) { s.Labels = map[string]string{"touched": "again"} })
	want := map[string]string{"touched": "again"}
	cluster.Eventually(t, eventTimeout, "the cached copy to show the new labels", func() (bool, error) {
		c := o.cachedSource(ns, "lonely")
		return c != nil && maps.Equal(c.Labels, want), nil
	})
}
