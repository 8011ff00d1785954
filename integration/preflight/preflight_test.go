package preflight

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/integration/fixture"
	"github.com/kick-operator/kick/restart/preflight"
	"github.com/kick-operator/kick/restart/preflight/certs"
)

// Values and key names that must never leave the Secret.
const (
	secretKey    = "pf-db-passphrase-key"
	secretValue1 = "pf-value-alpha-7f3a9"
	secretValue2 = "pf-value-bravo-1c2d8"
)

// TestPreflight runs one manager with the preflight on and a six-second
// certificate lifetime, and goes through the cases kubectl users see.
func TestPreflight(t *testing.T) {
	env := cluster.Get(t)
	addr := cluster.FreeAddr(t)
	suffix := fmt.Sprintf("%d", time.Now().UnixNano()%1000000)
	vwcName, certSecret := "kick-preflight-"+suffix, "kick-preflight-tls-"+suffix
	ns := env.Namespace(t)
	fixture.PreflightWebhook(t, env, vwcName, "https://"+addr+"/preflight", ns)
	f := &fixture.F{T: t, Env: env, NS: ns, Ctx: t.Context()}
	f.Mgr = env.StartManager(t, fixture.ManagerNamespace, "--preflight", "--preflight-bind-address", addr,
		"--preflight-cert-hosts", "127.0.0.1", "--preflight-cert-secret", certSecret,
		"--preflight-webhook-configuration", vwcName, "--preflight-cert-validity", "6s",
		"--preflight-client-ca", apiServerPKI.CAFile, "--preflight-client-names", "kube-apiserver")
	cluster.Eventually(t, 30*time.Second, "the manager to publish the caBundle", func() (bool, error) {
		return len(caBundle(t, env, vwcName)) > 0, nil
	})

	f.Policy("default", `
discovery:
  workloadSelector: {matchLabels: {app: web}}
restart: {minInterval: 1s}
`)
	start := time.Now().UTC().Add(-5 * time.Minute).Truncate(time.Minute)
	f.Policy("nights", fmt.Sprintf(`
discovery:
  workloadSelector: {matchLabels: {app: batch}}
schedule:
  windows:
  - {type: Deny, cron: "%d %d * * *", duration: 2h}
`, start.Minute(), start.Hour()))
	denyEnd := preflight.When(start.Add(2 * time.Hour))

	if _, stderr, err := kubectl(t, env, secretYAML(ns, "db", secretKey, secretValue1), "apply", "-f", "-"); err != nil {
		t.Fatalf("create db: %v\n%s", err, stderr)
	}
	f.Deployment("web", 1, fixture.PodSpec("db"))
	f.WaitAvailable("web")
	record := f.WaitObservation("db")
	f.Secret("batch-cfg", map[string]string{secretKey: secretValue1}, nil)
	f.Deployment("batch", 1, fixture.PodSpec("batch-cfg"))
	f.WaitAvailable("batch")
	batchRecord := f.WaitObservation("batch-cfg")
	// keyed reads one key of keyed-db: a change of the other key restarts nothing.
	f.Policy("keyed", `
discovery:
  workloadSelector: {matchLabels: {app: keyed}}
restart: {minInterval: 1s}
`)
	f.Secret("keyed-db", map[string]string{secretKey: secretValue1, "pf-other-key": "x"}, nil)
	f.Deployment("keyed", 1, corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10",
		Env: []corev1.EnvVar{{Name: "PASS", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "keyed-db"}, Key: secretKey}}}}}}})
	f.WaitAvailable("keyed")
	keyedRecord := f.WaitObservation("keyed-db")

	var seen []string // everything the preflight said, for the leak check
	apply := func(what, manifest string, args ...string) []string {
		t.Helper()
		start := time.Now()
		_, stderr, err := kubectl(t, env, manifest, append([]string{"apply", "-f", "-"}, args...)...)
		if err != nil {
			t.Fatalf("%s: kubectl apply failed: %v\n%s", what, err, stderr)
		}
		seen = append(seen, stderr)
		t.Logf("%s (%s): %q", what, time.Since(start).Round(time.Millisecond), kickWarnings(stderr))
		return kickWarnings(stderr)
	}
	want := func(what string, got []string, expect ...string) {
		t.Helper()
		if !slices.Equal(got, expect) {
			t.Errorf("%s: warnings %q\nwant %q", what, got, expect)
		}
	}

	restartsWeb := "kick: restarts deployment/web now (policy default)"
	t.Run("server-side dry run warns and writes nothing", func(t *testing.T) {
		want("dry run", apply("dry run", secretYAML(ns, "db", secretKey, secretValue2), "--dry-run=server"), restartsWeb)
		if v := secretValue(t, f, "db", secretKey); v != secretValue1 {
			t.Errorf("the dry run wrote the Secret")
		}
	})
	t.Run("kubectl kick preview prints the same answer and writes nothing", func(t *testing.T) {
		manifest := filepath.Join(t.TempDir(), "db.yaml")
		if err := os.WriteFile(manifest, []byte(secretYAML(ns, "db", secretKey, secretValue2)+"---\n"+secretYAML(ns, "lonely-preview", secretKey, secretValue1)), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(cluster.Binary(t, "kubectl-kick"), "preview", "--kubeconfig", env.Cluster.Kubeconfig, "-f", manifest)
		out, err := cmd.CombinedOutput()
		seen = append(seen, string(out))
		if err != nil {
			t.Fatalf("kubectl kick preview: %v\n%s", err, out)
		}
		for _, line := range []string{"secret/db -n " + ns + ":", "  " + restartsWeb, "secret/lonely-preview -n " + ns + ":", "  no answer from KICK"} {
			if !strings.Contains(string(out), line) {
				t.Errorf("preview output lacks %q:\n%s", line, out)
			}
		}
		if v := secretValue(t, f, "db", secretKey); v != secretValue1 {
			t.Errorf("the preview wrote the Secret")
		}
		var lonely corev1.Secret
		if err := env.Client.Get(f.Ctx, client.ObjectKey{Namespace: ns, Name: "lonely-preview"}, &lonely); err == nil {
			t.Errorf("the preview created a Secret")
		}
	})
	t.Run("metadata-only edit says no restart", func(t *testing.T) {
		want("label", apply("label", secretYAML(ns, "db", secretKey, secretValue1, "team", "shop")), "kick: no restart: data unchanged")
	})
	t.Run("a change of a key the workload does not read says so", func(t *testing.T) {
		want("other key", apply("other key", secretYAML(ns, "keyed-db", "pf-other-key", "pf-other-value-2"), "--dry-run=server"),
			"kick: no restart: deployment/keyed reads only keys that did not change")
		want("read key", apply("read key", secretYAML(ns, "keyed-db", secretKey, secretValue2), "--dry-run=server"),
			"kick: restarts deployment/keyed now (policy keyed)")
	})
	t.Run("unconsumed Secret gets no warning", func(t *testing.T) {
		want("unconsumed", apply("unconsumed", secretYAML(ns, "lonely", secretKey, secretValue1)))
	})
	t.Run("Deny window is named with its end", func(t *testing.T) {
		want("deny", apply("deny", secretYAML(ns, "batch-cfg", secretKey, secretValue2)),
			"kick: restarts deployment/batch when the Deny window ends at "+denyEnd)
	})
	t.Run("a held Secret's write names the hold", func(t *testing.T) {
		target := kickv1alpha1.HoldTarget{Kind: kickv1alpha1.HoldSecret, Name: "db"}
		hold := &kickv1alpha1.KickHold{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: kickv1alpha1.HoldName(target)},
			Spec: kickv1alpha1.KickHoldSpec{Target: target, Reason: "INC-42: rotating"}}
		f.Create(hold)
		defer func() { _ = env.Client.Delete(f.Ctx, hold) }() // the later cases write db unheld
		heldWeb := `kick: restarts deployment/web once KickHold hold-secret-db is released: "INC-42: rotating"`
		dryRun := func() []string {
			return apply("held", secretYAML(ns, "db", secretKey, secretValue2), "--dry-run=server")
		}
		cluster.Eventually(t, 30*time.Second, "the preflight to name the hold", func() (bool, error) {
			got := dryRun()
			return slices.Equal(got, []string{heldWeb}), fmt.Errorf("warnings %q", got)
		})
		if err := env.Client.Delete(f.Ctx, hold); err != nil {
			t.Fatal(err)
		}
		cluster.Eventually(t, 30*time.Second, "the preflight to forget the released hold", func() (bool, error) {
			got := dryRun()
			return slices.Equal(got, []string{restartsWeb}), fmt.Errorf("warnings %q", got)
		})
	})
	cluster.Eventually(t, 30*time.Second, "KICK to record the new content of batch-cfg", func() (bool, error) {
		var rec kickv1alpha1.SourceObservation
		err := env.Client.Get(f.Ctx, client.ObjectKeyFromObject(batchRecord), &rec)
		return err == nil && rec.Spec.RelevantFingerprint != batchRecord.Spec.RelevantFingerprint, err
	})
	t.Run("audit annotations", func(t *testing.T) {
		var s corev1.Secret
		if err := env.Client.Get(f.Ctx, client.ObjectKey{Namespace: ns, Name: "db"}, &s); err != nil {
			t.Fatal(err)
		}
		s.Data[secretKey] = []byte(secretValue2)
		resp, err := review(t, addr, caBundle(t, env, vwcName), apiServerPKI.Client, &s)
		if err != nil {
			t.Fatal(err)
		}
		seen = append(seen, fmt.Sprint(resp.Warnings), fmt.Sprint(resp.AuditAnnotations))
		if !resp.Allowed || resp.AuditAnnotations[preflight.AuditDecision] != "Restart" ||
			resp.AuditAnnotations[preflight.AuditConsumers] != "restarts deployment/web now (policy default)" {
			t.Errorf("response %+v", resp)
		}
	})
	t.Run("a pod without the API server's certificate learns nothing", func(t *testing.T) {
		var s corev1.Secret
		if err := env.Client.Get(f.Ctx, client.ObjectKey{Namespace: ns, Name: "batch-cfg"}, &s); err != nil {
			t.Fatal(err)
		}
		s.Data[secretKey] = []byte(secretValue1)
		forgedCA, err := certs.NewClientCA("kick-test-webhook-clients", time.Now(), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		forged, err := certs.NewClient(forgedCA, "kube-apiserver", time.Now(), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			what string
			cert *certs.Pair
		}{{"no certificate", nil}, {"a certificate from another CA", forged}} {
			resp, err := review(t, addr, caBundle(t, env, vwcName), tc.cert, &s)
			if err == nil {
				seen = append(seen, fmt.Sprint(resp.Warnings), fmt.Sprint(resp.AuditAnnotations))
				t.Errorf("%s: answered %+v", tc.what, resp)
			}
		}
	})
	t.Run("apply of a consumed Secret warns and succeeds", func(t *testing.T) {
		want("apply", apply("apply", secretYAML(ns, "db", secretKey, secretValue2)), restartsWeb)
		if v := secretValue(t, f, "db", secretKey); v != secretValue2 {
			t.Errorf("the Secret was not written")
		}
	})
	t.Run("certificate rotation keeps it working", func(t *testing.T) {
		serials, issuers := map[string]bool{}, map[string]bool{}
		deadline := time.Now().Add(40 * time.Second)
		for i := 0; time.Now().Before(deadline) && !(len(serials) >= 4 && len(issuers) >= 2); i++ {
			got := apply(fmt.Sprintf("rotation %d", i), secretYAML(ns, "batch-cfg", secretKey, secretValue2, "round", fmt.Sprint(i)))
			want(fmt.Sprintf("rotation %d", i), got, "kick: no restart: data unchanged")
			cert, err := servedCert(addr, caBundle(t, env, vwcName))
			if err != nil {
				t.Fatalf("the served certificate does not verify against the published caBundle: %v", err)
			}
			serials[cert.SerialNumber.String()], issuers[cert.Issuer.CommonName] = true, true
			time.Sleep(500 * time.Millisecond) // pacing only; each round asserts on its own answer
		}
		if len(serials) < 4 || len(issuers) < 2 {
			t.Errorf("in 40s: %d serving certificates from %d CAs; want renewals of both", len(serials), len(issuers))
		}
	})
	t.Run("delete warns about consumers", func(t *testing.T) {
		_, stderr, err := kubectl(t, env, "", "-n", ns, "delete", "secret", "batch-cfg")
		if err != nil {
			t.Fatalf("delete: %v\n%s", err, stderr)
		}
		seen = append(seen, stderr)
		want("delete", kickWarnings(stderr), "kick: deployment/batch uses this secret: its new pods fail to start without it (unless optional)")
	})
	t.Run("nothing secret leaks", func(t *testing.T) {
		var rec kickv1alpha1.SourceObservation
		_ = env.Client.Get(f.Ctx, client.ObjectKeyFromObject(record), &rec)
		all := strings.Join(seen, "\n") + f.Mgr.Log()
		secrets := []string{secretKey, "pf-other-key", secretValue1, secretValue2, record.Spec.RelevantFingerprint, rec.Spec.RelevantFingerprint}
		var keyed kickv1alpha1.SourceObservation
		_ = env.Client.Get(f.Ctx, client.ObjectKeyFromObject(keyedRecord), &keyed)
		for _, r := range []*kickv1alpha1.SourceObservation{record, &rec, keyedRecord, &keyed} {
			if r.Spec.Keys != nil {
				for _, e := range r.Spec.Keys.Entries { // key ids and value prints
					secrets = append(secrets, e.ID, e.Fingerprint)
				}
			}
		}
		if len(secrets) < 8 {
			t.Errorf("the records hold no per-key entries to look for: %d strings", len(secrets))
		}
		for _, s := range secrets {
			if s != "" && strings.Contains(all, s) {
				t.Errorf("%q appears in a warning, an audit annotation or the manager log", s)
			}
		}
	})
	t.Run("a webhook that is down costs the write nothing", func(t *testing.T) {
		f.Mgr.Kill()
		start := time.Now()
		got := apply("manager down", secretYAML(ns, "db", secretKey, secretValue1))
		if len(got) != 0 || time.Since(start) > 5*time.Second {
			t.Errorf("with the manager down: warnings %q after %s", got, time.Since(start))
		}
	})
}

// TestHangingWebhookCostsNothing points the configuration at a listener
// that accepts connections and never answers: the write succeeds once the
// one-second timeout passes.
func TestHangingWebhookCostsNothing(t *testing.T) {
	env := cluster.Get(t)
	ns := env.Namespace(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, never answered
		}
	}()
	fixture.PreflightWebhook(t, env, fmt.Sprintf("kick-preflight-hang-%d", time.Now().UnixNano()%1000000), "https://"+l.Addr().String()+"/preflight", ns)
	start := time.Now()
	_, stderr, err := kubectl(t, env, secretYAML(ns, "db", secretKey, secretValue1), "apply", "-f", "-")
	if err != nil || time.Since(start) > 5*time.Second {
		t.Fatalf("apply with a hanging webhook: %v after %s\n%s", err, time.Since(start), stderr)
	}
	t.Logf("apply with a hanging webhook took %s", time.Since(start).Round(time.Millisecond))
}

// review posts an UPDATE AdmissionReview for s (from empty data) straight
// to the webhook, presenting cert (nil: none) as its client certificate.
func review(t *testing.T, addr string, bundle []byte, cert *certs.Pair, s *corev1.Secret) (*admissionv1.AdmissionResponse, error) {
	t.Helper()
	raw, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	old := s.DeepCopy()
	old.Data = nil
	oldRaw, err := json.Marshal(old)
	if err != nil {
		t.Fatal(err)
	}
	ar := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: types.UID("test"), Operation: admissionv1.Update,
			Kind:      metav1.GroupVersionKind{Version: "v1", Kind: "Secret"},
			Resource:  metav1.GroupVersionResource{Version: "v1", Resource: "secrets"},
			Namespace: s.Namespace, Name: s.Name, Object: runtime.RawExtension{Raw: raw}, OldObject: runtime.RawExtension{Raw: oldRaw}},
	}
	body, _ := json.Marshal(ar)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(bundle)
	cfg := &tls.Config{RootCAs: pool}
	if cert != nil {
		kp, err := tls.X509KeyPair(cert.CertPEM, cert.KeyPEM)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{kp}
	}
	tr := &http.Transport{TLSClientConfig: cfg}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Timeout: 5 * time.Second, Transport: tr}).Post("https://"+addr+"/preflight", "application/json", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out admissionv1.AdmissionReview
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.Response == nil {
		return nil, fmt.Errorf("status %d, decode review: %v", resp.StatusCode, err)
	}
	return out.Response, nil
}
