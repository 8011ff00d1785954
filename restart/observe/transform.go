package observe

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kick-operator/kick/restart/discovery"
)

// SourceMetadata returns an empty metadata-only object of a source kind ("Secret",
// "ConfigMap"): what the manager watches, caches and reads of Secrets and ConfigMaps. Reading
// a typed *corev1.Secret or *corev1.ConfigMap through the manager's cached client instead would
// make controller-runtime start a second informer that lists every one of them with its data.
func SourceMetadata(kind string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: discovery.CoreAPIVersion, Kind: kind}}
}

// TransformSourceMetadata is the cache transform of the Secrets and ConfigMaps the manager
// watches metadata-only. It keeps what decisions read: name, namespace, uid, resourceVersion,
// labels (policies select sources by label) and deletionTimestamp. Annotations (kubectl's
// last-applied-configuration may hold a Secret's data), managedFields, ownerReferences,
// finalizers and the API server's timestamps are dropped. A metadata-only object is cut down
// in place: every field is overwritten, so nothing else of what was decoded stays reachable,
// and the cache keeps the decoder's object instead of a copy. A copy would leave the decoded
// objects' slots free between the cached ones after a LIST of every Secret: heap the Go
// runtime cannot return, about as much again as the cached objects themselves.
//
// The cached copy's creationTimestamp is replaced by the moment this manager received that
// resourceVersion (read it with SeenAt): the content it stands for was written no later than
// that, to the nanosecond, where the API server's own timestamps only give the second.
//
// Should something start a typed informer for Secrets or ConfigMaps anyway, its objects are
// reduced the same way and lose their content: data, stringData and binaryData.
func TransformSourceMetadata(in any) (any, error) {
	switch o := in.(type) {
	case *metav1.PartialObjectMetadata:
		if o == nil {
			break
		}
		o.TypeMeta = metav1.TypeMeta{APIVersion: internString(o.APIVersion), Kind: internString(o.Kind)}
		o.ObjectMeta = slimMeta(&o.ObjectMeta)
		return o, nil
	case *corev1.Secret:
		if o == nil {
			break
		}
		return &corev1.Secret{TypeMeta: o.TypeMeta, ObjectMeta: slimMeta(&o.ObjectMeta), Type: o.Type, Immutable: o.Immutable}, nil
	case *corev1.ConfigMap:
		if o == nil {
			break
		}
		return &corev1.ConfigMap{TypeMeta: o.TypeMeta, ObjectMeta: slimMeta(&o.ObjectMeta), Immutable: o.Immutable}, nil
	}
	return in, nil
}

// slimMeta is the part of a source's metadata the cache keeps.
func slimMeta(m *metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:              m.Name,
		CreationTimestamp: metav1.NewTime(time.Now()),
		Namespace:         internString(m.Namespace),
		UID:               m.UID,
		ResourceVersion:   m.ResourceVersion,
		Labels:            internLabels(m.Labels),
		DeletionTimestamp: m.DeletionTimestamp,
	}
}

// SeenAt returns when this manager's cache first received the resourceVersion of a source
// cached by TransformSourceMetadata (zero for an object that did not come through it). Only
// meaningful on cached copies: on an object read from the API server it is the creation time.
func SeenAt(cached metav1.Object) time.Time { return cached.GetCreationTimestamp().Time }

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

// content fingerprints a source read in full, as a whole and key by key, and returns its λ(s)
// (zero when it carries no timestamps). The object is not kept.
func content(f *Fingerprinter, obj client.Object) (fingerprint string, keys *KeyPrints, lastWrite time.Time) {
	var m *metav1.ObjectMeta
	switch o := obj.(type) {
	case *corev1.Secret:
		fingerprint, m = f.Secret(o), &o.ObjectMeta
	case *corev1.ConfigMap:
		fingerprint, m = f.ConfigMap(o), &o.ObjectMeta
	default:
		return "", nil, time.Time{}
	}
	k, _ := Prints(f, obj)
	lastWrite, _ = LastWrite(m)
	return fingerprint, &k, lastWrite
}
