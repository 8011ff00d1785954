package kubectlkick

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/integration/fixture"
)

// explain says how many keys a workload reads and that the manager counts
// only their changes, and on the Secret which changes count for each
// consumer; it never names a key.
func TestExplainKeys(t *testing.T) {
	env := cluster.Get(t)
	f := newFx(t)
	env.StartManager(t, fixture.ManagerNamespace)
	f.Policy("all", "discovery: {workloadSelector: {}}\nrestart: {minInterval: 0s}")
	const read, other = "kx-alpha-key", "kx-bravo-key"
	f.Secret("db", map[string]string{read: "1", other: "1"}, nil)
	f.Deployment("reads-one", 1, corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10",
		Env: []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: read}}}}}}})
	f.Deployment("every", 1, fixture.PodSpec("db"))
	f.WaitAvailable("reads-one")
	f.WaitAvailable("every")
	cluster.Eventually(t, 30*time.Second, "the record's keys", func() (bool, error) {
		rec := f.WaitObservation("db")
		return rec.Spec.Keys != nil, nil
	})

	var all strings.Builder
	code, out, _ := f.kick("explain", "deployment/reads-one")
	all.WriteString(out)
	if code != 0 || !strings.Contains(out, "reads 1 of 2 keys; the manager counts only changes of the keys read") {
		t.Errorf("explain deployment/reads-one = %d:\n%s", code, out)
	}
	code, out, _ = f.kick("explain", "secret/db")
	all.WriteString(out)
	for _, want := range []string{"counted: changes of the 1 key(s) it reads", "counted: every key"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("explain secret/db = %d does not say %q:\n%s", code, want, out)
		}
	}
	code, out, _ = f.kick("explain", "deployment/reads-one", "-o", "json")
	all.WriteString(out)
	if code != 0 || !strings.Contains(out, `"keysRead": 1`) || !strings.Contains(out, `"keyEntries": 2`) {
		t.Errorf("explain -o json = %d:\n%s", code, out)
	}
	if s := all.String(); strings.Contains(s, read) || strings.Contains(s, other) {
		t.Errorf("explain names a key:\n%s", s)
	}
}
