package kubectlkick

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/integration/fixture"
)

// explain agrees with the manager on a workload that reads one key of a
// shared Secret. After a change of the key it does not read (the manager
// restarts only the workload that reads every key), a caller who may read
// the Secret gets the manager's verdict (fresh) with the key read named;
// a caller who may not gets the verdict by the whole object (stale), told
// why, and no key name anywhere.
func TestExplainKeys(t *testing.T) {
	env := cluster.Get(t)
	f := newFx(t)
	env.StartManager(t, fixture.ManagerNamespace)
	f.Policy("all", "discovery: {workloadSelector: {}}\nrestart: {minInterval: 0s}")
	const read, other = "kx-alpha-key", "kx-bravo-key"
	// Distinctive values: no output may show one, whoever asks.
	data := map[string]string{read: "kx-value-alpha-1", other: "kx-value-bravo-1"}
	f.Secret("db", data, nil)
	f.Deployment("reads-one", 1, corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10",
		Env: []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: read}}}}}}})
	f.Deployment("every", 1, fixture.PodSpec("db"))
	f.WaitAvailable("reads-one")
	f.WaitAvailable("every")
	base := f.WaitObservation("db")
	cluster.Eventually(t, 30*time.Second, "the record's keys", func() (bool, error) {
		base = f.WaitObservation("db")
		return base.Spec.Keys.Ordered(), nil
	})

	// A viewer who may read the workloads and KICK's objects, not Secrets.
	viewer := roleKubeconfig(t, env, f.NS, "viewer", []rbacv1.PolicyRule{
		{APIGroups: []string{"apps"}, Resources: []string{"deployments", "statefulsets", "daemonsets", "replicasets"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{"argoproj.io"}, Resources: []string{"rollouts"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{kickv1alpha1.GroupVersion.Group}, Resources: []string{"kickpolicies", "kickrequests", "kickholds", "sourceobservations"}, Verbs: []string{"get", "list"}},
	})

	data[other] = "kx-value-bravo-2"
	f.SetSecret("db", data)
	f.WaitReplicaSets("every", 2)
	f.Barrier()
	if rs := f.ReplicaSets("reads-one"); len(rs) != 1 {
		t.Fatalf("the manager restarted reads-one for a key it does not read: %v", rs)
	}
	cluster.Eventually(t, 30*time.Second, "the change in the record", func() (bool, error) {
		rec := f.WaitObservation("db")
		return rec.Spec.LastRelevantChangeTime.After(base.Spec.LastRelevantChangeTime.Time), nil
	})

	// The admin may read the Secret: the manager's verdict, the key named.
	var admin strings.Builder
	defer func() {
		if s := admin.String(); strings.Contains(s, "kx-value") {
			t.Errorf("explain shows a value of the Secret:\n%s", s)
		}
	}()
	code, out, _ := f.kick("explain", "deployment/reads-one")
	admin.WriteString(out)
	for _, want := range []string{"Verdict:        fresh", "judged key by key as the manager does", "keys read: " + read + " unchanged since"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("explain deployment/reads-one (may read the Secret) = %d does not say %q:\n%s", code, want, out)
		}
	}
	if strings.Contains(out, other) {
		t.Errorf("explain names the key the workload does not read:\n%s", out)
	}
	code, out, _ = f.kick("explain", "deployment/reads-one", "-o", "json")
	admin.WriteString(out)
	if code != 0 || !strings.Contains(out, `"verdict": "Fresh"`) || !strings.Contains(out, `"name": "`+read+`"`) {
		t.Errorf("explain -o json (may read the Secret) = %d:\n%s", code, out)
	}
	code, out, _ = f.kick("explain", "secret/db")
	admin.WriteString(out)
	for _, want := range []string{"counted: changes of " + read, "counted: every key"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("explain secret/db (may read it) = %d does not say %q:\n%s", code, want, out)
		}
	}

	// The viewer may not: the whole object, and why; no key is named.
	var seen strings.Builder
	code, out, _ = f.kickAs(viewer, f.NS, "explain", "deployment/reads-one")
	seen.WriteString(out)
	for _, want := range []string{"Verdict:        stale", "reads 1 of 2 keys",
		"the manager counts only changes of the keys read; shown: the newest change of any key, because your credentials may not read Secret db"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("explain deployment/reads-one (may not read the Secret) = %d does not say %q:\n%s", code, want, out)
		}
	}
	code, out, _ = f.kickAs(viewer, f.NS, "explain", "deployment/reads-one", "-o", "json")
	seen.WriteString(out)
	if code != 0 || !strings.Contains(out, `"keysRead": 1`) || !strings.Contains(out, `"keyEntries": 2`) || strings.Contains(out, `"keys":`) {
		t.Errorf("explain -o json (may not read the Secret) = %d:\n%s", code, out)
	}
	code, out, _ = f.kickAs(viewer, f.NS, "explain", "secret/db")
	seen.WriteString(out)
	if code != 0 || !strings.Contains(out, "counted: changes of the 1 key(s) it reads") {
		t.Errorf("explain secret/db (may not read it) = %d:\n%s", code, out)
	}
	if s := seen.String(); strings.Contains(s, read) || strings.Contains(s, other) || strings.Contains(s, "kx-value") {
		t.Errorf("explain names a key to a caller who may not read the Secret:\n%s", s)
	}
}
