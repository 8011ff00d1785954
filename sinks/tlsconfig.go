package sinks

import (
	"context"
	"crypto/tls"
	"crypto/x509"

	corev1 "k8s.io/api/core/v1"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
)

// buildTLS reads the CA bundle and client certificate (the certificate from the key the reference
// names, tls.crt by default, and the private key from tls.key). The result is nil when the policy sets
// neither (system roots, no client certificate); TLS 1.2 is the minimum in every case (see
// newTransport).
func buildTLS(ctx context.Context, sr *secretReader, t *kickv1alpha1.WebhookTLS) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if t == nil {
		return cfg, nil
	}
	if ref := t.CABundle; ref != nil {
		v, ok, err := sr.value(ctx, "spec.webhook.tls.caBundle", *ref)
		if err != nil {
			return nil, err
		}
		if ok {
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(v) {
				sr.add(ReasonInvalidSecret, "Secret %q key %q (spec.webhook.tls.caBundle) holds no PEM certificate", ref.Name, ref.Key)
			} else {
				cfg.RootCAs = pool
			}
		}
	}
	if ref := t.ClientCertificate; ref != nil {
		const field = "spec.webhook.tls.clientCertificate"
		sec, err := sr.secret(ctx, field, ref.Name)
		if err != nil || sec == nil {
			return cfg, err
		}
		if sec.Type != corev1.SecretTypeTLS {
			sr.add(ReasonInvalidSecret, "Secret %q (%s) is of type %q, not %q", ref.Name, field, sec.Type, corev1.SecretTypeTLS)
			return cfg, nil
		}
		certKey := ref.Key
		if certKey == "" {
			certKey = corev1.TLSCertKey
		}
		crt, cok, err := sr.value(ctx, field, kickv1alpha1.SecretKeyRef{Name: ref.Name, Key: certKey})
		if err != nil {
			return nil, err
		}
		key, kok, err := sr.value(ctx, field, kickv1alpha1.SecretKeyRef{Name: ref.Name, Key: corev1.TLSPrivateKeyKey})
		if err != nil {
			return nil, err
		}
		if cok && kok {
			pair, perr := tls.X509KeyPair(crt, key)
			if perr != nil {
				sr.add(ReasonInvalidSecret, "%s and %s in Secret %q (%s) are not a valid certificate and key pair", certKey, corev1.TLSPrivateKeyKey, ref.Name, field)
			} else {
				cfg.Certificates = []tls.Certificate{pair}
			}
		}
	}
	return cfg, nil
}
