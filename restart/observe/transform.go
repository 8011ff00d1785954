package observe

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
)

// Annotations the cache transform puts on cached Secrets and ConfigMaps. They exist only in the
// manager's memory, never on the API server.
const (
	// FingerprintAnnotation holds the keyed content fingerprint.
	FingerprintAnnotation = "internal.kick.corewire.io/fingerprint"
	// LastWriteAnnotation holds λ(s), the latest write the API server recorded (RFC 3339).
	LastWriteAnnotation = "internal.kick.corewire.io/last-write"
	// sealAnnotation authenticates the two values above (see transformed).
	sealAnnotation = "internal.kick.corewire.io/seal"

	// lastAppliedAnnotation is kubectl's client-side apply record; for a Secret it holds the data.
	lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"
)

// TransformSources returns a cache transform for Secrets and ConfigMaps: it records the content
// fingerprint and the last-write time as annotations, then drops data, stringData, binaryData,
// managedFields and kubectl's last-applied-configuration, so the cache holds no source content.
// Other objects pass through untouched. The transform is idempotent: an object it already
// transformed is returned as it is (recognised by a keyed seal, so an annotation copied onto
// a real object is not mistaken for one).
func TransformSources(f *Fingerprinter) toolscache.TransformFunc {
	return func(in any) (any, error) {
		switch o := in.(type) {
		case *corev1.Secret:
			if o == nil {
				break
			}
			if !transformed(f, &o.ObjectMeta) {
				strip(f, &o.ObjectMeta, f.Secret(o))
			}
			if o.Data != nil || o.StringData != nil {
				o.Data, o.StringData = nil, nil
			}
		case *corev1.ConfigMap:
			if o == nil {
				break
			}
			if !transformed(f, &o.ObjectMeta) {
				strip(f, &o.ObjectMeta, f.ConfigMap(o))
			}
			if o.Data != nil || o.BinaryData != nil {
				o.Data, o.BinaryData = nil, nil
			}
		}
		return in, nil
	}
}

// LastWrite returns λ(s): the later of the creation time and every write time recorded in the
// object's managedFields, or false when the object carries neither.
func LastWrite(m *metav1.ObjectMeta) (time.Time, bool) {
	last := m.CreationTimestamp.Time
	for i := range m.ManagedFields {
		if t := m.ManagedFields[i].Time; t != nil && t.After(last) {
			last = t.Time
		}
	}
	return last, !last.IsZero()
}

// CachedFingerprint returns the fingerprint the cache transform stored on obj, "" if none.
func CachedFingerprint(obj metav1.Object) string {
	return obj.GetAnnotations()[FingerprintAnnotation]
}

// CachedLastWrite returns the last-write time the cache transform stored on obj.
func CachedLastWrite(obj metav1.Object) (time.Time, bool) {
	v, ok := obj.GetAnnotations()[LastWriteAnnotation]
	if !ok {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, false
	}
	return t, true
}

// strip stores the fingerprint and last-write time on m and removes everything that could
// carry content or that no decision needs.
func strip(f *Fingerprinter, m *metav1.ObjectMeta, fp string) {
	lw, hasLW := LastWrite(m)
	ann := m.Annotations
	if ann == nil {
		ann = make(map[string]string, 3)
	}
	delete(ann, lastAppliedAnnotation)
	ann[FingerprintAnnotation] = fp
	lwText := ""
	if hasLW {
		lwText = lw.UTC().Format(time.RFC3339)
		ann[LastWriteAnnotation] = lwText
	} else {
		delete(ann, LastWriteAnnotation)
	}
	ann[sealAnnotation] = f.seal(string(m.UID), m.ResourceVersion, fp, lwText)
	m.Annotations = ann
	m.ManagedFields = nil
}

// transformed reports whether m already went through strip with this key.
func transformed(f *Fingerprinter, m *metav1.ObjectMeta) bool {
	seal, ok := m.Annotations[sealAnnotation]
	if !ok || len(m.ManagedFields) > 0 {
		return false
	}
	want := f.seal(string(m.UID), m.ResourceVersion, m.Annotations[FingerprintAnnotation], m.Annotations[LastWriteAnnotation])
	return seal == want
}
