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
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/integration/fixture"
)

// apiServerPKI is the client certificate the API server presents to
// webhooks, and the CA that signs it.
var apiServerPKI *fixture.WebhookClientPKI

func TestMain(m *testing.M) {
	pki, flags, cleanup, err := fixture.WebhookClientCert()
	if cleanup != nil {
		defer cleanup()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "integration: webhook client certificate:", err)
		os.Exit(1)
	}
	apiServerPKI = pki
	cluster.Main(m, cluster.TestOptions{
		KickCRDs:       true,
		AddToScheme:    []func(*runtime.Scheme) error{kickv1alpha1.AddToScheme},
		APIServerFlags: flags,
	})
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
	kp, err := tls.X509KeyPair(apiServerPKI.Client.CertPEM, apiServerPKI.Client.KeyPEM)
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
