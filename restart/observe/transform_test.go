package observe

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

func at(sec int64) *metav1.Time { t := metav1.Unix(sec, 0); return &t }

const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// rawMeta is the metadata of a Secret as a metadata-only watch delivers it.
func rawMeta() metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Namespace: "ns", Name: "db", UID: "uid-1", ResourceVersion: "42", Generation: 3,
		GenerateName:      "db-",
		CreationTimestamp: metav1.Unix(1000, 0),
		DeletionTimestamp: at(2000),
		Labels:            map[string]string{"team": "a"},
		Annotations: map[string]string{
			"note":      "dropped",
			lastApplied: `{"apiVersion":"v1","kind":"Secret","stringData":{"password":"s3cr3t-value"}}`,
		},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: "uid-owner"}},
		Finalizers:      []string{"example.com/keep"},
		ManagedFields: []metav1.ManagedFieldsEntry{
			{Manager: "kubectl", Time: at(1500), FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:data":{"f:password":{}}}`)},
		},
	}
}

// wantMeta is what the cache keeps of rawMeta.
func wantMeta() metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Namespace: "ns", Name: "db", UID: "uid-1", ResourceVersion: "42",
		DeletionTimestamp: at(2000),
		Labels:            map[string]string{"team": "a"},
	}
}

func TestTransformSourceMetadata(t *testing.T) {
	in := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: rawMeta()}
	before := time.Now()
	out, err := TransformSourceMetadata(in)
	after := time.Now()
	if err != nil {
		t.Fatal(err)
	}
	got, ok := out.(*metav1.PartialObjectMetadata)
	if !ok {
		t.Fatalf("transform returned %T", out)
	}
	// Cut down in place (no copy that would leave the decoded object's slot free in the heap);
	// the comparison below shows nothing else of it stays.
	if got != in {
		t.Error("a metadata-only object must be cut down in place, not copied")
	}
	// The API server's creation time is replaced by the moment the cache received the object.
	if seen := SeenAt(got); seen.Before(before) || seen.After(after) {
		t.Errorf("SeenAt = %v, want the transform's time (between %v and %v)", seen, before, after)
	}
	got.CreationTimestamp = metav1.Time{}
	want := &metav1.PartialObjectMetadata{TypeMeta: in.TypeMeta, ObjectMeta: wantMeta()}
	gotJSON, _ := json.Marshal(got)
	wantJSON, _ := json.Marshal(want)
	if !bytes.Equal(gotJSON, wantJSON) {
		t.Errorf("cached metadata:\n got %s\nwant %s", gotJSON, wantJSON)
	}
	if bytes.Contains(gotJSON, []byte("s3cr3t")) {
		t.Fatalf("the cached object still holds the value: %s", gotJSON)
	}

	// Idempotent: a second pass changes nothing.
	again, err := TransformSourceMetadata(got)
	if err != nil {
		t.Fatal(err)
	}
	again.(*metav1.PartialObjectMetadata).CreationTimestamp = metav1.Time{}
	if againJSON, _ := json.Marshal(again); !bytes.Equal(againJSON, gotJSON) {
		t.Errorf("second transform changed the object:\n%s\n%s", gotJSON, againJSON)
	}
}

// TestTransformTypedSources: a typed informer is not expected, but one started by mistake must
// cache no content either.
func TestTransformTypedSources(t *testing.T) {
	s := &corev1.Secret{
		ObjectMeta: rawMeta(), Type: corev1.SecretTypeTLS, Immutable: ptr.To(true),
		Data: map[string][]byte{"password": []byte("s3cr3t-value")}, StringData: map[string]string{"token": "s3cr3t-value"},
	}
	c := &corev1.ConfigMap{ObjectMeta: rawMeta(), Data: map[string]string{"k": "s3cr3t-value"}, BinaryData: map[string][]byte{"b": []byte("s3cr3t-value")}}
	for _, in := range []any{s, c} {
		out, err := TransformSourceMetadata(in)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := json.Marshal(out)
		if bytes.Contains(raw, []byte("s3cr3t")) || bytes.Contains(raw, []byte("managedFields")) || bytes.Contains(raw, []byte("annotations")) {
			t.Errorf("%T keeps content or metadata nothing reads: %s", in, raw)
		}
	}
	out, _ := TransformSourceMetadata(s)
	if got := out.(*corev1.Secret); got.Labels["team"] != "a" || got.ResourceVersion != "42" || got.UID != "uid-1" || got.Type != corev1.SecretTypeTLS {
		t.Errorf("typed Secret lost what decisions read: %+v", got)
	}
}

func TestTransformLeavesOtherObjectsAlone(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Annotations: map[string]string{lastApplied: "{}"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}}}}
	before, _ := json.Marshal(pod)
	out, err := TransformSourceMetadata(pod)
	if err != nil || out != any(pod) {
		t.Fatalf("out=%v err=%v", out, err)
	}
	after, _ := json.Marshal(pod)
	if !bytes.Equal(before, after) {
		t.Errorf("a Pod was modified:\n%s\n%s", before, after)
	}
	for _, in := range []any{(*metav1.PartialObjectMetadata)(nil), (*corev1.Secret)(nil), (*corev1.ConfigMap)(nil), "not an object"} {
		if out, err := TransformSourceMetadata(in); err != nil || out != in {
			t.Errorf("%T: out=%v err=%v", in, out, err)
		}
	}
}

func TestContent(t *testing.T) {
	f := NewFingerprinter(testKey)
	s := &corev1.Secret{ObjectMeta: rawMeta(), Data: map[string][]byte{"password": []byte("s3cr3t-value")}}
	s.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl", Time: at(1500)}, {Manager: "helm"}, {Manager: "eso", Time: at(1200)}}
	fp, keys, lw := content(f, s)
	if keys == nil || keys.Count != 1 || len(keys.Entries) != 1 {
		t.Errorf("Secret: key prints %+v, want one entry", keys)
	}
	if fp != f.Secret(s) || !lw.Equal(time.Unix(1500, 0)) {
		t.Errorf("Secret: fingerprint %q, last write %v; want %q and the latest managedFields time 1500", fp, lw, f.Secret(s))
	}
	c := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", CreationTimestamp: metav1.Unix(2000, 0),
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "a"}}}, Data: map[string]string{"k": "v"}}
	if fp, _, lw := content(f, c); fp != f.ConfigMap(c) || !lw.Equal(time.Unix(2000, 0)) {
		t.Errorf("ConfigMap: fingerprint %q, last write %v; want the creation time (no entry has a time)", fp, lw)
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

func TestNewCacheOptions(t *testing.T) {
	opts := NewCacheOptions()
	want := map[schema.GroupVersionKind]bool{{Version: "v1", Kind: "Secret"}: true, {Version: "v1", Kind: "ConfigMap"}: true}
	if len(opts) != len(want) {
		t.Fatalf("want entries for Secret and ConfigMap, got %d", len(opts))
	}
	for obj, o := range opts {
		m, ok := obj.(*metav1.PartialObjectMetadata)
		if !ok || !want[m.GroupVersionKind()] {
			t.Errorf("cache entry for %T %v: Secrets and ConfigMaps must be cached as metadata only", obj, obj.GetObjectKind().GroupVersionKind())
		}
		if o.Transform == nil {
			t.Errorf("%v has no transform", obj.GetObjectKind().GroupVersionKind())
		}
	}
}

func TestTransformSharesRepeatedMetadata(t *testing.T) {
	meta := func(name string, labels map[string]string) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
			Namespace: strings.Clone("shop"), Name: name, Labels: labels}}
	}
	a, _ := TransformSourceMetadata(meta("a", map[string]string{"app": "web", "tier": "db"}))
	b, _ := TransformSourceMetadata(meta("b", map[string]string{"tier": "db", "app": "web"}))
	c, _ := TransformSourceMetadata(meta("c", map[string]string{"app": "web", "tier": "cache"}))
	la, lb, lc := a.(*metav1.PartialObjectMetadata).Labels, b.(*metav1.PartialObjectMetadata).Labels, c.(*metav1.PartialObjectMetadata).Labels
	if reflect.ValueOf(la).Pointer() != reflect.ValueOf(lb).Pointer() {
		t.Error("two equal label sets are stored twice")
	}
	if reflect.ValueOf(la).Pointer() == reflect.ValueOf(lc).Pointer() || lc["tier"] != "cache" {
		t.Errorf("different label sets were merged: %v %v", la, lc)
	}
	if na, nb := a.(*metav1.PartialObjectMetadata).Namespace, b.(*metav1.PartialObjectMetadata).Namespace; unsafe.StringData(na) != unsafe.StringData(nb) {
		t.Error("the namespace string is stored once per object")
	}
	// A key or value holding the separators cannot collide with another set.
	x := internLabels(map[string]string{"a": "1b1:2"})
	y := internLabels(map[string]string{"a": "1", "b": "2"})
	if len(x) == len(y) {
		t.Errorf("label sets collided: %v %v", x, y)
	}
}
