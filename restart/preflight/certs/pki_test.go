package certs

import (
	"crypto/x509"
	"testing"
	"time"
)

// verify checks that the serving certificate chains to the published
// caBundle at t.
func verify(t *testing.T, b Bundle, t0 time.Time) {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b.Published()) {
		t.Fatal("empty caBundle")
	}
	if _, err := b.Serving.Cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: "kick-preflight.kick-system.svc", CurrentTime: t0}); err != nil {
		t.Fatalf("at %s: %v", t0, err)
	}
}

// TestRenewalKeepsVerifying runs rounds across several CA lifetimes: after
// every round the served certificate chains to the caBundle the round
// before published (what the API server still holds) and to the new one.
func TestRenewalKeepsVerifying(t *testing.T) {
	hosts := []string{"kick-preflight.kick-system.svc", "127.0.0.1"}
	validity := time.Hour
	now := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	b, changed, err := Plan(Bundle{}, hosts, validity, now)
	if err != nil || !changed {
		t.Fatalf("first round: changed %v, %v", changed, err)
	}
	verify(t, b, now)
	signers := map[string]bool{b.Signer.Cert.Subject.CommonName: true}
	renewals := 0
	for step := Interval(validity); now.Before(time.Date(2026, 5, 2, 0, 0, 0, 0, time.UTC)); now = now.Add(step) {
		published := b.Published()
		next, changed, err := Plan(b, hosts, validity, now)
		if err != nil {
			t.Fatal(err)
		}
		if changed {
			renewals++
			// The API server may still hold the previous caBundle.
			old := Bundle{Serving: next.Serving}
			pool := x509.NewCertPool()
			pool.AppendCertsFromPEM(published)
			if _, err := old.Serving.Cert.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: now}); err != nil {
				t.Fatalf("at %s the new serving certificate does not chain to the caBundle published before: %v", now, err)
			}
		}
		b = next
		verify(t, b, now)
		signers[b.Signer.Cert.Subject.CommonName] = true
	}
	if len(signers) < 3 || renewals < 20 {
		t.Errorf("over a day: %d signers, %d renewals; want the CA and the serving certificate renewed repeatedly", len(signers), renewals)
	}
	if n := len(x509Certs(b.Published())); n > 3 {
		t.Errorf("caBundle holds %d CAs; expired ones must be dropped", n)
	}
}

func x509Certs(pemData []byte) []*x509.Certificate { return parseCerts(pemData) }

func TestHostsChangeRenews(t *testing.T) {
	now := time.Now()
	b, _, _ := Plan(Bundle{}, []string{"a.svc"}, time.Hour, now)
	if _, changed, _ := Plan(b, []string{"a.svc"}, time.Hour, now); changed {
		t.Error("renewed with nothing due")
	}
	b2, changed, _ := Plan(b, []string{"b.svc"}, time.Hour, now)
	if !changed || b2.Serving.Cert.DNSNames[0] != "b.svc" || b2.Signer != b.Signer {
		t.Errorf("hosts changed: changed %v, names %v", changed, b2.Serving.Cert.DNSNames)
	}
}

func TestSecretRoundTrip(t *testing.T) {
	now := time.Now()
	b, _, _ := Plan(Bundle{}, []string{"a.svc"}, time.Hour, now)
	b, _, _ = Plan(b, []string{"a.svc"}, time.Hour, now.Add(2*time.Hour+time.Minute)) // publishes a next CA
	got := fromData(toData(&b))
	if got.Next == nil || !got.Signer.Cert.Equal(b.Signer.Cert) || !got.Serving.Cert.Equal(b.Serving.Cert) || len(got.Retired) != len(b.Retired) {
		t.Errorf("round trip lost state: %+v", got)
	}
	if empty := fromData(map[string][]byte{keySignerCert: []byte("junk")}); empty.Signer != nil {
		t.Error("junk parsed as a CA")
	}
}
