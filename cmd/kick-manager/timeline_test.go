package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTimelineOffLoopbackNeedsTLS: an operator who binds the timeline to
// the pod network without a certificate, where viewers' bearer tokens
// would cross it in cleartext, gets a start-up error naming the flag to
// set; loopback without one and the pod network with one are accepted.
func TestTimelineOffLoopbackNeedsTLS(t *testing.T) {
	validate := func(args ...string) error {
		o := parsed(t, args...)
		return o.validate()
	}
	for _, addr := range []string{":8082", "0.0.0.0:8082", "10.1.2.3:8082"} {
		err := validate("--timeline-bind-address=" + addr)
		if err == nil || !strings.Contains(err.Error(), "--timeline-cert-dir") {
			t.Errorf("%s without a certificate: %v", addr, err)
		}
	}
	if err := validate("--timeline-bind-address=127.0.0.1:8082"); err != nil {
		t.Errorf("loopback refused: %v", err)
	}
	if err := validate("--timeline-bind-address=0"); err != nil {
		t.Errorf("timeline off refused: %v", err)
	}
	dir := t.TempDir()
	if err := validate("--timeline-bind-address=:8082", "--timeline-cert-dir="+dir); err == nil || !strings.Contains(err.Error(), "tls.crt") {
		t.Errorf("an empty certificate directory accepted or unclear: %v", err)
	}
	for _, f := range []string{"tls.crt", "tls.key"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := validate("--timeline-bind-address=:8082", "--timeline-cert-dir="+dir); err != nil {
		t.Errorf("off loopback with a certificate refused: %v", err)
	}
}
