package certs

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"slices"
	"time"
)

// backdate is how far before its issue a certificate's validity starts, so
// a verifier whose clock runs a little behind accepts it at once.
const backdate = time.Minute

// caFactor is a CA's lifetime in serving-certificate lifetimes.
const caFactor = 4

// Pair is a certificate and its private key.
type Pair struct {
	Cert    *x509.Certificate
	CertPEM []byte
	KeyPEM  []byte
}

// Bundle is the whole state kept in the Secret.
type Bundle struct {
	// Signer is the CA that signs the serving certificate.
	Signer *Pair
	// Next is a CA already published in the caBundle that takes over from
	// Signer at the next renewal of the serving certificate.
	Next *Pair
	// Retired are former signers, published until they expire.
	Retired []*x509.Certificate
	// Serving is the webhook's serving certificate.
	Serving *Pair
}

// Published is the caBundle: every CA whose certificates may be in use.
func (b *Bundle) Published() []byte {
	var out bytes.Buffer
	for _, p := range []*Pair{b.Signer, b.Next} {
		if p != nil {
			out.Write(p.CertPEM)
		}
	}
	for _, c := range b.Retired {
		_ = pem.Encode(&out, &pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
	}
	return out.Bytes()
}

// Plan returns the bundle after one renewal round at now, and whether it
// changed. One round does one thing: create a CA, publish the next one, or
// renew the serving certificate (promoting a published next CA first), so a
// new CA is in the caBundle for at least a round before it signs.
func Plan(b Bundle, hosts []string, validity time.Duration, now time.Time) (Bundle, bool, error) {
	b.Retired = slices.DeleteFunc(slices.Clone(b.Retired), func(c *x509.Certificate) bool { return !now.Before(c.NotAfter) })
	var err error
	switch {
	case b.Signer == nil || !now.Before(b.Signer.Cert.NotAfter):
		b = Bundle{Retired: b.Retired}
		if b.Signer, err = newCA(now, caFactor*validity); err != nil {
			return b, false, err
		}
		b.Serving, err = newServing(b.Signer, hosts, now, validity)
		return b, true, err
	case b.Next == nil && due(b.Signer.Cert, now, 2):
		b.Next, err = newCA(now, caFactor*validity)
		return b, true, err
	case b.Serving == nil || due(b.Serving.Cert, now, 3) || !sameHosts(b.Serving.Cert, hosts) || b.Serving.Cert.CheckSignatureFrom(b.Signer.Cert) != nil:
		if b.Next != nil {
			b.Retired = append(b.Retired, b.Signer.Cert)
			b.Signer, b.Next = b.Next, nil
		}
		b.Serving, err = newServing(b.Signer, hosts, now, validity)
		return b, true, err
	}
	return b, false, nil
}

// due reports whether less than 1/part of c's lifetime remains.
func due(c *x509.Certificate, now time.Time, part int) bool {
	life := c.NotAfter.Sub(c.NotBefore.Add(backdate))
	return c.NotAfter.Sub(now) < life/time.Duration(part)
}

func sameHosts(c *x509.Certificate, hosts []string) bool {
	var have []string
	have = append(have, c.DNSNames...)
	for _, ip := range c.IPAddresses {
		have = append(have, ip.String())
	}
	want := slices.Clone(hosts)
	slices.Sort(have)
	slices.Sort(want)
	return slices.Equal(have, want)
}

// Next renewal check: a sixth of the serving lifetime, between a second
// and ten minutes.
func Interval(validity time.Duration) time.Duration {
	return min(max(validity/6, time.Second), 10*time.Minute)
}

func newCA(now time.Time, validity time.Duration) (*Pair, error) {
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: fmt.Sprintf("kick-preflight-ca@%d", now.Unix())},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(validity),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	return issue(tmpl, nil)
}

func newServing(ca *Pair, hosts []string, now time.Time, validity time.Duration) (*Pair, error) {
	if len(hosts) == 0 {
		return nil, errors.New("no host names for the serving certificate")
	}
	notAfter := now.Add(validity)
	if ca.Cert.NotAfter.Before(notAfter) {
		notAfter = ca.Cert.NotAfter
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: hosts[0]},
		NotBefore:   now.Add(-backdate),
		NotAfter:    notAfter,
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	return issue(tmpl, ca)
}

// issue signs tmpl with a new P-256 key, by ca (self-signed when nil).
func issue(tmpl *x509.Certificate, ca *Pair) (*Pair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	tmpl.SerialNumber = serial
	parent, signer := tmpl, any(key)
	if ca != nil {
		parent = ca.Cert
		if signer, err = parseKey(ca.KeyPEM); err != nil {
			return nil, err
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return &Pair{Cert: cert,
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})}, nil
}

func parseKey(keyPEM []byte) (any, error) {
	block, _ := pem.Decode(keyPEM)
	if block == nil {
		return nil, errors.New("no PEM key")
	}
	return x509.ParseECPrivateKey(block.Bytes)
}

// parsePair reads a pair; nil when either part is missing or unreadable
// (the round then makes a new one).
func parsePair(certPEM, keyPEM []byte) *Pair {
	block, _ := pem.Decode(certPEM)
	if block == nil || len(keyPEM) == 0 {
		return nil
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil
	}
	if _, err := parseKey(keyPEM); err != nil {
		return nil
	}
	return &Pair{Cert: cert, CertPEM: certPEM, KeyPEM: keyPEM}
}

// parseCerts reads every certificate of a PEM bundle, skipping junk.
func parseCerts(data []byte) []*x509.Certificate {
	var out []*x509.Certificate
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return out
		}
		if c, err := x509.ParseCertificate(block.Bytes); err == nil {
			out = append(out, c)
		}
	}
}
