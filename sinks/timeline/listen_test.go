package timeline

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
)

// TestLoopbackServerRefusesForeignHost plays a web page that pointed its
// own name at 127.0.0.1 (DNS rebinding) while someone has a port-forward
// open: the browser sends Host: evil.example, and the loopback server
// refuses it; requests to localhost, 127.0.0.1 and [::1] are answered.
func TestLoopbackServerRefusesForeignHost(t *testing.T) {
	s, _ := testServer(t, nil, managedDeployment("a", "web")...)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.opts.Addr = l.Addr().String()
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	_, port, _ := net.SplitHostPort(l.Addr().String())

	get := func(host string) int {
		req, _ := http.NewRequest(http.MethodGet, "http://"+l.Addr().String()+"/timeline/overview", nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	for _, host := range []string{"evil.example", "evil.example:" + port, "127.0.0.1.evil.example", "localhost.evil.example:" + port, "10.0.0.1:" + port} {
		if code := get(host); code != http.StatusMisdirectedRequest {
			t.Errorf("Host %s: %d, want 421", host, code)
		}
	}
	for _, host := range []string{"127.0.0.1:" + port, "localhost:" + port, "LOCALHOST", "[::1]:" + port, "127.0.0.1"} {
		if code := get(host); code != http.StatusOK {
			t.Errorf("Host %s: %d, want 200", host, code)
		}
	}
}

// TestOffLoopbackNeedsTLS: a server bound off loopback without a
// certificate does not listen, and says which setting is missing; with one
// it speaks only TLS.
func TestOffLoopbackNeedsTLS(t *testing.T) {
	err := CheckTLS(":8082", "", "--timeline-cert-dir")
	if err == nil || !strings.Contains(err.Error(), "--timeline-cert-dir") || !strings.Contains(err.Error(), "cleartext") {
		t.Fatalf("off loopback without a certificate: %v", err)
	}
	for _, addr := range []string{"127.0.0.1:8082", "localhost:8082", "[::1]:8082"} {
		if err := CheckTLS(addr, "", "--timeline-cert-dir"); err != nil {
			t.Errorf("%s: %v", addr, err)
		}
	}
	s, _ := testServer(t, nil)
	s.opts.Addr = "0.0.0.0:0"
	if l, _, err := s.listen(context.Background()); err == nil {
		_ = l.Close()
		t.Fatal("listened off loopback without a certificate")
	}

	dir, pool := writeCert(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s.opts.CertDir, s.opts.Addr, s.opts.Log = dir, "127.0.0.1:0", logr.Discard()
	l, scheme, err := s.listen(ctx)
	if err != nil || scheme != "https" {
		t.Fatalf("listen with a certificate: %s %v", scheme, err)
	}
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "localhost"}}}
	resp, err := c.Get("https://" + l.Addr().String() + "/timeline/overview")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("over TLS: %d", resp.StatusCode)
	}
	if resp, err := http.Get("http://" + l.Addr().String() + "/timeline/overview"); err == nil && resp.StatusCode == http.StatusOK {
		t.Fatal("answered plain HTTP")
	}
}

// writeCert writes a self-signed certificate for localhost to a new
// directory as tls.crt and tls.key.
func writeCert(t *testing.T) (string, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "localhost"},
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return dir, pool
}
