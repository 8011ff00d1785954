package certs

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"time"
)

// NewClientCA returns a self-signed CA named name, valid for validity from
// now, for the API server's webhook client certificates. The manager never
// holds its key: the cluster's administrator (or a test) keeps it and gives
// the manager only the certificate (--preflight-client-ca).
func NewClientCA(name string, now time.Time, validity time.Duration) (*Pair, error) {
	return issue(&x509.Certificate{
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(validity),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}, nil)
}

// NewClient issues a client certificate named commonName by ca, valid for
// validity from now but not beyond the CA.
func NewClient(ca *Pair, commonName string, now time.Time, validity time.Duration) (*Pair, error) {
	notAfter := now.Add(validity)
	if ca.Cert.NotAfter.Before(notAfter) {
		notAfter = ca.Cert.NotAfter
	}
	return issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: commonName},
		NotBefore:   now.Add(-backdate),
		NotAfter:    notAfter,
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, ca)
}
