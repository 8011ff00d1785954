package observe

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/router"
)

// managedByLabel manages the workloads labelled kick=managed, as a KickPolicy selecting them
// would.
func managedByLabel(_ context.Context, w client.Object) (bool, func(map[string]string) bool) {
	return w.GetLabels()["kick"] == "managed", nil
}

// missingRefs makes the pod name n optional Secrets, prefix-00000 on, that nobody creates.
func missingRefs(prefix string, n int) func(*corev1.PodSpec) {
	return func(p *corev1.PodSpec) {
		for i := range n {
			p.Containers[0].EnvFrom = append(p.Containers[0].EnvFrom, corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: fmt.Sprintf("%s-%05d", prefix, i)}, Optional: new(true)}})
		}
	}
}

// liveReadsWithPrefix counts the reads past the cache of sources whose name starts with prefix.
func (o *observer) liveReadsWithPrefix(prefix string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for k, v := range o.liveReads {
		if _, name, _ := strings.Cut(k, "/"); strings.HasPrefix(name, prefix) {
			n += v
		}
	}
	return n
}

// gauge reads a kick_observe_* gauge for kind; -1 when it is not exported.
func (o *observer) gauge(name, kind string) float64 {
	o.t.Helper()
	mfs, err := o.reg.Gather()
	if err != nil {
		o.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
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

// TestManyMissingNamesAreNotFollowed plays a tenant whose workloads name thousands of Secrets
// nobody creates, renamed in a loop: the names of a workload no policy manages are never read,
// those of a managed one are read but do not stay followed, and a change of a consumed Secret
// is still observed meanwhile.
func TestManyMissingNamesAreNotFollowed(t *testing.T) {
	env := cluster.Get(t)
	ns, keyNS := env.Namespace(t), env.Namespace(t)
	o := startObserverWith(t, ns, keyNS, managedByLabel)
	const refs = 3000
	real := newSecret(ns, "real", map[string]string{"k": "v1"})
	create(t, real)
	reader := deployment(ns, "reader", secretEnv("real", "k"))
	reader.Labels = map[string]string{"kick": "managed"}
	create(t, reader)
	o.expect("Secret", "real", router.ClassBaseline)

	for round := range 3 {
		d := deployment(ns, fmt.Sprintf("unmanaged-%d", round), missingRefs(fmt.Sprintf("u%d", round), refs))
		create(t, d)
		if round < 2 {
			deleteAndWait(t, d)
		}
	}
	for round := range 2 {
		d := deployment(ns, fmt.Sprintf("managed-%d", round), missingRefs(fmt.Sprintf("m%d", round), refs/3))
		d.Labels = map[string]string{"kick": "managed"}
		create(t, d)
		if round < 1 {
			deleteAndWait(t, d)
		}
	}
	// A change of a followed Secret is seen while the flood is being worked off.
	update(t, real, func(s *corev1.Secret) { s.Data["k"] = []byte("v2") })
	o.expect("Secret", "real", router.ClassRelevant)

	if n := o.liveReadsWithPrefix("u"); n != 0 {
		t.Errorf("%d reads past the cache of names only unmanaged workloads reference, want none", n)
	}
	if n := o.liveReadsWithPrefix("m"); n == 0 {
		t.Error("the managed workload's names were never read: the test does not exercise Fetch")
	}
	// The missing names are read (within the namespace's budget) and not kept: the followed
	// set comes back to the one Secret that exists.
	cluster.Eventually(t, eventTimeout, "the followed set to hold only the real Secret", func() (bool, error) {
		return o.gauge("kick_observe_followed_sources", "Secret") == 1, nil
	})
}

// TestSecretWithLargeLabels: a consumed Secret carrying about 1 MB of labels, patched with new
// label values again and again, is observed as any other: a baseline, no event for the label
// patches, one for its content change, and the cache shows its current labels.
func TestSecretWithLargeLabels(t *testing.T) {
	env := cluster.Get(t)
	ns, keyNS := env.Namespace(t), env.Namespace(t)
	o := startObserver(t, ns, keyNS)

	labels := func(round int) map[string]string {
		out := map[string]string{}
		for i, n := 0, 0; n < 1_000_000; i++ {
			k, v := fmt.Sprintf("example.com/l-%05d", i), fmt.Sprintf("r%02d-%s", round, strings.Repeat("v", 56)) // values: at most 63 characters
			out[k] = v
			n += len(k) + len(v)
		}
		return out
	}
	big := newSecret(ns, "big", map[string]string{"k": "v1"})
	big.Labels = labels(0)
	create(t, big)
	create(t, deployment(ns, "reader", secretEnv("big", "k")))
	o.expect("Secret", "big", router.ClassBaseline)

	const patches = 5
	meta := o.observed("Secret", "MetaOnly")
	for round := 1; round <= patches; round++ {
		big = update(t, big, func(s *corev1.Secret) { s.Labels = labels(round) })
		o.waitObserved("Secret", "MetaOnly", meta+float64(round))
	}
	o.expectNone("Secret", "big", "label-only patches")
	cluster.Eventually(t, eventTimeout, "the cache to show the last labels", func() (bool, error) {
		c := o.cachedSource(ns, "big")
		return c != nil && maps.Equal(c.Labels, labels(patches)), nil
	})

	update(t, big, func(s *corev1.Secret) { s.Data["k"] = []byte("v2") })
	o.expect("Secret", "big", router.ClassRelevant)
}
