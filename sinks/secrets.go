package sinks

import (
	"context"
	"crypto/sha256"
	"fmt"
	"hash"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
)

// secretReader reads the Secrets one policy references, each at most once, straight from the API
// server (the manager's cache holds no Secret data). It collects problems instead of stopping at
// the first, and hashes what it read so that an unchanged configuration is recognised.
//
// A Secret is used only when it opted in with the label
// kickv1alpha1.NotificationSecretLabel=kickv1alpha1.NotificationSecretAllowed on the object
// read: otherwise whoever may create a NotificationPolicy could have any Secret of the namespace
// sent to a URL of their choosing. Nothing about a Secret that did not opt in (its keys, type or
// values) is looked at or reported.
type secretReader struct {
	reader    client.Reader
	namespace string

	secrets  map[string]*corev1.Secret // nil value: not found or not allowed
	problems []problem
	reported map[string]bool // missing or refused Secrets already reported
	values   []string        // every value read, for scrubbing
	sum      hash.Hash
}

func newSecretReader(r client.Reader, namespace string) *secretReader {
	return &secretReader{
		reader: r, namespace: namespace,
		secrets: map[string]*corev1.Secret{}, reported: map[string]bool{}, sum: sha256.New(),
	}
}

// secret returns the named Secret, or nil after recording a SecretNotFound or SecretNotAllowed
// problem. Other API errors are returned: the reconcile is retried.
func (s *secretReader) secret(ctx context.Context, field, name string) (*corev1.Secret, error) {
	sec, seen := s.secrets[name]
	if !seen {
		var got corev1.Secret
		// client-go logs response bodies at high verbosity with the context's logger: keep
		// Secret contents out of every log, whatever the level.
		quiet := logr.NewContext(ctx, logr.Discard())
		err := s.reader.Get(quiet, client.ObjectKey{Namespace: s.namespace, Name: name}, &got)
		switch {
		case apierrors.IsNotFound(err):
			s.report(name, reasonSecretNotFound, "Secret %q (%s) does not exist in namespace %s", name, field, s.namespace)
		case err != nil:
			return nil, fmt.Errorf("read Secret %s/%s: %w", s.namespace, name, err)
		case !SecretAllowed(&got):
			// Forget the content at once: nothing of it may be used or described.
			got.Data, got.StringData = nil, nil
			s.report(name, ReasonSecretNotAllowed, "Secret %q (%s) has not opted in to notifications: "+
				"label it %s=%s (kubectl -n %s label secret %s %s=%s) if this policy may send its values",
				name, field, kickv1alpha1.NotificationSecretLabel, kickv1alpha1.NotificationSecretAllowed,
				s.namespace, name, kickv1alpha1.NotificationSecretLabel, kickv1alpha1.NotificationSecretAllowed)
		default:
			sec = &got
		}
		s.secrets[name] = sec
	}
	return sec, nil
}

// SecretAllowed reports whether a Secret opted in to being read for NotificationPolicies: its
// label kickv1alpha1.NotificationSecretLabel has exactly the value
// kickv1alpha1.NotificationSecretAllowed.
func SecretAllowed(o metav1.Object) bool {
	v, ok := o.GetLabels()[kickv1alpha1.NotificationSecretLabel]
	return ok && v == kickv1alpha1.NotificationSecretAllowed
}

// report records a problem with a Secret once, however many fields reference it.
func (s *secretReader) report(name, reason, format string, args ...any) {
	if !s.reported[name] {
		s.reported[name] = true
		s.add(reason, format, args...)
	}
}

// value returns the value of ref's key, or ok=false after recording a problem.
func (s *secretReader) value(ctx context.Context, field string, ref kickv1alpha1.SecretKeyRef) ([]byte, bool, error) {
	sec, err := s.secret(ctx, field, ref.Name)
	if err != nil || sec == nil {
		return nil, false, err
	}
	v, ok := sec.Data[ref.Key]
	if !ok {
		s.add(reasonKeyNotFound, "Secret %q has no key %q (%s)", ref.Name, ref.Key, field)
		return nil, false, nil
	}
	s.record(field, v)
	return v, true, nil
}

// headerValue reads a value sent in an HTTP header. Trailing line breaks, which files turned
// into Secrets often end with, are removed; other control characters make it unusable.
func (s *secretReader) headerValue(ctx context.Context, field string, ref kickv1alpha1.SecretKeyRef) (string, bool, error) {
	v, ok, err := s.value(ctx, field, ref)
	if !ok {
		return "", false, err
	}
	str := strings.TrimRight(string(v), "\r\n")
	if !validHeaderValue(str) {
		s.add(ReasonInvalidSecret, "the value of key %q in Secret %q (%s) cannot be sent in an HTTP header: it holds control characters", ref.Key, ref.Name, field)
		return "", false, nil
	}
	return str, true, nil
}

func (s *secretReader) record(field string, v []byte) {
	s.values = append(s.values, string(v))
	fmt.Fprintf(s.sum, "%s\x00%d\x00", field, len(v))
	s.sum.Write(v)
}

func (s *secretReader) add(reason, format string, args ...any) {
	s.problems = append(s.problems, problem{reason: reason, message: fmt.Sprintf(format, args...)})
}

// validHeaderValue reports whether v can be an HTTP header field value: no control characters
// other than horizontal tab.
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < 0x20 && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}
