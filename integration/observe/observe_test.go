package observe

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/restart/observe"
	"github.com/kick-operator/kick/router"
)

func TestSecretBaselineRelevantAndQuietWrites(t *testing.T) {
	env := cluster.Get(t)
	ns, keyNS := env.Namespace(t), env.Namespace(t)
	o := startObserver(t, ns, keyNS)

	s := newSecret(ns, "db", map[string]string{"password": "v1"})
	create(t, s)
	create(t, deployment(ns, "web", secretEnv("db", "password")))

	// First sighting: a baseline dated from the API server's last write, not from now.
	ev := o.expect("Secret", "db", router.ClassBaseline)
	lambda := lastWrite(t, s)
	if !ev.ChangeTime.Equal(lambda) {
		t.Errorf("baseline change time %s, want λ %s", ev.ChangeTime, lambda)
	}
	if len(ev.Consumers) != 1 || ev.Consumers[0] != (router.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: ns, Name: "web"}) {
		t.Errorf("consumers %+v", ev.Consumers)
	}
	rec := record(t, ns, "Secret", "db")
	if rec == nil {
		t.Fatal("no record after the baseline event")
	}
	if !rec.Spec.LastRelevantChangeTime.Equal(lambda) || rec.Spec.Class != kickv1alpha1.ObservationBaseline ||
		rec.Spec.FingerprintKeyID != o.keys.KeyID() || rec.Spec.RelevantFingerprint != o.keys.Secret(s) ||
		rec.Spec.LastRelevantResourceVersion != s.ResourceVersion {
		t.Errorf("baseline record %+v (secret rv %s)", rec.Spec, s.ResourceVersion)
	}
	if len(rec.OwnerReferences) != 1 || rec.OwnerReferences[0].UID != s.UID || rec.OwnerReferences[0].Kind != "Secret" {
		t.Errorf("owner references %+v", rec.OwnerReferences)
	}

	// A content change: Relevant, dated when it was observed, at nanosecond precision.
	before := time.Now()
	update(t, s, func(s *corev1.Secret) { s.Data["password"] = []byte("v2") })
	ev = o.expect("Secret", "db", router.ClassRelevant)
	received := time.Now()
	if ev.ChangeTime.Before(before.Truncate(time.Second)) || ev.ChangeTime.After(received) {
		t.Errorf("relevant change time %s is not between the update (%s) and the event (%s)", ev.ChangeTime, before, received)
	}
	rec = record(t, ns, "Secret", "db")
	if !rec.Spec.LastRelevantChangeTime.Equal(ev.ChangeTime) || rec.Spec.LastRelevantChangeTime.Nanosecond() != ev.ChangeTime.Nanosecond() {
		t.Errorf("record change time %s, event %s: must match to the nanosecond", rec.Spec.LastRelevantChangeTime.Time, ev.ChangeTime)
	}
	if rec.Spec.LastRelevantChangeTime.Time.Equal(rec.Spec.LastRelevantChangeTime.Truncate(time.Second)) {
		t.Errorf("record change time %s lost its sub-second part", rec.Spec.LastRelevantChangeTime.Time)
	}
	if rec.Spec.Class != kickv1alpha1.ObservationRelevant || rec.Spec.LastRelevantResourceVersion != s.ResourceVersion ||
		rec.Spec.RelevantFingerprint != o.keys.Secret(s) {
		t.Errorf("relevant record %+v (secret rv %s)", rec.Spec, s.ResourceVersion)
	}
	recRV := rec.ResourceVersion

	// Labels only: no event, no record write.
	meta := o.observed("Secret", "MetaOnly")
	update(t, s, func(s *corev1.Secret) { s.Labels = map[string]string{"tier": "backend"} })
	o.waitObserved("Secret", "MetaOnly", meta+1)
	o.expectNone("Secret", "db", "label-only change")

	// The same data written again (with an annotation, so the write is not a no-op).
	update(t, s, func(s *corev1.Secret) {
		s.Data = map[string][]byte{"password": []byte("v2")}
		s.Annotations = map[string]string{"touched": "yes"}
	})
	o.waitObserved("Secret", "MetaOnly", meta+2)
	o.expectNone("Secret", "db", "identical rewrite")

	// An annotation only.
	update(t, s, func(s *corev1.Secret) { s.Annotations = map[string]string{"touched": "again"} })
	o.waitObserved("Secret", "MetaOnly", meta+3)
	o.expectNone("Secret", "db", "annotation-only change")
	if rec := record(t, ns, "Secret", "db"); rec.ResourceVersion != recRV {
		t.Errorf("metadata-only writes rewrote the record (resourceVersion %s -> %s)", recRV, rec.ResourceVersion)
	}
	if n := o.observed("Secret", "Relevant"); n != 1 {
		t.Errorf("one content change classified Relevant %v times", n)
	}
}

// TestContentChangeUnderMetadataOnlyCache: with Secrets cached as metadata only, a content
// change of a consumed Secret is still classified Relevant exactly once, metadata-only
// changes stay inert, and the Secret is read past the cache only when its resourceVersion
// moved past its record's.
func TestContentChangeUnderMetadataOnlyCache(t *testing.T) {
	env := cluster.Get(t)
	ns, keyNS := env.Namespace(t), env.Namespace(t)
	o := startObserver(t, ns, keyNS)

	s := newSecret(ns, "db", map[string]string{"password": "v1"})
	create(t, s)
	create(t, deployment(ns, "web", secretEnv("db", "password")))
	o.expect("Secret", "db", router.ClassBaseline)

	update(t, s, func(s *corev1.Secret) { s.Data["password"] = []byte("v2") })
	o.expect("Secret", "db", router.ClassRelevant)
	reads := o.liveReadsOf("Secret", "db")

	// A new consumer re-observes the Secret at the resourceVersion its record was written
	// for: classified from the record, without reading the Secret again.
	noChange := o.observed("Secret", "NoChange")
	create(t, deployment(ns, "api", secretEnv("db", "password")))
	o.waitObserved("Secret", "NoChange", noChange+1)
	if got := o.liveReadsOf("Secret", "db"); got != reads {
		t.Errorf("an unchanged Secret was read past the cache (%d reads, before %d)", got, reads)
	}

	meta := o.observed("Secret", "MetaOnly")
	update(t, s, func(s *corev1.Secret) { s.Labels = map[string]string{"tier": "backend"} })
	o.waitObserved("Secret", "MetaOnly", meta+1)
	update(t, s, func(s *corev1.Secret) { s.Annotations = map[string]string{"note": "x"} })
	o.waitObserved("Secret", "MetaOnly", meta+2)
	o.expectNone("Secret", "db", "metadata-only changes")
	if n := o.observed("Secret", "Relevant"); n != 1 {
		t.Errorf("one content change classified Relevant %v times", n)
	}
	if rec := record(t, ns, "Secret", "db"); rec.Spec.RelevantFingerprint != o.keys.Secret(s) || rec.Spec.Class != kickv1alpha1.ObservationRelevant {
		t.Errorf("record %+v", rec.Spec)
	}

	// The next content change is seen too, once.
	update(t, s, func(s *corev1.Secret) { s.Data["password"] = []byte("v3") })
	o.expect("Secret", "db", router.ClassRelevant)
	update(t, s, func(s *corev1.Secret) { s.Labels = map[string]string{"tier": "barrier"} })
	o.waitObserved("Secret", "MetaOnly", meta+3)
	o.expectNone("Secret", "db", "after the second content change")
	if n := o.observed("Secret", "Relevant"); n != 2 {
		t.Errorf("two content changes classified Relevant %v times", n)
	}
}

func TestUnconsumedSecretGetsNoRecord(t *testing.T) {
	env := cluster.Get(t)
	ns, keyNS := env.Namespace(t), env.Namespace(t)
	o := startObserver(t, ns, keyNS)

	create(t, newSecret(ns, "lonely", map[string]string{"a": "b"}))
	create(t, deployment(ns, "web", func(*corev1.PodSpec) {})) // consumes nothing
	// A consumed canary created after it: once the canary is baselined, the
	// lonely Secret's event has been seen too (one informer, in order).
	create(t, newSecret(ns, "canary", map[string]string{"a": "b"}))
	create(t, deployment(ns, "canary-reader", secretEnv("canary", "a")))
	o.expect("Secret", "canary", router.ClassBaseline)
	if n := o.observed("Secret", "Unconsumed"); n != 0 {
		t.Errorf("a Secret nobody consumes reached the source controller's queue (%v reconciles)", n)
	}
	if rec := record(t, ns, "Secret", "lonely"); rec != nil {
		t.Errorf("a Secret nobody consumes got a record: %+v", rec.Spec)
	}
	o.expectNone("Secret", "lonely", "unconsumed Secret")
	if n := o.liveReadsOf("Secret", "lonely"); n != 0 {
		t.Errorf("a Secret nobody consumes was read past the cache %d times", n)
	}

	// A workload that starts consuming it later gives it a baseline, dated from its last write.
	create(t, deployment(ns, "reader", secretEnv("lonely", "a")))
	ev := o.expect("Secret", "lonely", router.ClassBaseline)
	if lambda := lastWrite(t, newSecret(ns, "lonely", nil)); !ev.ChangeTime.Equal(lambda) {
		t.Errorf("baseline change time %s, want λ %s", ev.ChangeTime, lambda)
	}

	// So does a Pod template change that adds a reference.
	create(t, newSecret(ns, "later", map[string]string{"k": "v"}))
	create(t, newSecret(ns, "canary2", map[string]string{"a": "b"}))
	create(t, deployment(ns, "canary2-reader", secretEnv("canary2", "a")))
	o.expect("Secret", "canary2", router.ClassBaseline)
	o.expectNone("Secret", "later", "a Secret nobody consumes yet")
	update(t, deployment(ns, "web", nil), func(d *appsv1.Deployment) { secretEnv("later", "k")(&d.Spec.Template.Spec) })
	o.expect("Secret", "later", router.ClassBaseline)
}

// TestEnqueueSourcesOf: when a policy starts managing a workload, its sources get baselines.
func TestEnqueueSourcesOf(t *testing.T) {
	env := cluster.Get(t)
	ns, keyNS := env.Namespace(t), env.Namespace(t)
	var managed atomic.Bool
	o := startObserverWith(t, ns, keyNS, func(_ context.Context, w client.Object) (bool, func(map[string]string) bool) {
		return managed.Load() || w.GetName() == "barrier", nil
	})
	// The workload first (its Secret does not exist yet), then the Secret: an unmanaged
	// workload's sources are neither queued nor cached, so only EnqueueSourcesOf can bring it.
	d := deployment(ns, "web", secretEnv("db", "password"))
	create(t, d)
	create(t, newSecret(ns, "db", map[string]string{"password": "v1"}))
	// A managed workload's Secret, created after both, is observed after them.
	create(t, newSecret(ns, "b", map[string]string{"k": "v1"}))
	create(t, deployment(ns, "barrier", secretEnv("b", "k")))
	o.expect("Secret", "b", router.ClassBaseline)
	if record(t, ns, "Secret", "db") != nil {
		t.Fatal("a Secret consumed only by an unmanaged workload got a record")
	}
	if o.cachedSource(ns, "db") != nil || o.liveReadsOf("*v1.PartialObjectMetadata", "db") != 0 {
		t.Fatal("a Secret consumed only by an unmanaged workload was read or cached")
	}

	managed.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), eventTimeout)
	defer cancel()
	if err := o.rec.EnqueueSourcesOf(ctx, d); err != nil {
		t.Fatal(err)
	}
	o.expect("Secret", "db", router.ClassBaseline)
}

func TestConfigMapInProjectedVolume(t *testing.T) {
	env := cluster.Get(t)
	ns, keyNS := env.Namespace(t), env.Namespace(t)
	o := startObserver(t, ns, keyNS)

	cm := &corev1.ConfigMap{Data: map[string]string{"app.yaml": "port: 80"}}
	cm.Namespace, cm.Name = ns, "settings"
	create(t, cm)
	create(t, deployment(ns, "web", func(p *corev1.PodSpec) {
		p.Volumes = []corev1.Volume{{Name: "cfg", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: []corev1.VolumeProjection{{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}},
		}}}}
	}))

	ev := o.expect("ConfigMap", "settings", router.ClassBaseline)
	if lambda := lastWrite(t, cm); !ev.ChangeTime.Equal(lambda) {
		t.Errorf("baseline change time %s, want λ %s", ev.ChangeTime, lambda)
	}
	if rec := record(t, ns, "ConfigMap", "settings"); rec == nil || rec.Spec.Source.Kind != kickv1alpha1.SourceConfigMap {
		t.Fatalf("record %+v", rec)
	}

	before := time.Now()
	update(t, cm, func(c *corev1.ConfigMap) { c.Data["app.yaml"] = "port: 8080" })
	ev = o.expect("ConfigMap", "settings", router.ClassRelevant)
	if ev.ChangeTime.Before(before.Truncate(time.Second)) {
		t.Errorf("relevant change time %s before the update %s", ev.ChangeTime, before)
	}
	if rec := record(t, ns, "ConfigMap", "settings"); !rec.Spec.LastRelevantChangeTime.Equal(ev.ChangeTime) {
		t.Errorf("record change time %s, event %s", rec.Spec.LastRelevantChangeTime.Time, ev.ChangeTime)
	}
}

func TestDeletedSecretTakesItsRecord(t *testing.T) {
	env := cluster.Get(t)
	ns, keyNS := env.Namespace(t), env.Namespace(t)
	o := startObserver(t, ns, keyNS)

	s := newSecret(ns, "db", map[string]string{"password": "v1"})
	create(t, s)
	create(t, deployment(ns, "web", secretEnv("db", "password")))
	o.expect("Secret", "db", router.ClassBaseline)
	if record(t, ns, "Secret", "db") == nil {
		t.Fatal("no record")
	}
	if err := env.Client.Delete(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	// The kube-controller-manager's garbage collector follows the record's ownerReference.
	cluster.Eventually(t, gcTimeout, "the record to be garbage-collected", func() (bool, error) {
		return record(t, ns, "Secret", "db") == nil, nil
	})
	o.expectNone("Secret", "db", "deleted Secret")
}

func TestCacheHoldsNoSecretData(t *testing.T) {
	env := cluster.Get(t)
	ns, keyNS := env.Namespace(t), env.Namespace(t)
	o := startObserver(t, ns, keyNS)

	const value = "correct-horse-battery-staple"
	s := newSecret(ns, "db", map[string]string{"password": value})
	s.Annotations = map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"stringData":{"password":"` + value + `"}}`}
	create(t, s)
	big := newSecret(ns, "big", nil)
	big.Data["blob"] = bytes.Repeat([]byte{'x'}, 1<<20) // the API server's limit for one Secret
	create(t, big)
	create(t, deployment(ns, "web", func(p *corev1.PodSpec) {
		secretEnv("db", "password")(p)
		p.Volumes = []corev1.Volume{{Name: "big", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "big"}}}}
	}))
	o.expect("Secret", "db", router.ClassBaseline)
	o.expect("Secret", "big", router.ClassBaseline)

	if rec := record(t, ns, "Secret", "big"); rec == nil || rec.Spec.RelevantFingerprint != o.keys.Secret(big) {
		t.Errorf("1 MiB Secret: record %+v", rec)
	}
	for _, name := range []string{"db", "big"} {
		cached := observe.SourceMetadata("Secret")
		if err := o.mgr.GetClient().Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, cached); err != nil {
			t.Fatal(err)
		}
		if cached.UID == "" || cached.ResourceVersion == "" || cached.Name != name {
			t.Errorf("cached %s lost its identity: %+v", name, cached.ObjectMeta)
		}
		if len(cached.Annotations) != 0 || len(cached.ManagedFields) != 0 || len(cached.OwnerReferences) != 0 {
			t.Errorf("cached %s keeps annotations=%d managedFields=%d ownerReferences=%d", name,
				len(cached.Annotations), len(cached.ManagedFields), len(cached.OwnerReferences))
		}
		raw, _ := json.Marshal(cached)
		if strings.Contains(string(raw), value) || len(raw) > 1024 {
			t.Errorf("cached %s holds content (%d bytes): %.300s", name, len(raw), raw)
		}
	}
	// Secrets and ConfigMaps are only ever watched metadata-only: a typed informer would list
	// every one of them with its data.
	var sources []string
	for _, inf := range o.startedInformers() {
		switch inf {
		case "*v1.Secret", "*v1.ConfigMap":
			t.Errorf("the manager's cache started a typed informer %s", inf)
		case "metadata:Secret", "metadata:ConfigMap":
			sources = append(sources, inf)
		}
	}
	slices.Sort(sources)
	if !slices.Equal(sources, []string{"metadata:ConfigMap", "metadata:Secret"}) {
		t.Errorf("source informers %v, want one metadata-only informer per kind (all: %v)", sources, o.startedInformers())
	}
}

// TestChangesWhileTheManagerIsDown: the records make the observer restart-safe.
func TestChangesWhileTheManagerIsDown(t *testing.T) {
	env := cluster.Get(t)
	ns, keyNS := env.Namespace(t), env.Namespace(t)

	o := startObserver(t, ns, keyNS)
	s := newSecret(ns, "db", map[string]string{"password": "v1"})
	create(t, s)
	create(t, deployment(ns, "web", secretEnv("db", "password")))
	o.expect("Secret", "db", router.ClassBaseline)
	o.stop()

	// Content changed while down: exactly one Relevant event from the next manager.
	before := time.Now()
	update(t, s, func(s *corev1.Secret) { s.Data["password"] = []byte("v2") })
	o = startObserver(t, ns, keyNS)
	ev := o.expect("Secret", "db", router.ClassRelevant)
	if ev.ChangeTime.Before(before.Truncate(time.Second)) {
		t.Errorf("change time %s before the change %s", ev.ChangeTime, before)
	}
	// Barrier: a later metadata write is processed after everything the start-up caused.
	update(t, s, func(s *corev1.Secret) { s.Labels = map[string]string{"after": "restart"} })
	o.waitObserved("Secret", "MetaOnly", 1)
	o.expectNone("Secret", "db", "after the one Relevant event")
	o.stop()

	// Only labels changed while down: nothing to report.
	update(t, s, func(s *corev1.Secret) { s.Labels = map[string]string{"after": "second-restart"} })
	recRV := record(t, ns, "Secret", "db").ResourceVersion
	o = startObserver(t, ns, keyNS)
	o.waitObserved("Secret", "MetaOnly", 1)
	o.expectNone("Secret", "db", "labels changed while down")
	if rec := record(t, ns, "Secret", "db"); rec.ResourceVersion != recRV {
		t.Error("a metadata-only change while down rewrote the record")
	}
	o.stop()

	// A new installation key: records are re-baselined quietly, θ is kept.
	prev := record(t, ns, "Secret", "db").Spec
	var keySecret corev1.Secret
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: keyNS, Name: "kick-fingerprint-key"}, &keySecret); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(context.Background(), &keySecret); err != nil {
		t.Fatal(err)
	}
	o = startObserver(t, ns, keyNS)
	o.waitObserved("Secret", "Rebaseline", 1)
	o.expectNone("Secret", "db", "new key")
	rec := record(t, ns, "Secret", "db")
	if rec.Spec.FingerprintKeyID != o.keys.KeyID() || rec.Spec.FingerprintKeyID == prev.FingerprintKeyID ||
		!rec.Spec.LastRelevantChangeTime.Equal(prev.LastRelevantChangeTime.Time) {
		t.Errorf("after a key change: record %+v, before %+v", rec.Spec, prev)
	}
	// ... and changes are seen under the new key.
	update(t, s, func(s *corev1.Secret) { s.Data["password"] = []byte("v3") })
	o.expect("Secret", "db", router.ClassRelevant)
}
