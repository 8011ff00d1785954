package certs

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The Secret's entries.
const (
	keySignerCert = "signer.crt"
	keySignerKey  = "signer.key"
	keyNextCert   = "next.crt"
	keyNextKey    = "next.key"
	keyBundle     = "ca.crt"
	keyServing    = corev1.TLSCertKey
	keyServingKey = corev1.TLSPrivateKeyKey
)

// The manager reads its namespace's Secrets through the cluster-wide read
// rule; it creates this one and updates only it, and patches only its own
// webhook configuration (the names are the defaults of the manager's flags;
// a renamed one needs the role edited to match).
// +kubebuilder:rbac:groups="",namespace=kick-system,resources=secrets,verbs=create
// +kubebuilder:rbac:groups="",namespace=kick-system,resources=secrets,verbs=update,resourceNames=kick-preflight-tls
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations,verbs=get;patch,resourceNames=kick-preflight

// Rotator keeps the Secret, the caBundle and the served certificate
// current. Every replica runs one; the Secret's resourceVersion settles
// who writes a renewal, and all serve what it holds.
type Rotator struct {
	// Client reads and writes past the cache (the manager's cache holds
	// Secrets without data).
	Client client.Client
	// Namespace and SecretName locate the Secret.
	Namespace, SecretName string
	// WebhookConfiguration is the ValidatingWebhookConfiguration whose
	// caBundle is kept current.
	WebhookConfiguration string
	// Hosts are the serving certificate's DNS names and IP addresses.
	Hosts []string
	// Validity is the serving certificate's lifetime.
	Validity time.Duration
	Log      logr.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	current atomic.Pointer[tls.Certificate]
	missing atomic.Bool
}

// GetCertificate serves the current certificate (tls.Config.GetCertificate).
func (r *Rotator) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	if c := r.current.Load(); c != nil {
		return c, nil
	}
	return nil, errors.New("preflight: no serving certificate yet")
}

// Ready is a readyz check: ready once a certificate is served.
func (r *Rotator) Ready(*http.Request) error {
	if r.current.Load() == nil {
		return errors.New("no preflight serving certificate yet")
	}
	return nil
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: every
// replica serves the webhook.
func (r *Rotator) NeedLeaderElection() bool { return false }

// Start runs renewal rounds until ctx ends (manager.Runnable).
func (r *Rotator) Start(ctx context.Context) error {
	for {
		wait := Interval(r.Validity)
		if err := r.Sync(ctx); err != nil {
			r.Log.Error(err, "preflight certificate round failed; retrying")
			wait = time.Second
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

// Sync runs one round: renew what is due, publish the caBundle, serve the
// serving certificate.
func (r *Rotator) Sync(ctx context.Context) error {
	// Bodies of Secret reads must never reach a logger.
	quiet := logr.NewContext(ctx, logr.Discard())
	var s corev1.Secret
	key := types.NamespacedName{Namespace: r.Namespace, Name: r.SecretName}
	err := r.Client.Get(quiet, key, &s)
	exists := err == nil
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("read Secret %s: %w", key, err)
	}
	b := fromData(s.Data)
	next, changed, err := Plan(b, r.Hosts, r.Validity, r.now())
	if err != nil {
		return err
	}
	if changed {
		s.Data = toData(&next)
		if !exists {
			s.ObjectMeta = metav1.ObjectMeta{Namespace: r.Namespace, Name: r.SecretName,
				Labels: map[string]string{"app.kubernetes.io/part-of": "kick", "app.kubernetes.io/component": "preflight"}}
			s.Type = corev1.SecretTypeTLS
			err = r.Client.Create(quiet, &s)
		} else {
			err = r.Client.Update(quiet, &s)
		}
		if err != nil {
			// Another replica renewed first: use its result next round.
			return fmt.Errorf("write Secret %s: %w", key, err)
		}
		r.Log.Info("preflight certificates renewed", "servingNotAfter", next.Serving.Cert.NotAfter.UTC().Format(time.RFC3339),
			"signer", next.Signer.Cert.Subject.CommonName)
	}
	if err := r.publish(ctx, next.Published()); err != nil {
		return err
	}
	cert, err := tls.X509KeyPair(next.Serving.CertPEM, next.Serving.KeyPEM)
	if err != nil {
		return err
	}
	r.current.Store(&cert)
	return nil
}

// publish sets the caBundle of every webhook of the configuration.
func (r *Rotator) publish(ctx context.Context, bundle []byte) error {
	if r.WebhookConfiguration == "" {
		return nil
	}
	var vwc admissionregistrationv1.ValidatingWebhookConfiguration
	if err := r.Client.Get(ctx, client.ObjectKey{Name: r.WebhookConfiguration}, &vwc); err != nil {
		if apierrors.IsNotFound(err) {
			if !r.missing.Swap(true) {
				r.Log.Info("the preflight ValidatingWebhookConfiguration does not exist; the webhook is served but not called", "name", r.WebhookConfiguration)
			}
			return nil
		}
		return fmt.Errorf("read ValidatingWebhookConfiguration %s: %w", r.WebhookConfiguration, err)
	}
	r.missing.Store(false)
	var ops []map[string]any
	for i, w := range vwc.Webhooks {
		if !bytes.Equal(w.ClientConfig.CABundle, bundle) {
			ops = append(ops, map[string]any{"op": "add", "path": fmt.Sprintf("/webhooks/%d/clientConfig/caBundle", i), "value": bundle})
		}
	}
	if len(ops) == 0 {
		return nil
	}
	// Guard the indexes: the patch applies only to the version read.
	ops = append([]map[string]any{{"op": "test", "path": "/metadata/resourceVersion", "value": vwc.ResourceVersion}}, ops...)
	patch, err := json.Marshal(ops)
	if err != nil {
		return err
	}
	if err := r.Client.Patch(ctx, &vwc, client.RawPatch(types.JSONPatchType, patch)); err != nil {
		return fmt.Errorf("patch the caBundle of ValidatingWebhookConfiguration %s: %w", r.WebhookConfiguration, err)
	}
	return nil
}

func (r *Rotator) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func fromData(d map[string][]byte) Bundle {
	b := Bundle{
		Signer:  parsePair(d[keySignerCert], d[keySignerKey]),
		Next:    parsePair(d[keyNextCert], d[keyNextKey]),
		Serving: parsePair(d[keyServing], d[keyServingKey]),
	}
	for _, c := range parseCerts(d[keyBundle]) {
		if b.Signer != nil && c.Equal(b.Signer.Cert) || b.Next != nil && c.Equal(b.Next.Cert) {
			continue
		}
		b.Retired = append(b.Retired, c)
	}
	return b
}

func toData(b *Bundle) map[string][]byte {
	d := map[string][]byte{
		keySignerCert: b.Signer.CertPEM, keySignerKey: b.Signer.KeyPEM,
		keyServing: b.Serving.CertPEM, keyServingKey: b.Serving.KeyPEM,
		keyBundle: b.Published(),
	}
	if b.Next != nil {
		d[keyNextCert], d[keyNextKey] = b.Next.CertPEM, b.Next.KeyPEM
	}
	return d
}
