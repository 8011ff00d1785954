package pipeline

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/integration/fixture"
)

const pause = "registry.k8s.io/pause:3.10"

// keyEnv reads one key of a Secret into an environment variable.
func keyEnv(secret, key string) corev1.EnvVar {
	return corev1.EnvVar{Name: "V_" + strings.ToUpper(strings.NewReplacer("-", "_", ".", "_").Replace(key)), ValueFrom: &corev1.EnvVarSource{
		SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key}}}
}

func container(env ...corev1.EnvVar) corev1.Container {
	return corev1.Container{Name: "app", Image: pause, Env: env}
}

// restarts counts the restarts of each Deployment from the Deployments
// themselves: every restart adds one ReplicaSet.
type restarts struct {
	f    *fixture.F
	want map[string]int
}

func newRestarts(f *fixture.F, names ...string) *restarts {
	r := &restarts{f: f, want: map[string]int{}}
	for _, n := range names {
		f.WaitAvailable(n)
		r.want[n] = 0
	}
	return r
}

// after makes a change, waits until each Deployment in expect restarted
// once more, then (past a barrier: the manager handled everything queued
// before it) checks the exact count of every Deployment.
func (r *restarts) after(what string, change func(), expect ...string) {
	r.f.T.Helper()
	change()
	for _, n := range expect {
		r.want[n]++
	}
	for _, n := range expect {
		want := r.want[n] + 1
		cluster.Eventually(r.f.T, 60*time.Second, fmt.Sprintf("%s: deployment/%s restarted (%d ReplicaSets)", what, n, want), func() (bool, error) {
			got := r.f.ReplicaSets(n)
			return len(got) == want, fmt.Errorf("ReplicaSets %v", got)
		})
	}
	r.f.Barrier()
	for _, n := range slices.Sorted(maps.Keys(r.want)) {
		if got := len(r.f.ReplicaSets(n)) - 1; got != r.want[n] {
			r.f.T.Errorf("%s: deployment/%s restarted %d times, want %d", what, n, got, r.want[n])
		}
	}
}

// TestKeyLevelRestarts: five Deployments share one Secret and read it in
// different ways. Each change restarts exactly the readers of the changed
// key, and the one that reads every key (envFrom) restarts for every
// change, an added and a removed key included.
func TestKeyLevelRestarts(t *testing.T) {
	f := fixture.Setup(t)
	f.Policy("all", selectAll+"\nrestart: {minInterval: 0s}")
	// Distinctive names, so that the leak check below finds any copy.
	a, b, c, d, e := "kl-alpha-key", "kl-bravo-key", "kl-charlie-key", "kl-delta-key", "kl-echo-key"
	data := map[string]string{a: "1", b: "1", c: "1", d: "1"}
	f.Secret("shared", data, nil)
	f.Deployment("reads-a", 1, corev1.PodSpec{Containers: []corev1.Container{container(keyEnv("shared", a))}})
	// The sidecar (an init container that keeps running) reads b.
	f.Deployment("reads-b", 1, corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "sidecar", Image: pause, RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways),
			Env: []corev1.EnvVar{keyEnv("shared", b)}}},
		Containers: []corev1.Container{container()},
	})
	f.Deployment("every", 1, fixture.PodSpec("shared"))
	f.Deployment("items", 1, corev1.PodSpec{
		Containers: []corev1.Container{{Name: "app", Image: pause, VolumeMounts: []corev1.VolumeMount{{Name: "s", MountPath: "/s"}}}},
		Volumes: []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: "shared", Items: []corev1.KeyToPath{{Key: c, Path: "c.txt"}}}}}},
	})
	f.Deployment("subpath", 1, corev1.PodSpec{
		Containers: []corev1.Container{{Name: "app", Image: pause, VolumeMounts: []corev1.VolumeMount{{Name: "s", MountPath: "/etc/d", SubPath: d}}}},
		Volumes:    []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "shared"}}}},
	})
	r := newRestarts(f, "reads-a", "reads-b", "every", "items", "subpath")
	f.WaitObservation("shared")

	set := func(k, v string) func() {
		return func() {
			if v == "" {
				delete(data, k)
			} else {
				data[k] = v
			}
			f.SetSecret("shared", data)
		}
	}
	r.after("key a changed", set(a, "2"), "reads-a", "every")
	r.after("key b changed", set(b, "2"), "reads-b", "every")
	r.after("key c changed (items)", set(c, "2"), "items", "every")
	r.after("key d changed (subPath)", set(d, "2"), "subpath", "every")
	r.after("key e added", set(e, "1"), "every")
	r.after("key e removed", set(e, ""), "every")
	r.after("keys a and d changed together", func() { data[a], data[d] = "3", "3"; f.SetSecret("shared", data) }, "reads-a", "subpath", "every")

	rec := f.WaitObservation("shared")
	if rec.Spec.Keys == nil || rec.Spec.Keys.Count != 4 || len(rec.Spec.Keys.Entries) != 4 {
		t.Fatalf("record keys %+v, want 4 entries", rec.Spec.Keys)
	}
	assertNoKeyNames(t, f, "shared", a, b, c, d, e)
}

// TestKeyLevelConfigMapBinaryData: a ConfigMap's binaryData keys count
// like its data keys, and a change of a key nobody reads is recorded and
// restarts nobody.
func TestKeyLevelConfigMapBinaryData(t *testing.T) {
	f := fixture.Setup(t)
	f.Policy("all", selectAll+"\nrestart: {minInterval: 0s}")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "assets"}, Data: map[string]string{"conf": "x"},
		BinaryData: map[string][]byte{"logo.png": {0x89, 'P', 'N', 'G'}, "unused.bin": {1}}}
	f.Create(cm)
	volume := corev1.Volume{Name: "a", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "assets"}}}}
	f.Deployment("logo", 1, corev1.PodSpec{
		Containers: []corev1.Container{{Name: "app", Image: pause, VolumeMounts: []corev1.VolumeMount{{Name: "a", MountPath: "/logo.png", SubPath: "logo.png"}}}},
		Volumes:    []corev1.Volume{volume},
	})
	f.Deployment("conf", 1, corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: pause, Env: []corev1.EnvVar{{Name: "CONF",
		ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "assets"}, Key: "conf"}}}}}}})
	r := newRestarts(f, "logo", "conf")
	recordOf := func() *kickv1alpha1.SourceObservation {
		var rec kickv1alpha1.SourceObservation
		cluster.Eventually(t, 30*time.Second, "the record of ConfigMap assets", func() (bool, error) {
			err := f.Env.Client.Get(f.Ctx, client.ObjectKey{Namespace: f.NS, Name: kickv1alpha1.ObservationName("ConfigMap", "assets")}, &rec)
			return err == nil && rec.Spec.Keys != nil, err
		})
		return &rec
	}
	before := recordOf()
	update := func(mutate func(*corev1.ConfigMap)) func() {
		return func() {
			var cur corev1.ConfigMap
			if err := f.Env.Client.Get(f.Ctx, client.ObjectKey{Namespace: f.NS, Name: "assets"}, &cur); err != nil {
				t.Fatal(err)
			}
			mutate(&cur)
			if err := f.Env.Client.Update(f.Ctx, &cur); err != nil {
				t.Fatal(err)
			}
		}
	}
	r.after("binaryData key nobody reads changed", update(func(c *corev1.ConfigMap) { c.BinaryData["unused.bin"] = []byte{2} }))
	cluster.Eventually(t, 30*time.Second, "the unread change to be recorded", func() (bool, error) {
		rec := recordOf()
		return rec.Spec.RelevantFingerprint != before.Spec.RelevantFingerprint, nil
	})
	r.after("binaryData key logo.png changed", update(func(c *corev1.ConfigMap) { c.BinaryData["logo.png"] = []byte{0x89, 'P', 'N', 'G', 2} }), "logo")
	r.after("data key conf changed", update(func(c *corev1.ConfigMap) { c.Data["conf"] = "y" }), "conf")
}

// TestKeyLevelOptOut: under restart.keys All every change of the Secret
// restarts every consumer, as before key-level precision.
func TestKeyLevelOptOut(t *testing.T) {
	f := fixture.Setup(t)
	f.Policy("all", selectAll+"\nrestart: {minInterval: 0s, keys: All}")
	data := map[string]string{"a": "1", "b": "1"}
	f.Secret("db", data, nil)
	f.Deployment("reads-a", 1, corev1.PodSpec{Containers: []corev1.Container{container(keyEnv("db", "a"))}})
	r := newRestarts(f, "reads-a")
	f.WaitObservation("db")
	r.after("key b changed", func() { data["b"] = "2"; f.SetSecret("db", data) }, "reads-a")
	f.PatchPolicy("all", `{"spec":{"restart":{"keys":"Read"}}}`)
	r.after("key b changed under keys Read", func() { data["b"] = "3"; f.SetSecret("db", data) })
}

// TestKeyLevelUpgrade: records written before KICK kept per-key history
// (the previous release's shape: no spec.keys) are upgraded quietly. The
// manager starts on such a record: nothing restarts, the record gains its
// keys without its change time moving, and the first change after the
// upgrade is judged key by key.
func TestKeyLevelUpgrade(t *testing.T) {
	f := fixture.Setup(t)
	f.Policy("all", selectAll+"\nrestart: {minInterval: 0s}")
	data := map[string]string{"a": "1", "b": "1"}
	f.Secret("db", data, nil)
	f.Deployment("reads-a", 1, corev1.PodSpec{Containers: []corev1.Container{container(keyEnv("db", "a"))}})
	f.Deployment("every", 1, fixture.PodSpec("db"))
	r := newRestarts(f, "reads-a", "every")
	rec := f.WaitObservation("db")
	cluster.Eventually(t, 30*time.Second, "the record's keys", func() (bool, error) {
		err := f.Env.Client.Get(f.Ctx, client.ObjectKeyFromObject(rec), rec)
		return err == nil && rec.Spec.Keys != nil, err
	})

	// Turn the record into the previous release's shape while no manager runs.
	f.Mgr.Stop()
	old := rec.DeepCopy()
	old.Spec.Keys = nil
	if err := f.Env.Client.Update(f.Ctx, old); err != nil {
		t.Fatal(err)
	}
	f.Mgr = f.Env.StartManager(t, fixture.ManagerNamespace)

	cluster.Eventually(t, 60*time.Second, "the upgraded manager to add the keys", func() (bool, error) {
		var up kickv1alpha1.SourceObservation
		if err := f.Env.Client.Get(f.Ctx, client.ObjectKeyFromObject(rec), &up); err != nil {
			return false, err
		}
		if up.Spec.Keys == nil {
			return false, fmt.Errorf("no keys yet")
		}
		if !up.Spec.LastRelevantChangeTime.Equal(old.Spec.LastRelevantChangeTime.Time) || up.Spec.Class != old.Spec.Class {
			t.Fatalf("the upgrade moved the record's change: %v %s, was %v %s", up.Spec.LastRelevantChangeTime, up.Spec.Class,
				old.Spec.LastRelevantChangeTime, old.Spec.Class)
		}
		return true, nil
	})
	r.after("the upgrade", func() {})
	r.after("key b changed after the upgrade", func() { data["b"] = "2"; f.SetSecret("db", data) }, "every")
	r.after("key a changed after the upgrade", func() { data["a"] = "2"; f.SetSecret("db", data) }, "reads-a", "every")
}

// assertNoKeyNames fails when a key name of the Secret, or a key id or
// print of its record, appears in the manager's log, an Event of the
// namespace or a KickRequest; and when a key name appears in the record.
func assertNoKeyNames(t *testing.T, f *fixture.F, secret string, keys ...string) {
	t.Helper()
	var out strings.Builder
	out.WriteString(f.Mgr.Log())
	var events corev1.EventList
	if err := f.Env.Client.List(f.Ctx, &events, client.InNamespace(f.NS)); err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		out.WriteString(e.Message + "\n")
	}
	for _, kr := range f.Requests() {
		fmt.Fprintf(&out, "%+v\n%+v\n", kr.Annotations, kr.Status)
	}
	var rec kickv1alpha1.SourceObservation
	if err := f.Env.Client.Get(f.Ctx, client.ObjectKey{Namespace: f.NS, Name: kickv1alpha1.ObservationName("Secret", secret)}, &rec); err != nil {
		t.Fatal(err)
	}
	outside := out.String()
	for _, e := range rec.Spec.Keys.Entries {
		for _, s := range []string{e.ID, e.Fingerprint} {
			if strings.Contains(outside, s) {
				t.Errorf("the key id or print %q appears in the log, an Event or a request", s)
			}
		}
	}
	record := fmt.Sprintf("%+v", rec)
	for _, k := range keys {
		if strings.Contains(outside, k) || strings.Contains(record, k) {
			t.Errorf("key name %q appears in the log, an Event, a request or the record", k)
		}
	}
}
