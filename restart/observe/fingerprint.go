package observe

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// fingerprintVersion is mixed into every fingerprint so that a future change of the encoding
// can never produce the same value for different content.
//
// v2 binds each fingerprint to its object (namespace, name and uid): equal content in two
// namespaces, or in an object deleted and created again, gives different fingerprints, so a
// record reveals nothing about whether two Secrets hold the same value. The version is part of
// the key id too, so records written by v1 are rebaselined (not treated as changed) on upgrade.
const fingerprintVersion = "kick.corewire.io/fingerprint/v2"

// Fingerprinter computes keyed content fingerprints (HMAC-SHA256 with the installation's key).
// Keying means a stored fingerprint of a low-entropy value (a short password, a boolean flag)
// cannot be confirmed by hashing guesses without the key. It is safe for concurrent use.
type Fingerprinter struct {
	key   []byte
	keyID string
}

// NewFingerprinter returns a Fingerprinter for key. The key is copied.
func NewFingerprinter(key []byte) *Fingerprinter {
	k := slices.Clone(key)
	sum := sha256.Sum256(append([]byte("kick-key-id/"+fingerprintVersion+"/"), k...))
	return &Fingerprinter{key: k, keyID: hex.EncodeToString(sum[:])[:16]}
}

// KeyID is a short identifier of the key (16 hex digits of a hash of it). It reveals nothing
// usable about the key and changes whenever the key does.
func (f *Fingerprinter) KeyID() string { return f.keyID }

// Secret returns the fingerprint of a Secret's content: its type, immutability and every entry
// of data (with stringData merged over it, as the API server does on write). Metadata is
// ignored. The result is 64 lowercase hex digits.
func (f *Fingerprinter) Secret(s *corev1.Secret) string {
	w := f.start("Secret", &s.ObjectMeta)
	typ := s.Type
	if typ == "" {
		typ = corev1.SecretTypeOpaque // what the API server defaults it to
	}
	w.str(string(typ))
	w.flag(s.Immutable)
	if len(s.StringData) == 0 {
		entries(w, "data", s.Data)
	} else {
		merged := make(map[string][]byte, len(s.Data)+len(s.StringData))
		for k, v := range s.Data {
			merged[k] = v
		}
		for k, v := range s.StringData {
			merged[k] = []byte(v)
		}
		entries(w, "data", merged)
	}
	return w.sum()
}

// ConfigMap returns the fingerprint of a ConfigMap's content: its immutability and every entry
// of data and binaryData. Metadata is ignored. The result is 64 lowercase hex digits.
func (f *Fingerprinter) ConfigMap(c *corev1.ConfigMap) string {
	w := f.start("ConfigMap", &c.ObjectMeta)
	w.flag(c.Immutable)
	entries(w, "data", c.Data)
	entries(w, "binaryData", c.BinaryData)
	return w.sum()
}

func (f *Fingerprinter) start(kind string, object *metav1.ObjectMeta) *fpWriter {
	w := &fpWriter{h: hmac.New(sha256.New, f.key)}
	w.str(fingerprintVersion)
	w.str(kind)
	if object != nil {
		w.str(object.Namespace)
		w.str(object.Name)
		w.str(string(object.UID))
	}
	return w
}

// fpWriter feeds an unambiguous encoding into the HMAC: every string is preceded by its length
// and every map by its size, so no two different inputs share a byte stream.
type fpWriter struct {
	h   hash.Hash
	buf [8]byte
}

func (w *fpWriter) length(n int) {
	binary.BigEndian.PutUint64(w.buf[:], uint64(n))
	w.h.Write(w.buf[:])
}

func (w *fpWriter) str(s string) {
	w.length(len(s))
	w.h.Write([]byte(s))
}

func (w *fpWriter) bytes(b []byte) {
	w.length(len(b))
	w.h.Write(b)
}

// flag encodes an optional boolean; unset and false mean the same to the API server.
func (w *fpWriter) flag(b *bool) {
	if b != nil && *b {
		w.h.Write([]byte{1})
	} else {
		w.h.Write([]byte{0})
	}
}

// entries encodes a named map in sorted key order.
func entries[V string | []byte](w *fpWriter, section string, m map[string]V) {
	w.str(section)
	w.length(len(m))
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		w.str(k)
		w.bytes([]byte(m[k]))
	}
}

func (w *fpWriter) sum() string {
	var out [sha256.Size]byte
	return hex.EncodeToString(w.h.Sum(out[:0]))
}

// MountedObject is one object a Secrets Store CSI mount reports, with the
// version it mounted.
type MountedObject struct {
	ID, Version string
}

// Mounted returns the fingerprint of a set of mounted object versions (what
// a SecretProviderClassPodStatus reports), independent of their order. Ids
// and versions are keyed like any content: a version may be derived from
// the secret itself. The result is 64 lowercase hex digits.
func (f *Fingerprinter) Mounted(objects []MountedObject) string {
	sorted := slices.Clone(objects)
	slices.SortFunc(sorted, func(a, b MountedObject) int {
		if a.ID != b.ID {
			return strings.Compare(a.ID, b.ID)
		}
		return strings.Compare(a.Version, b.Version)
	})
	w := f.start("SecretProviderClass", nil)
	w.length(len(sorted))
	for _, o := range sorted {
		w.str(o.ID)
		w.str(o.Version)
	}
	return w.sum()
}
