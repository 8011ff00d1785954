package v1alpha1

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

// sourceKinds are the kinds KICK records observations of.
var sourceKinds = []string{"Secret", "ConfigMap", "SecretProviderClass"}

// maxKindLen bounds the kinds fed to ObservationName: a Kubernetes kind is
// a short identifier (KICK passes only the constants above).
const maxKindLen = 63

func validName(t *testing.T, what, name string) {
	t.Helper()
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		t.Fatalf("%s = %q, not a valid object name: %s", what, name, strings.Join(errs, "; "))
	}
}

// FuzzObservationName: for any kind (up to maxKindLen bytes) and any source
// name the record name is a valid DNS-1123 subdomain and the same every
// time, and two different sources of the kinds KICK observes never share a
// record.
func FuzzObservationName(f *testing.F) {
	long := strings.Repeat("a", 300)
	for _, seed := range []struct {
		kind, name, kind2, name2 string
	}{
		{"Secret", "db-creds", "ConfigMap", "db-creds"},
		{"Secret", "db.creds", "Secret", "db-creds"},
		{"Secret", "DB", "Secret", "db"},
		{"Secret", long, "Secret", long + "b"},
		{"Secret", "-a-", "Secret", "a"},
		{"Secret", "", "ConfigMap", ""},
		{"SecretProviderClass", "vault/deployment/web", "SecretProviderClass", "vault.deployment.web"},
		{"Secret", "a..b", "Secret", "a.b"},
		{"Secret", "..", "Secret", "x"},
		{"", "x", "???", "x"},
		{strings.Repeat("K", maxKindLen), long, "Secret", "\xff\x00"},
		{strings.Repeat("K", 300), long, strings.Repeat("k", 236), "x"},
		{"Secret", "providerclass-x", "SecretProviderClass", "x"},
	} {
		f.Add(seed.kind, seed.name, seed.kind2, seed.name2)
	}
	f.Fuzz(func(t *testing.T, kind, name, kind2, name2 string) {
		got := ObservationName(kind, name) // any kind: never a panic, always a valid name
		validName(t, "ObservationName("+kind+", "+name+")", got)
		if again := ObservationName(kind, name); again != got {
			t.Fatalf("ObservationName(%q, %q) is not deterministic: %q, then %q", kind, name, got, again)
		}
		validName(t, "ObservationName("+kind2+", "+name2+")", ObservationName(kind2, name2))

		// Distinct sources, with kinds as KICK passes them.
		k1 := sourceKinds[len(kind)%len(sourceKinds)]
		k2 := sourceKinds[len(kind2)%len(sourceKinds)]
		if k1 == k2 && name == name2 {
			return
		}
		if a, b := ObservationName(k1, name), ObservationName(k2, name2); a == b {
			t.Fatalf("%s %q and %s %q share the record name %q", k1, name, k2, name2, a)
		}
	})
}

// FuzzConsumerObservationName: per-consumer record names are valid, and
// distinct for distinct (source, consumer) pairs whenever the names are
// valid object names (as the API server guarantees), also from every
// per-source record name.
func FuzzConsumerObservationName(f *testing.F) {
	f.Add("vault-db", "web", "vault-db", "api", uint8(0), uint8(0))
	f.Add("vault", "db.web", "vault.db", "web", uint8(0), uint8(0))
	f.Add("vault", "web", "vault", "web", uint8(0), uint8(1))
	f.Add(strings.Repeat("s", 253), strings.Repeat("w", 253), "s", "w", uint8(2), uint8(3))
	consumers := []TargetKind{TargetDeployment, TargetStatefulSet, TargetDaemonSet, TargetRollout}
	f.Fuzz(func(t *testing.T, source, consumer, source2, consumer2 string, kind, kind2 uint8) {
		ck := consumers[int(kind)%len(consumers)]
		ck2 := consumers[int(kind2)%len(consumers)]
		got := ConsumerObservationName("SecretProviderClass", source, ck, consumer)
		validName(t, "ConsumerObservationName", got)
		for _, n := range []string{source, consumer, source2, consumer2} {
			if len(validation.IsDNS1123Subdomain(n)) > 0 {
				return
			}
		}
		if (source != source2 || consumer != consumer2 || ck != ck2) &&
			got == ConsumerObservationName("SecretProviderClass", source2, ck2, consumer2) {
			t.Fatalf("(%s, %s %s) and (%s, %s %s) share the record name %q", source, ck, consumer, source2, ck2, consumer2, got)
		}
		for _, n := range []string{source, consumer, source2} {
			if got == ObservationName("SecretProviderClass", n) {
				t.Fatalf("the per-consumer record %q is also the record of source %q", got, n)
			}
		}
	})
}

// FuzzDNS1123Subdomain: the hand-written check agrees with the validation
// package on every string, so record names never change with it.
func FuzzDNS1123Subdomain(f *testing.F) {
	for _, seed := range []string{"", "a", "a.b", "a..b", ".a", "a.", "-a", "a-", "a-.b", "a.-b", "A", "a_b", "a b",
		"secret-db-creds", strings.Repeat("a", 253), strings.Repeat("a", 254), strings.Repeat("a.", 126) + "a", "\xff", "é"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := isDNS1123Subdomain(s), len(validation.IsDNS1123Subdomain(s)) == 0; got != want {
			t.Fatalf("isDNS1123Subdomain(%q) = %v, validation says %v", s, got, want)
		}
	})
}
