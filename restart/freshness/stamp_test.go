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

package freshness

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestFormatStamp(t *testing.T) {
	plus2 := time.FixedZone("+02", 2*3600)
	tests := []struct {
		name string
		in   time.Time
		want string
	}{
		{"nanoseconds kept, converted to UTC", time.Date(2026, 5, 1, 12, 0, 0, 123456789, plus2), "2026-05-01T10:00:00.123456789Z"},
		{"whole second keeps nine digits", time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC), "2026-05-01T10:00:00.000000000Z"},
		{"trailing zeros kept", time.Date(2026, 5, 1, 10, 0, 0, 500000000, time.UTC), "2026-05-01T10:00:00.500000000Z"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := FormatStamp(tc.in); got != tc.want {
				t.Fatalf("FormatStamp = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestParseStamp(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		want   time.Time
		wantOK bool
	}{
		{"KICK stamp", "2026-05-01T10:00:00.123456789Z", time.Date(2026, 5, 1, 10, 0, 0, 123456789, time.UTC), true},
		{"kubectl whole seconds with offset", "2026-05-01T12:00:00+02:00", time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC), true},
		{"short fraction", "2026-05-01T10:00:00.5Z", time.Date(2026, 5, 1, 10, 0, 0, 500000000, time.UTC), true},
		{"nano with offset", "2026-05-01T07:30:00.000000001-02:30", time.Date(2026, 5, 1, 10, 0, 0, 1, time.UTC), true},
		{"empty", "", time.Time{}, false},
		{"not a time", "yesterday", time.Time{}, false},
		{"space separator", "2026-05-01 10:00:00Z", time.Time{}, false},
		{"no zone", "2026-05-01T10:00:00", time.Time{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := ParseStamp(tc.in)
			if ok != tc.wantOK {
				t.Fatalf("ParseStamp(%q) ok = %v, want %v", tc.in, ok, tc.wantOK)
			}
			if !got.Equal(tc.want) {
				t.Fatalf("ParseStamp(%q) = %v, want %v", tc.in, got, tc.want)
			}
			if ok && got.Location() != time.UTC {
				t.Fatalf("ParseStamp(%q) location = %v, want UTC", tc.in, got.Location())
			}
		})
	}
}

func TestStampRoundTripNanoseconds(t *testing.T) {
	for _, ns := range []int{0, 1, 999999999, 123456789, 100} {
		in := time.Date(2026, 5, 1, 12, 0, 0, ns, time.FixedZone("+02", 2*3600))
		out, ok := ParseStamp(FormatStamp(in))
		if !ok || !out.Equal(in) || out.Nanosecond() != ns {
			t.Fatalf("round trip of %v gave %v (ok=%v)", in, out, ok)
		}
	}
}

// Stamps compare as strings in time order because the width is fixed.
func TestStampSortsAsString(t *testing.T) {
	a := FormatStamp(time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC))
	b := FormatStamp(time.Date(2026, 5, 1, 10, 0, 0, 100000000, time.UTC))
	c := FormatStamp(time.Date(2026, 5, 1, 10, 0, 0, 900000000, time.UTC))
	if !(a < b && b < c) {
		t.Fatalf("stamps do not sort: %q %q %q", a, b, c)
	}
}

func TestTemplateStamp(t *testing.T) {
	tmpl := func(ann map[string]string) *corev1.PodTemplateSpec {
		return &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Annotations: ann}}
	}
	tests := []struct {
		name   string
		tmpl   *corev1.PodTemplateSpec
		want   time.Time
		wantOK bool
	}{
		{"nil template", nil, time.Time{}, false},
		{"no annotations", tmpl(nil), time.Time{}, false},
		{"other annotation", tmpl(map[string]string{"a": "b"}), time.Time{}, false},
		{"unparseable", tmpl(map[string]string{RestartedAtAnnotation: "now"}), time.Time{}, false},
		{"stamp", tmpl(map[string]string{RestartedAtAnnotation: "2026-05-01T10:00:00.000000007Z"}),
			time.Date(2026, 5, 1, 10, 0, 0, 7, time.UTC), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := TemplateStamp(tc.tmpl)
			if ok != tc.wantOK || !got.Equal(tc.want) {
				t.Fatalf("TemplateStamp = %v, %v; want %v, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}
