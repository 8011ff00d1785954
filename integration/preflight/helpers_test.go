// Package preflight tests the admission preflight end to end: a real
// kick-manager serving the webhook, the API server calling it on
// 127.0.0.1, and kubectl printing its warnings.
package preflight

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/integration/fixture"
	"github.com/kick-operator/kick/restart/preflight/certs"
)

// apiServerPKI is the client certificate the API server presents to
// webhooks, and the CA that signs it (whose file the managers get as
// --preflight-client-ca).
var apiServerPKI struct {
	caFile     string
	ca, client *certs.Pair
}

func TestMain(m *testing.M) {
	flags, cleanup, err := webhookClientCert()
	if err != nil {
		fmt.Fprintln(os.Stderr, "integration: webhook client certificate:", err)
		os.Exit(1)
	}
	defer cleanup()
	cluster.Main(m, cluster.TestOptions{
		KickCRDs:       true,
		AddToScheme:    []func(*runtime.Scheme) error{kickv1alpha1.AddToScheme},
		APIServerFlags: flags,
	})
}

// webhookClientCert configures the API server the way a cluster admin
// does: an AdmissionConfiguration whose webhook kubeconfig gives every
// webhook ("*") a client certificate, signed by a CA of its own.
func webhookClientCert() ([]string, func(), error) {
	dir, err := os.MkdirTemp("", "kick-webhook-client-")
	if err != nil {
		return nil, nil, err
	}
	cleanup := func() { _ = os.RemoveAll(dir) }
	now := time.Now()
	ca, err := certs.NewClientCA("kick-test-webhook-clients", now, 24*time.Hour)
	if err != nil {
		return nil, cleanup, err
	}
	client, err := certs.NewClient(ca, "kube-apiserver", now, 24*time.Hour)
	if err != nil {
		return nil, cleanup, err
	}
	path := func(name string) string { return filepath.Join(dir, name) }
	files := map[string]string{
		"ca.crt": string(ca.CertPEM), "client.crt": string(client.CertPEM), "client.key": string(client.KeyPEM),
		"webhook-kubeconfig.yaml": "apiVersion: v1\nkind: Config\nusers:\n- name: '*'\n  user:\n" +
			"    client-certificate: " + path("client.crt") + "\n    client-key: " + path("client.key") + "\n",
		"admission.yaml": "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n" +
			"- name: ValidatingAdmissionWebhook\n  configuration:\n    apiVersion: apiserver.config.k8s.io/v1\n" +
			"    kind: WebhookAdmissionConfiguration\n    kubeConfigFile: " + path("webhook-kubeconfig.yaml") + "\n",
	}
	for name, content := range files {
		if err := os.WriteFile(path(name), []byte(content), 0o600); err != nil {
			return nil, cleanup, err
		}
	}
	apiServerPKI.caFile, apiServerPKI.ca, apiServerPKI.client = path("ca.crt"), ca, client
	return []string{"--admission-control-config-file=" + path("admission.yaml")}, cleanup, nil
}

// webhook is a preflight ValidatingWebhookConfiguration for one test: it
// covers only the test's namespace and calls url.
func webhookConfig(t testing.TB, env *cluster.Env, name, ns, url string) {
	t.Helper()
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:         "preflight.kick.corewire.io",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To(url)},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"},
					Resources: []string{"secrets", "configmaps"}, Scope: ptr.To(admissionregistrationv1.NamespacedScope)},
			}},
			FailurePolicy:           ptr.To(admissionregistrationv1.Ignore),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			TimeoutSeconds:          ptr.To[int32](1),
			AdmissionReviewVersions: []string{"v1"},
			NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
				Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpIn, Values: []string{ns}}}},
		}},
	}
	if err := env.Client.Create(context.Background(), vwc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), vwc) })
}

// caBundle returns the caBundle of the configuration (empty while unset).
func caBundle(t testing.TB, env *cluster.Env, name string) []byte {
	t.Helper()
	var vwc admissionregistrationv1.ValidatingWebhookConfiguration
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, &vwc); err != nil {
		t.Fatal(err)
	}
	return vwc.Webhooks[0].ClientConfig.CABundle
}

// kubectl runs kubectl with the test kubeconfig and stdin; it returns
// stdout, stderr and the error.
func kubectl(t *testing.T, env *cluster.Env, stdin string, args ...string) (string, string, error) {
	t.Helper()
	cmd := exec.Command(filepath.Join(cluster.K8sBinDir(t), "kubectl"), append([]string{"--kubeconfig", env.Cluster.Kubeconfig}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	return out.String(), errOut.String(), err
}

// secretYAML is a Secret manifest with one entry.
func secretYAML(ns, name, key, value string, labels ...string) string {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: Secret\nmetadata:\n  name: " + name + "\n  namespace: " + ns + "\n")
	if len(labels) > 0 {
		b.WriteString("  labels:\n")
		for i := 0; i+1 < len(labels); i += 2 {
			b.WriteString("    " + labels[i] + ": \"" + labels[i+1] + "\"\n")
		}
	}
	b.WriteString("stringData:\n  " + key + ": " + value + "\n")
	return b.String()
}

// kickWarnings returns kubectl's "Warning: kick: ..." lines.
func kickWarnings(stderr string) []string {
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "Warning: kick: ") {
			out = append(out, strings.TrimPrefix(l, "Warning: "))
		}
	}
	return out
}

// secretValue reads one entry of a Secret.
func secretValue(t *testing.T, f *fixture.F, name, key string) string {
	t.Helper()
	var s corev1.Secret
	if err := f.Env.Client.Get(f.Ctx, client.ObjectKey{Namespace: f.NS, Name: name}, &s); err != nil {
		t.Fatal(err)
	}
	return string(s.Data[key])
}

// servedCert dials the webhook as the API server and returns the
// certificate it serves, verified against the published caBundle.
func servedCert(addr string, bundle []byte) (*x509.Certificate, error) {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(bundle)
	kp, err := tls.X509KeyPair(apiServerPKI.client.CertPEM, apiServerPKI.client.KeyPEM)
	if err != nil {
		return nil, err
	}
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", addr,
		&tls.Config{RootCAs: pool, ServerName: "127.0.0.1", Certificates: []tls.Certificate{kp}})
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0], nil
}
