package observe

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
)

// Per-key fingerprints: every key of a Secret or ConfigMap gets an id (an
// HMAC of its name) and a fingerprint (an HMAC of its value), both keyed
// with the installation's key like the whole-object fingerprint, and cut to
// 64 bits (16 hex digits): ids only need to tell apart the keys of one
// source, fingerprints only to notice that a value changed.
const (
	keyNameVersion  = "kick.corewire.io/key-name/v1"
	keyValueVersion = "kick.corewire.io/key-value/v1"
	keyPrintHex     = 16
)

// KeyPrints are the keys of one source as the observer saw them.
type KeyPrints struct {
	// Count is how many keys the source holds.
	Count int
	// Entries are the keys in the order of kickv1alpha1.SortKeyNames,
	// without change times; nil when Count exceeds
	// kickv1alpha1.MaxKeyEntries.
	Entries []kickv1alpha1.KeyObservation
}

// KeyName returns the id of a key of the source kind/namespace/name: what
// a record names the key by. It does not depend on the source's uid, so a
// caller that knows only the source's name (an assessment) can compute it.
func (f *Fingerprinter) KeyName(namespace, kind, source, key string) string {
	w := &fpWriter{h: hmac.New(sha256.New, f.key)}
	w.str(keyNameVersion)
	w.str(kind)
	w.str(namespace)
	w.str(source)
	w.str(key)
	return w.short()
}

// SecretKeys returns the per-key prints of a Secret (stringData merged
// over data, as the API server does on write).
func (f *Fingerprinter) SecretKeys(s *corev1.Secret) KeyPrints {
	if len(s.StringData) == 0 {
		return f.keyPrints("Secret", &s.ObjectMeta, s.Data, nil)
	}
	merged := make(map[string][]byte, len(s.Data)+len(s.StringData))
	for k, v := range s.Data {
		merged[k] = v
	}
	for k, v := range s.StringData {
		merged[k] = []byte(v)
	}
	return f.keyPrints("Secret", &s.ObjectMeta, merged, nil)
}

// ConfigMapKeys returns the per-key prints of a ConfigMap: data and
// binaryData share one set of key names (the API server refuses a key in
// both), and each becomes a file of the same name in a volume.
func (f *Fingerprinter) ConfigMapKeys(c *corev1.ConfigMap) KeyPrints {
	return f.keyPrints("ConfigMap", &c.ObjectMeta, c.BinaryData, c.Data)
}

func (f *Fingerprinter) keyPrints(kind string, m *metav1.ObjectMeta, binary map[string][]byte, text map[string]string) KeyPrints {
	n := len(binary) + len(text)
	out := KeyPrints{Count: n}
	if n > kickv1alpha1.MaxKeyEntries {
		return out
	}
	names := make([]string, 0, n)
	for k := range binary {
		names = append(names, k)
	}
	for k := range text {
		names = append(names, k)
	}
	kickv1alpha1.SortKeyNames(names)
	out.Entries = make([]kickv1alpha1.KeyObservation, 0, n)
	for _, k := range names {
		w := &fpWriter{h: hmac.New(sha256.New, f.key)}
		w.str(keyValueVersion)
		w.str(kind)
		w.str(m.Namespace)
		w.str(m.Name)
		w.str(string(m.UID))
		w.str(k)
		if v, ok := binary[k]; ok {
			w.bytes(v)
		} else {
			w.str(text[k])
		}
		out.Entries = append(out.Entries, kickv1alpha1.KeyObservation{
			ID: f.KeyName(m.Namespace, kind, m.Name, k), Fingerprint: w.short(),
		})
	}
	return out
}

// RawPrints returns per-key prints of values as some encoding gives them
// (the admission review's JSON): comparable only with prints of values
// encoded the same way, never with a record's.
func (f *Fingerprinter) RawPrints(kind, namespace, name string, uid types.UID, values map[string][]byte) KeyPrints {
	return f.keyPrints(kind, &metav1.ObjectMeta{Namespace: namespace, Name: name, UID: uid}, values, nil)
}

// short is the first keyPrintHex hex digits of the HMAC.
func (w *fpWriter) short() string {
	var out [sha256.Size]byte
	sum := w.h.Sum(out[:0])
	return hex.EncodeToString(sum[:keyPrintHex/2])
}
