package observe

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func at(sec int64) *metav1.Time { t := metav1.Unix(sec, 0); return &t }

func rawSecret() *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: "db", UID: "uid-1", ResourceVersion: "42",
			CreationTimestamp: metav1.Unix(1000, 0),
			Labels:            map[string]string{"team": "a"},
			Annotations: map[string]string{
				"note":                "kept",
				lastAppliedAnnotation: `{"apiVersion":"v1","kind":"Secret","stringData":{"password":"s3cr3t-value"}}`,
			},
			ManagedFields: []metav1.ManagedFieldsEntry{
				{Manager: "kubectl", Time: at(1500)},
				{Manager: "helm", Time: nil},
				{Manager: "eso", Time: at(1200)},
			},
		},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{"password": []byte("s3cr3t-value")},
		StringData: map[string]string{"token": "s3cr3t-value"},
	}
}

func TestTransformSecretKeepsNoData(t *testing.T) {
	f := NewFingerprinter(testKey)
	s := rawSecret()
	want := f.Secret(s)
	out, err := TransformSources(f)(s)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*corev1.Secret)
	if got != s {
		t.Error("the transform should work in place")
	}
	if got.Data != nil || got.StringData != nil || got.ManagedFields != nil {
		t.Errorf("content or managedFields survived: data=%v stringData=%v managedFields=%v", got.Data, got.StringData, got.ManagedFields)
	}
	if _, ok := got.Annotations[lastAppliedAnnotation]; ok {
		t.Error("kubectl's last-applied-configuration survived")
	}
	if got.Annotations["note"] != "kept" || got.Labels["team"] != "a" {
		t.Error("other labels and annotations must stay (policies select sources by label)")
	}
	raw, _ := json.Marshal(got)
	if bytes.Contains(raw, []byte("s3cr3t")) {
		t.Fatalf("the cached object still holds the value: %s", raw)
	}
	if CachedFingerprint(got) != want {
		t.Errorf("CachedFingerprint = %q, want %q", CachedFingerprint(got), want)
	}
	lw, ok := CachedLastWrite(got)
	if !ok || !lw.Equal(time.Unix(1500, 0)) {
		t.Errorf("CachedLastWrite = %v, %v; want the latest managedFields time 1500", lw, ok)
	}

	// Idempotent: a second pass changes nothing.
	before, _ := json.Marshal(got)
	if _, err := TransformSources(f)(got); err != nil {
		t.Fatal(err)
	}
	after, _ := json.Marshal(got)
	if !bytes.Equal(before, after) {
		t.Errorf("second transform changed the object:\n%s\n%s", before, after)
	}
}

func TestTransformConfigMap(t *testing.T) {
	f := NewFingerprinter(testKey)
	c := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "cfg", ResourceVersion: "3", CreationTimestamp: metav1.Unix(2000, 0),
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "a", Time: nil}}},
		Data:       map[string]string{"k": "confidential"},
		BinaryData: map[string][]byte{"b": []byte("confidential")},
	}
	want := f.ConfigMap(c)
	if _, err := TransformSources(f)(c); err != nil {
		t.Fatal(err)
	}
	if c.Data != nil || c.BinaryData != nil || c.ManagedFields != nil {
		t.Fatal("ConfigMap content or managedFields survived")
	}
	if CachedFingerprint(c) != want {
		t.Error("wrong fingerprint")
	}
	if lw, ok := CachedLastWrite(c); !ok || !lw.Equal(time.Unix(2000, 0)) {
		t.Errorf("last write = %v, %v; want the creation time (no entry has a time)", lw, ok)
	}
}

func TestLastWrite(t *testing.T) {
	for _, tc := range []struct {
		name    string
		created int64
		times   []*metav1.Time
		want    int64
	}{
		{"creation only", 100, nil, 100},
		{"nil entry times", 100, []*metav1.Time{nil, nil}, 100},
		{"latest entry", 100, []*metav1.Time{at(150), nil, at(300), at(200)}, 300},
		{"entry before creation", 100, []*metav1.Time{at(50)}, 100},
		{"no creation time", 0, []*metav1.Time{at(70)}, 70},
	} {
		m := &metav1.ObjectMeta{}
		if tc.created != 0 {
			m.CreationTimestamp = metav1.Unix(tc.created, 0)
		}
		for _, tm := range tc.times {
			m.ManagedFields = append(m.ManagedFields, metav1.ManagedFieldsEntry{Time: tm})
		}
		got, ok := LastWrite(m)
		if !ok || got.Unix() != tc.want {
			t.Errorf("%s: LastWrite = %v, %v; want %d", tc.name, got, ok, tc.want)
		}
	}
	if _, ok := LastWrite(&metav1.ObjectMeta{}); ok {
		t.Error("an object without timestamps has no last write")
	}
}

func TestTransformDistrustsCopiedAnnotations(t *testing.T) {
	f := NewFingerprinter(testKey)
	// A writer copies the transform's annotations onto a real object, with no managedFields.
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "x", UID: "u", ResourceVersion: "9", CreationTimestamp: metav1.Unix(10, 0),
			Annotations: map[string]string{
				FingerprintAnnotation: strings.Repeat("0", 64),
				LastWriteAnnotation:   "2001-01-01T00:00:00Z",
				sealAnnotation:        strings.Repeat("1", 32),
			}},
		Data: map[string][]byte{"a": []byte("b")},
	}
	want := f.Secret(s)
	if _, err := TransformSources(f)(s); err != nil {
		t.Fatal(err)
	}
	if CachedFingerprint(s) != want {
		t.Error("a forged fingerprint annotation was trusted")
	}
	if lw, _ := CachedLastWrite(s); lw.Unix() != 10 {
		t.Errorf("a forged last-write annotation was trusted: %v", lw)
	}
	// Same object, next resourceVersion: the seal no longer matches, so it is recomputed.
	s.ResourceVersion = "10"
	s.Data = map[string][]byte{"a": []byte("c")}
	if _, err := TransformSources(f)(s); err != nil {
		t.Fatal(err)
	}
	if CachedFingerprint(s) == want {
		t.Error("a new version of a transformed object was not fingerprinted again")
	}
}

func TestTransformLeavesOtherObjectsAlone(t *testing.T) {
	f := NewFingerprinter(testKey)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Annotations: map[string]string{lastAppliedAnnotation: "{}"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}}}}
	before, _ := json.Marshal(pod)
	out, err := TransformSources(f)(pod)
	if err != nil || out != any(pod) {
		t.Fatalf("out=%v err=%v", out, err)
	}
	after, _ := json.Marshal(pod)
	if !bytes.Equal(before, after) {
		t.Errorf("a Pod was modified:\n%s\n%s", before, after)
	}
	var nilSecret *corev1.Secret
	if _, err := TransformSources(f)(nilSecret); err != nil {
		t.Fatal(err)
	}
	if _, err := TransformSources(f)("not an object"); err != nil {
		t.Fatal(err)
	}
}

func TestNewCacheOptions(t *testing.T) {
	opts := NewCacheOptions(NewFingerprinter(testKey))
	if len(opts) != 2 {
		t.Fatalf("want entries for Secret and ConfigMap, got %d", len(opts))
	}
	for obj, o := range opts {
		if o.Transform == nil {
			t.Errorf("%T has no transform", obj)
		}
	}
}
