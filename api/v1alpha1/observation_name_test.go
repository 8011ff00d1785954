/*
Copyright 2026 The KICK Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package v1alpha1

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestObservationNameShortForm(t *testing.T) {
	for _, tc := range []struct{ kind, name, want string }{
		{"Secret", "db-creds", "secret-db-creds"},
		{"ConfigMap", "app.config", "configmap-app.config"},
		{"SecretProviderClass", "vault", "secretproviderclass-vault"},
	} {
		if got := ObservationName(tc.kind, tc.name); got != tc.want {
			t.Errorf("ObservationName(%q, %q) = %q, want %q", tc.kind, tc.name, got, tc.want)
		}
	}
}

func TestObservationNameIsAlwaysValidAndDeterministic(t *testing.T) {
	long := strings.Repeat("a", 253)
	dotted := strings.Repeat("abc.", 70) + "z" // 281 characters
	inputs := [][2]string{
		{"Secret", long},
		{"ConfigMap", long},
		{"SecretProviderClass", long},
		{"Secret", dotted},
		{"Secret", strings.Repeat("a", 245) + "-b"}, // cut lands on the "-"
		{"Secret", strings.Repeat("a", 245) + ".b"}, // cut lands on the "."
		{"Secret", "Upper_Case"},
		{"Secret", "___"},
		{"Secret", ""},
		{"", "x"},
		{"Weird Kind!", "x"},
	}
	for _, in := range inputs {
		got := ObservationName(in[0], in[1])
		if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
			t.Errorf("ObservationName(%q, %q) = %q is invalid: %v", in[0], in[1], got, errs)
		}
		if again := ObservationName(in[0], in[1]); again != got {
			t.Errorf("ObservationName(%q, %q) not deterministic: %q then %q", in[0], in[1], got, again)
		}
	}
}

func TestObservationNameLongNamesDoNotCollide(t *testing.T) {
	// Names that share the part kept before the hash.
	a := strings.Repeat("a", 250) + "1"
	b := strings.Repeat("a", 250) + "2"
	na, nb := ObservationName("Secret", a), ObservationName("Secret", b)
	if na == nb {
		t.Fatalf("distinct sources share the name %q", na)
	}
	if len(na) > validation.DNS1123SubdomainMaxLength {
		t.Fatalf("name too long: %d", len(na))
	}
	if !strings.HasPrefix(na, "secret.aaaa") {
		t.Fatalf("hashed name %q should keep a readable prefix", na)
	}
	// The same long name under another kind gets another record.
	if ObservationName("ConfigMap", a) == na {
		t.Fatal("a Secret and a ConfigMap share a name")
	}
}

func TestObservationNameFormsAreDisjoint(t *testing.T) {
	// A short-form name never contains "." right after the kind, so no
	// source name can be chosen to hit another source's hashed name.
	hashed := ObservationName("Secret", strings.Repeat("a", 300))
	rest := strings.TrimPrefix(hashed, "secret.")
	if rest == hashed {
		t.Fatalf("hashed name %q lacks the kind dot", hashed)
	}
	if ObservationName("Secret", rest) == hashed {
		t.Fatal("a short-form name collides with a hashed one")
	}
	// Kinds that are prefixes of each other stay apart.
	if ObservationName("Secret", "providerclass-x") == ObservationName("SecretProviderClass", "x") {
		t.Fatal("kinds collide")
	}
}

func TestConsumerObservationName(t *testing.T) {
	a := ConsumerObservationName("SecretProviderClass", "vault", TargetDeployment, "web")
	if errs := validation.IsDNS1123Subdomain(a); len(errs) != 0 {
		t.Fatalf("%q is not a valid name: %v", a, errs)
	}
	if !strings.HasPrefix(a, "secretproviderclass.vault-deployment-web-") {
		t.Fatalf("%q lacks a readable prefix", a)
	}
	if a != ConsumerObservationName("SecretProviderClass", "vault", TargetDeployment, "web") {
		t.Fatal("not deterministic")
	}
	for _, other := range []string{
		ConsumerObservationName("SecretProviderClass", "vault", TargetStatefulSet, "web"),
		ConsumerObservationName("SecretProviderClass", "vault.deployment", TargetDeployment, "web"),
		ConsumerObservationName("SecretProviderClass", "vault", TargetDeployment, "deployment.web"),
		ObservationName("SecretProviderClass", "vault"),
	} {
		if other == a {
			t.Fatalf("%q names two records", a)
		}
	}
	long := ConsumerObservationName("SecretProviderClass", strings.Repeat("v", 253), TargetRollout, strings.Repeat("w", 253))
	if errs := validation.IsDNS1123Subdomain(long); len(errs) != 0 {
		t.Fatalf("long name invalid: %v", errs)
	}
}
