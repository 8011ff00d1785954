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
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// observationHashLen is the number of hex digits of the name hash used for
// names that do not fit (64 bits).
const observationHashLen = 16

// ObservationName returns the name of the SourceObservation that records
// the source of the given kind and name (in the source's namespace).
//
// The result is deterministic and always a valid object name. Normally it is
// "<kind>-<name>" with the kind lower-cased, e.g. "secret-db-creds". When
// that is not a valid name (too long, or odd characters), it becomes
// "<kind>.<prefix>-<hash>": a cleaned, shortened prefix of the name and a
// hash of kind and name. The "." after the kind cannot appear in the short
// form (kinds carry no punctuation), so the two forms never collide.
func ObservationName(kind, sourceName string) string {
	k := cleanKind(kind)
	short := k + "-" + sourceName
	if isDNS1123Subdomain(short) {
		return short
	}

	sum := sha256.Sum256([]byte(kind + "/" + sourceName))
	suffix := "-" + hex.EncodeToString(sum[:])[:observationHashLen]
	head := k + "."
	room := validation.DNS1123SubdomainMaxLength - len(head) - len(suffix)
	prefix := cleanName(sourceName)
	if len(prefix) > room {
		prefix = prefix[:room]
	}
	// Each dot-separated label must start and end with a letter or digit.
	prefix = strings.Trim(prefix, ".-")
	if prefix == "" {
		prefix = "x"
	}
	return head + prefix + suffix
}

// cleanKind lower-cases a kind and keeps only letters and digits.
func cleanKind(kind string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(kind) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		}
	}
	if b.Len() == 0 {
		return "source"
	}
	// A DNS label's length: the name always keeps room for a prefix and the hash.
	return b.String()[:min(b.Len(), 63)]
}

// cleanName lower-cases a name, maps characters outside [a-z0-9.-] to "-"
// and removes empty labels and label edges that would make it invalid.
func cleanName(name string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		switch {
		case (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r == '.' || r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	labels := strings.Split(b.String(), ".")
	kept := labels[:0]
	for _, l := range labels {
		if l = strings.Trim(l, "-"); l != "" {
			kept = append(kept, l)
		}
	}
	return strings.Join(kept, ".")
}

// ConsumerObservationName returns the name of the SourceObservation that
// records a source for one consuming workload, for sources whose content
// KICK observes per consumer: a Secrets Store CSI SecretProviderClass, whose
// mounted object versions are those the workload's own pods report.
//
// The name always takes the hashed form of ObservationName (the "/"
// separators are not valid in a name), so two different (source, consumer)
// pairs never share a record even when names contain dots.
func ConsumerObservationName(sourceKind, sourceName string, consumerKind TargetKind, consumerName string) string {
	return ObservationName(sourceKind, sourceName+"/"+strings.ToLower(string(consumerKind))+"/"+consumerName)
}

// isDNS1123Subdomain reports what len(validation.IsDNS1123Subdomain(s)) == 0
// does, without the regular expression (the preflight names a record for
// every dependency of every consumer): at most 253 characters, dot-separated
// labels of lower-case letters, digits and '-', each starting and ending
// with a letter or digit.
func isDNS1123Subdomain(s string) bool {
	if len(s) == 0 || len(s) > validation.DNS1123SubdomainMaxLength {
		return false
	}
	for label := range strings.SplitSeq(s, ".") {
		if label == "" || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			if c := label[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}
