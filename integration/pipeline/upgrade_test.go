package pipeline

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/integration/fixture"
	"github.com/kick-operator/kick/restart/observe"
)

// The previous release's records. hack/upgrade-testdata.sh builds the
// manager at the last commit before key-level precision (bcf8ac8) into
// /tmp and runs TestCapturePreviousRelease with it, which lets that
// manager observe a small fixture on the local control plane and writes
// what it left into testdata/upgrade: the Secret as the API server stored
// it (its uid, write times and data: the record's fingerprint is bound to
// them), the record the old manager wrote, and the fingerprint key it
// generated (a throw-away test key).
const (
	upgradeNS        = "kick-upgrade"
	upgradeManagerNS = "kick-upgrade-system"
	upgradeData      = "testdata/upgrade"
)

// upgradeFixture is the workload side of the fixture: a Deployment that
// reads key a of Secret db, and one that reads every key.
func upgradeFixture(f *fixture.F) {
	f.Policy("all", selectAll+"\nrestart: {minInterval: 0s}")
	f.Deployment("reads-a", 1, corev1.PodSpec{Containers: []corev1.Container{container(keyEnv("db", "a"))}})
	f.Deployment("every", 1, fixture.PodSpec("db"))
}

// TestCapturePreviousRelease writes testdata/upgrade from a manager of the
// previous release (KICK_PREV_MANAGER, see hack/upgrade-testdata.sh); it
// does nothing otherwise.
func TestCapturePreviousRelease(t *testing.T) {
	bin := os.Getenv("KICK_PREV_MANAGER")
	if bin == "" {
		t.Skip("KICK_PREV_MANAGER is not set: hack/upgrade-testdata.sh runs this to capture the previous release's records")
	}
	env := cluster.Get(t)
	f := &fixture.F{T: t, Env: env, NS: upgradeNS, Ctx: context.Background()}
	create(t, env, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: upgradeNS}})
	f.Mgr = env.StartManagerBinary(t, bin, upgradeManagerNS)
	f.Secret("db", map[string]string{"a": "1", "b": "1"}, nil)
	upgradeFixture(f)
	f.WaitAvailable("reads-a")
	f.WaitAvailable("every")
	f.WaitObservation("db")
	// One change under the previous release, so the record is a Relevant
	// one, dated to the nanosecond.
	f.SetSecret("db", map[string]string{"a": "1", "b": "2"})
	var rec kickv1alpha1.SourceObservation
	cluster.Eventually(t, 60*time.Second, "the old manager to record the change", func() (bool, error) {
		err := env.Client.Get(f.Ctx, client.ObjectKey{Namespace: upgradeNS, Name: kickv1alpha1.ObservationName("Secret", "db")}, &rec)
		return err == nil && rec.Spec.Class == kickv1alpha1.ObservationRelevant, err
	})
	if rec.Spec.Keys != nil {
		t.Fatalf("%s keeps per-key history: not the previous release", bin)
	}
	var secret, key corev1.Secret
	for _, x := range []struct {
		obj *corev1.Secret
		key client.ObjectKey
	}{{&secret, client.ObjectKey{Namespace: upgradeNS, Name: "db"}}, {&key, client.ObjectKey{Namespace: upgradeManagerNS, Name: observe.KeySecretName}}} {
		if err := env.Client.Get(f.Ctx, x.key, x.obj); err != nil {
			t.Fatal(err)
		}
	}
	secret.ResourceVersion = ""
	rec.ResourceVersion, rec.UID, rec.Generation, rec.ManagedFields = "", "", 0, nil
	for name, obj := range map[string]any{"secret.json": &secret, "record.json": &rec, "fingerprint-key.json": key.Data} {
		data, err := json.MarshalIndent(obj, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(upgradeData, name), append(data, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestKeyLevelUpgradeFromPreviousRelease installs this manager over the
// records the previous release wrote (testdata/upgrade): the Secret is put
// back with its uid (straight into etcd, as the API server would never
// take a uid), the old record and fingerprint key as they were. The new
// manager restarts nothing while it adds the per-key history quietly (the
// record's change stays the old one), then judges the first key-level
// changes: key b, which only the envFrom reader reads, restarts it alone;
// key a restarts its reader and the envFrom reader, each exactly once.
func TestKeyLevelUpgradeFromPreviousRelease(t *testing.T) {
	env := cluster.Get(t)
	f := &fixture.F{T: t, Env: env, NS: upgradeNS, Ctx: context.Background()}
	var secret corev1.Secret
	var rec kickv1alpha1.SourceObservation
	var key map[string][]byte
	for name, obj := range map[string]any{"secret.json": &secret, "record.json": &rec, "fingerprint-key.json": &key} {
		data, err := os.ReadFile(filepath.Join(upgradeData, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, obj); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if rec.Spec.Keys != nil || !observe.OwnedBy(&rec, secret.UID) {
		t.Fatal("testdata/upgrade is not a previous release's record of its Secret")
	}
	create(t, env, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: upgradeNS}})
	create(t, env, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: upgradeManagerNS}})
	create(t, env, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: upgradeManagerNS, Name: observe.KeySecretName},
		Immutable: ptrTrue(), Data: key})
	putInEtcd(t, env, "/registry/secrets/"+upgradeNS+"/"+secret.Name, &secret)
	cluster.Eventually(t, 30*time.Second, "the restored Secret", func() (bool, error) {
		var got corev1.Secret
		err := env.Client.Get(f.Ctx, client.ObjectKeyFromObject(&secret), &got)
		return err == nil && got.UID == secret.UID, err
	})
	create(t, env, &rec)

	// The workloads ran under the previous release: started after the
	// Secret was written, they carry it.
	upgradeFixture(f)
	r := newRestarts(f, "reads-a", "every")
	f.Mgr = env.StartManager(t, upgradeManagerNS)
	var up kickv1alpha1.SourceObservation
	cluster.Eventually(t, 60*time.Second, "the new manager to add the per-key history", func() (bool, error) {
		if err := env.Client.Get(f.Ctx, client.ObjectKeyFromObject(&rec), &up); err != nil {
			return false, err
		}
		return up.Spec.Keys.Ordered(), fmt.Errorf("keys %+v", up.Spec.Keys)
	})
	if up.Spec.FingerprintKeyID != rec.Spec.FingerprintKeyID || up.Spec.RelevantFingerprint != rec.Spec.RelevantFingerprint ||
		!up.Spec.LastRelevantChangeTime.Equal(rec.Spec.LastRelevantChangeTime.Time) || up.Spec.Class != rec.Spec.Class {
		t.Fatalf("the upgrade changed the record's memory:\n was %+v\n now %+v", rec.Spec, up.Spec)
	}
	r.after("the upgrade", func() {})
	data := map[string]string{}
	for k, v := range secret.Data {
		data[k] = string(v)
	}
	r.after("key b changed after the upgrade", func() { data["b"] += "-new"; f.SetSecret("db", data) }, "every")
	r.after("key a changed after the upgrade", func() { data["a"] += "-new"; f.SetSecret("db", data) }, "reads-a", "every")
	if len(f.Requests()) == 0 {
		t.Fatal("no KickRequest: the restarts were not KICK's")
	}
}

func ptrTrue() *bool { b := true; return &b }

func create(t *testing.T, env *cluster.Env, obj client.Object) {
	t.Helper()
	if err := env.Client.Create(context.Background(), obj); err != nil {
		t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
	}
}

// putInEtcd writes obj, as JSON, under key in the control plane's etcd
// through etcd's JSON gateway (the API server reads JSON as well as
// protobuf from its storage).
func putInEtcd(t *testing.T, env *cluster.Env, key string, obj client.Object) {
	t.Helper()
	gvks, _, err := env.Scheme.ObjectKinds(obj)
	if err != nil {
		t.Fatal(err)
	}
	obj.GetObjectKind().SetGroupVersionKind(gvks[0])
	obj.SetResourceVersion("")
	value, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(map[string]string{
		"key":   base64.StdEncoding.EncodeToString([]byte(key)),
		"value": base64.StdEncoding.EncodeToString(value),
	})
	url := "http://127.0.0.1:" + strconv.Itoa(env.Cluster.Ports()["etcd"]) + "/v3/kv/put"
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("etcd put %s: %s", key, resp.Status)
	}
}
