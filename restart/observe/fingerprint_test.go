package observe

import (
	"regexp"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

var testKey = []byte("0123456789abcdef0123456789abcdef")

// The SourceObservation CRD accepts ^[0-9a-f]*$ up to 128 characters.
var fingerprintFormat = regexp.MustCompile(`^[0-9a-f]{64}$`)

func secret(data map[string]string) *corev1.Secret {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db", ResourceVersion: "7", UID: "u1"},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{},
	}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

func TestSecretFingerprint(t *testing.T) {
	f := NewFingerprinter(testKey)
	base := secret(map[string]string{"user": "admin", "password": "hunter2"})
	fp := f.Secret(base)
	if !fingerprintFormat.MatchString(fp) {
		t.Fatalf("fingerprint %q is not 64 lowercase hex digits", fp)
	}
	if again := f.Secret(secret(map[string]string{"password": "hunter2", "user": "admin"})); again != fp {
		t.Errorf("same content, other insertion order: %q != %q", again, fp)
	}

	meta := base.DeepCopy()
	meta.Labels = map[string]string{"a": "b"}
	meta.Annotations = map[string]string{"c": "d"}
	meta.ResourceVersion, meta.Generation = "99", 4
	meta.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	if got := f.Secret(meta); got != fp {
		t.Errorf("metadata changed the fingerprint")
	}
	// The fingerprint is bound to the object: equal content elsewhere (another namespace or
	// name, or the same name created again) must not be recognisable as equal.
	for what, change := range map[string]func(*corev1.Secret){
		"namespace": func(s *corev1.Secret) { s.Namespace = "elsewhere" },
		"name":      func(s *corev1.Secret) { s.Name = "other" },
		"uid":       func(s *corev1.Secret) { s.UID = "u2" },
	} {
		moved := base.DeepCopy()
		change(moved)
		if got := f.Secret(moved); got == fp {
			t.Errorf("the same content under another %s has the same fingerprint", what)
		}
	}

	emptyType := base.DeepCopy()
	emptyType.Type = ""
	if got := f.Secret(emptyType); got != fp {
		t.Errorf("an empty type is Opaque to the API server, but changed the fingerprint")
	}
	notImmutable := base.DeepCopy()
	notImmutable.Immutable = ptr.To(false)
	if got := f.Secret(notImmutable); got != fp {
		t.Errorf("immutable=false and unset mean the same, but fingerprints differ")
	}
	viaStringData := secret(map[string]string{"user": "admin"})
	viaStringData.StringData = map[string]string{"password": "hunter2"}
	if got := f.Secret(viaStringData); got != fp {
		t.Errorf("stringData is merged into data as the API server does, but the fingerprint differs")
	}
	overridden := secret(map[string]string{"user": "admin", "password": "old"})
	overridden.StringData = map[string]string{"password": "hunter2"}
	if got := f.Secret(overridden); got != fp {
		t.Errorf("stringData overrides data, but the fingerprint differs")
	}

	changes := map[string]func(s *corev1.Secret){
		"value":         func(s *corev1.Secret) { s.Data["password"] = []byte("hunter3") },
		"added key":     func(s *corev1.Secret) { s.Data["extra"] = nil },
		"removed key":   func(s *corev1.Secret) { delete(s.Data, "user") },
		"renamed key":   func(s *corev1.Secret) { s.Data["User"] = s.Data["user"]; delete(s.Data, "user") },
		"type":          func(s *corev1.Secret) { s.Type = corev1.SecretTypeBasicAuth },
		"immutable":     func(s *corev1.Secret) { s.Immutable = ptr.To(true) },
		"empty value":   func(s *corev1.Secret) { s.Data["password"] = []byte{} },
		"stringData on": func(s *corev1.Secret) { s.StringData = map[string]string{"password": "x"} },
	}
	for name, change := range changes {
		s := base.DeepCopy()
		change(s)
		if got := f.Secret(s); got == fp {
			t.Errorf("%s: fingerprint did not change", name)
		}
	}

	if other := NewFingerprinter([]byte("another key, another key, another")).Secret(base); other == fp {
		t.Error("a different key gave the same fingerprint")
	}
}

func TestFingerprintIsUnambiguous(t *testing.T) {
	f := NewFingerprinter(testKey)
	pairs := [][2]map[string]string{
		{{"ab": "c"}, {"a": "bc"}},
		{{"a": "b", "c": "d"}, {"a": "bcd"}},
		{{"a": ""}, {}},
		{{"a": "b\x00c"}, {"a": "b", "c": ""}},
	}
	for _, p := range pairs {
		if f.Secret(secret(p[0])) == f.Secret(secret(p[1])) {
			t.Errorf("%v and %v share a fingerprint", p[0], p[1])
		}
	}
	// The same bytes as a Secret and as a ConfigMap are different sources.
	cm := &corev1.ConfigMap{Data: map[string]string{"a": "b"}}
	s := &corev1.Secret{Data: map[string][]byte{"a": []byte("b")}}
	if f.ConfigMap(cm) == f.Secret(s) {
		t.Error("a ConfigMap and a Secret with the same data share a fingerprint")
	}
}

func TestConfigMapFingerprint(t *testing.T) {
	f := NewFingerprinter(testKey)
	base := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "cfg", Labels: map[string]string{"x": "y"}},
		Data:       map[string]string{"app.yaml": "port: 80", "b": "2"},
		BinaryData: map[string][]byte{"logo.png": {0x89, 'P', 'N', 'G'}},
	}
	fp := f.ConfigMap(base)
	if !fingerprintFormat.MatchString(fp) {
		t.Fatalf("fingerprint %q is not 64 lowercase hex digits", fp)
	}
	meta := base.DeepCopy()
	meta.Labels, meta.Annotations, meta.ResourceVersion = nil, map[string]string{"k": "v"}, "5"
	if f.ConfigMap(meta) != fp {
		t.Error("metadata changed the fingerprint")
	}
	for name, change := range map[string]func(c *corev1.ConfigMap){
		"data value":     func(c *corev1.ConfigMap) { c.Data["b"] = "3" },
		"binary value":   func(c *corev1.ConfigMap) { c.BinaryData["logo.png"] = []byte{0} },
		"immutable":      func(c *corev1.ConfigMap) { c.Immutable = ptr.To(true) },
		"key moved":      func(c *corev1.ConfigMap) { c.BinaryData["b"] = []byte("2"); delete(c.Data, "b") },
		"binary dropped": func(c *corev1.ConfigMap) { c.BinaryData = nil },
	} {
		c := base.DeepCopy()
		change(c)
		if f.ConfigMap(c) == fp {
			t.Errorf("%s: fingerprint did not change", name)
		}
	}
}

func TestKeyID(t *testing.T) {
	a := NewFingerprinter(testKey)
	if !regexp.MustCompile(`^[0-9a-f]{16}$`).MatchString(a.KeyID()) {
		t.Fatalf("KeyID %q is not 16 hex digits", a.KeyID())
	}
	if NewFingerprinter(testKey).KeyID() != a.KeyID() {
		t.Error("KeyID is not deterministic")
	}
	if NewFingerprinter([]byte("0123456789abcdef0123456789abcdeF")).KeyID() == a.KeyID() {
		t.Error("different keys share a KeyID")
	}
	// The key is copied: changing the caller's slice changes nothing.
	key := append([]byte(nil), testKey...)
	b := NewFingerprinter(key)
	before := b.Secret(secret(map[string]string{"a": "b"}))
	key[0] ^= 0xff
	if b.Secret(secret(map[string]string{"a": "b"})) != before {
		t.Error("the Fingerprinter shares the caller's key slice")
	}
}

func BenchmarkSecretFingerprint1MiB(b *testing.B) {
	f := NewFingerprinter(testKey)
	s := &corev1.Secret{Data: map[string][]byte{"blob": make([]byte, 1<<20)}}
	b.SetBytes(1 << 20)
	for b.Loop() {
		f.Secret(s)
	}
}
