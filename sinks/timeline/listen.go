package timeline

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
)

// LoopbackOnly reports whether addr listens on loopback only (localhost or
// a loopback IP), where the timeline needs no authentication.
func LoopbackOnly(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// CheckTLS refuses an address off loopback without a certificate: callers
// there send bearer tokens, which must not cross the network in cleartext.
// flag names the option that sets the certificate directory.
func CheckTLS(addr, certDir, flag string) error {
	if certDir != "" || LoopbackOnly(addr) {
		return nil
	}
	return fmt.Errorf("the timeline would serve bearer tokens in cleartext on %s: set %s to a directory holding tls.crt and tls.key (a cert-manager Certificate's Secret, mounted), or bind to a loopback address such as 127.0.0.1:8082", addr, flag)
}

// listen opens the server's listener: TLS with the certificate in CertDir
// (reloaded when the files change), plain TCP on loopback without one.
func (s *Server) listen(ctx context.Context) (net.Listener, string, error) {
	if err := CheckTLS(s.opts.Addr, s.opts.CertDir, "the certificate directory"); err != nil {
		return nil, "", err
	}
	l, err := net.Listen("tcp", s.opts.Addr)
	if err != nil || s.opts.CertDir == "" {
		return l, "http", err
	}
	cw, err := certwatcher.New(filepath.Join(s.opts.CertDir, "tls.crt"), filepath.Join(s.opts.CertDir, "tls.key"))
	if err != nil {
		_ = l.Close()
		return nil, "", err
	}
	go func() {
		if err := cw.Start(ctx); err != nil {
			s.opts.Log.Error(err, "timeline: the certificate watcher stopped")
		}
	}()
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: cw.GetCertificate, NextProtos: []string{"h2", "http/1.1"}}
	return tls.NewListener(l, cfg), "https", nil
}

// localHostOnly answers only requests addressed to the local host by name
// or address (localhost, 127.0.0.1, [::1], with or without a port). A
// server on loopback asks for no credentials, so a web page whose name
// an attacker points at 127.0.0.1 (DNS rebinding) could otherwise read it
// through the visitor's browser while a port-forward is open; the browser
// still sends the attacker's name as Host.
func localHostOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !localHost(r.Host) {
			http.Error(w, "this timeline answers only requests to localhost, 127.0.0.1 or [::1] (it listens on loopback without authentication)", http.StatusMisdirectedRequest)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// localHost reports whether a Host header names the local host.
func localHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
