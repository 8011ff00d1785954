package observe

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	// KeySecretName is the Secret, in the manager's namespace, that holds the fingerprint key.
	KeySecretName = "kick-fingerprint-key"
	// KeySecretDataKey is the data entry of KeySecretName that holds the key bytes.
	KeySecretDataKey = "key"

	// KeySize is the length of a generated key.
	KeySize = 32
	// maxKeySize bounds a key supplied by an administrator.
	maxKeySize = 1024
)

// Creating the key needs create on Secrets in the manager's namespace only; reading it is covered
// by the cluster-wide read rule in controller.go. controller-gen turns this into a Role.
// +kubebuilder:rbac:groups="",namespace=kick-system,resources=secrets,verbs=create

// EnsureKey returns the installation's fingerprint key, generating it on first start: it reads
// the Secret KeySecretName in namespace and, when it does not exist, creates it (immutable) with
// KeySize random bytes. Two managers starting at once agree on one key: the loser of the create
// race reads the winner's Secret.
//
// c must read from the API server, not from a cache (use a client built with client.New, or a
// manager's APIReader for the read): it runs before the manager's caches start, and the cache
// transform strips Secret data anyway. The key is never logged or put into an error.
func EnsureKey(ctx context.Context, c client.Client, namespace string) ([]byte, error) {
	if namespace == "" {
		return nil, errors.New("fingerprint key: the manager namespace is empty")
	}
	ref := client.ObjectKey{Namespace: namespace, Name: KeySecretName}
	for attempt := 0; ; attempt++ {
		var s corev1.Secret
		err := c.Get(ctx, ref, &s)
		if err == nil {
			return keyFrom(&s)
		}
		if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("read fingerprint key Secret %s: %w", ref, err)
		}
		if attempt > 0 {
			// Created by someone else and gone again before we could read it: give up
			// rather than loop.
			return nil, fmt.Errorf("fingerprint key Secret %s vanished right after it was created; retry", ref)
		}
		key := make([]byte, KeySize)
		_, _ = rand.Read(key) // never fails (crypto/rand documents this)
		s = corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: namespace,
				Name:      KeySecretName,
				Labels:    map[string]string{"app.kubernetes.io/part-of": "kick", "app.kubernetes.io/component": "fingerprint-key"},
			},
			Type:      corev1.SecretTypeOpaque,
			Immutable: ptr.To(true),
			Data:      map[string][]byte{KeySecretDataKey: key},
		}
		err = c.Create(ctx, &s)
		switch {
		case err == nil:
			return key, nil
		case apierrors.IsAlreadyExists(err):
			continue // another replica won the race; use its key
		default:
			return nil, fmt.Errorf("create fingerprint key Secret %s: %w", ref, err)
		}
	}
}

// keyFrom validates the key Secret and returns a copy of its key.
func keyFrom(s *corev1.Secret) ([]byte, error) {
	key := s.Data[KeySecretDataKey]
	if n := len(key); n < KeySize || n > maxKeySize {
		return nil, fmt.Errorf("fingerprint key Secret %s/%s is unusable: data[%q] holds %d bytes, want %d to %d. "+
			"Delete the Secret (kubectl -n %s delete secret %s) and restart the manager to generate a new key; "+
			"every observation record is then re-baselined under the new key (its fingerprintKeyID no longer matches) "+
			"without restarting any workload",
			s.Namespace, s.Name, KeySecretDataKey, n, KeySize, maxKeySize, s.Namespace, s.Name)
	}
	return append([]byte(nil), key...), nil
}
