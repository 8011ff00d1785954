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
	"encoding/json"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	cbor "k8s.io/apimachinery/pkg/runtime/serializer/cbor/direct"
)

// A time with every nanosecond digit set, in a non-UTC zone.
var nanoSample = time.Date(2026, 3, 1, 13, 4, 5, 123456789, time.FixedZone("CET", 3600))

func TestNanoTimeJSONRoundTripKeepsNanoseconds(t *testing.T) {
	in := NewNanoTime(nanoSample)
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `"2026-03-01T12:04:05.123456789Z"`; got != want {
		t.Fatalf("encoded %s, want %s", got, want)
	}
	var out NanoTime
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if !out.Equal(nanoSample) {
		t.Fatalf("round trip gave %v, want %v", out, nanoSample)
	}
	if out.Location() != time.UTC {
		t.Fatalf("decoded location %v, want UTC", out.Location())
	}
}

func TestNanoTimeEncodingIsFixedWidth(t *testing.T) {
	// Whole seconds and trailing zeros still get nine digits, so encoded
	// values sort like the times they represent.
	for _, tc := range []struct {
		in   time.Time
		want string
	}{
		{time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), `"2026-01-02T03:04:05.000000000Z"`},
		{time.Date(2026, 1, 2, 3, 4, 5, 100000000, time.UTC), `"2026-01-02T03:04:05.100000000Z"`},
		{time.Date(2026, 1, 2, 3, 4, 5, 1, time.UTC), `"2026-01-02T03:04:05.000000001Z"`},
	} {
		b, err := json.Marshal(NewNanoTime(tc.in))
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != tc.want {
			t.Errorf("encoded %s, want %s", b, tc.want)
		}
	}
}

func TestNanoTimeZeroAndNull(t *testing.T) {
	b, err := json.Marshal(NanoTime{})
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != "null" {
		t.Fatalf("zero encoded as %s, want null", b)
	}
	out := NewNanoTime(nanoSample)
	if err := json.Unmarshal([]byte("null"), &out); err != nil {
		t.Fatal(err)
	}
	if !out.IsZero() {
		t.Fatalf("null decoded to %v, want zero", out)
	}
}

func TestNanoTimeDecodesCoarserRFC3339(t *testing.T) {
	for in, want := range map[string]time.Time{
		`"2026-03-01T12:04:05Z"`:             time.Date(2026, 3, 1, 12, 4, 5, 0, time.UTC),
		`"2026-03-01T12:04:05.5Z"`:           time.Date(2026, 3, 1, 12, 4, 5, 500000000, time.UTC),
		`"2026-03-01T13:04:05.123456+01:00"`: time.Date(2026, 3, 1, 12, 4, 5, 123456000, time.UTC),
	} {
		var out NanoTime
		if err := json.Unmarshal([]byte(in), &out); err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if !out.Equal(want) {
			t.Errorf("%s decoded to %v, want %v", in, out, want)
		}
	}
	var out NanoTime
	for _, bad := range []string{`"yesterday"`, `42`, `"2026-03-01"`} {
		if err := json.Unmarshal([]byte(bad), &out); err == nil {
			t.Errorf("%s: expected an error", bad)
		}
	}
}

func TestNanoTimeInStructPointerField(t *testing.T) {
	spec := SourceObservationSpec{Source: ObservedSource{APIVersion: "v1", Kind: SourceSecret, Name: "db"}}
	b, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "lastRelevantChangeTime") {
		t.Fatalf("nil time should be omitted: %s", b)
	}

	nt := NewNanoTime(nanoSample)
	spec.LastRelevantChangeTime = &nt
	b, err = json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	var back SourceObservationSpec
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.LastRelevantChangeTime == nil || !back.LastRelevantChangeTime.Equal(nanoSample) {
		t.Fatalf("round trip gave %v, want %v", back.LastRelevantChangeTime, nanoSample)
	}
}

func TestNanoTimeUnstructuredRoundTrip(t *testing.T) {
	nt := NewNanoTime(nanoSample)
	obj := &SourceObservation{Spec: SourceObservationSpec{
		Source:                 ObservedSource{APIVersion: "v1", Kind: SourceConfigMap, Name: "cfg"},
		LastRelevantChangeTime: &nt,
	}}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	spec := u["spec"].(map[string]interface{})
	if got := spec["lastRelevantChangeTime"]; got != "2026-03-01T12:04:05.123456789Z" {
		t.Fatalf("unstructured value %#v", got)
	}
	var back SourceObservation
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u, &back); err != nil {
		t.Fatal(err)
	}
	if !back.Spec.LastRelevantChangeTime.Equal(nanoSample) {
		t.Fatalf("round trip gave %v", back.Spec.LastRelevantChangeTime)
	}
}

func TestNanoTimeCBORRoundTrip(t *testing.T) {
	b, err := cbor.Marshal(NewNanoTime(nanoSample))
	if err != nil {
		t.Fatal(err)
	}
	var out NanoTime
	if err := cbor.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if !out.Equal(nanoSample) {
		t.Fatalf("round trip gave %v", out)
	}

	b, err = cbor.Marshal(NanoTime{})
	if err != nil {
		t.Fatal(err)
	}
	out = NewNanoTime(nanoSample)
	if err := cbor.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if !out.IsZero() {
		t.Fatalf("zero round trip gave %v", out)
	}
}

func TestNanoTimeDeepCopy(t *testing.T) {
	var nilTime *NanoTime
	if nilTime.DeepCopy() != nil {
		t.Fatal("DeepCopy of nil should be nil")
	}
	nt := NewNanoTime(nanoSample)
	obj := &SourceObservation{Spec: SourceObservationSpec{LastRelevantChangeTime: &nt}}
	cp := obj.DeepCopy()
	if cp.Spec.LastRelevantChangeTime == obj.Spec.LastRelevantChangeTime {
		t.Fatal("DeepCopy shared the time pointer")
	}
	if !cp.Spec.LastRelevantChangeTime.Equal(nanoSample) {
		t.Fatalf("copy holds %v", cp.Spec.LastRelevantChangeTime)
	}
}

func TestNanoTimeCeilMicro(t *testing.T) {
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		nsec, wantNsec int
	}{
		{0, 0},
		{1, 1000},
		{999, 1000},
		{1000, 1000},
		{123456789, 123457000},
		{999999999, 1000000000},
	} {
		got := NewNanoTime(base.Add(time.Duration(tc.nsec))).CeilMicro()
		if want := base.Add(time.Duration(tc.wantNsec)); !got.Time.Equal(want) {
			t.Errorf("CeilMicro(+%dns) = %v, want %v", tc.nsec, got.Time, want)
		}
		if got.Time.Before(base.Add(time.Duration(tc.nsec))) {
			t.Errorf("CeilMicro(+%dns) moved the time backwards", tc.nsec)
		}
	}
	if z := (NanoTime{}).CeilMicro(); !z.Time.IsZero() {
		t.Error("CeilMicro of zero should be zero")
	}
}
