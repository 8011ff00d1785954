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
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cbor "k8s.io/apimachinery/pkg/runtime/serializer/cbor/direct"
)

// RFC3339NanoFixed is the wire layout of NanoTime: RFC 3339 in UTC with all
// nine fractional digits, so that encoded values also sort as strings.
const RFC3339NanoFixed = "2006-01-02T15:04:05.000000000Z07:00"

// NanoTime is a timestamp that keeps nanosecond precision on the wire,
// unlike metav1.Time (seconds) and metav1.MicroTime (microseconds). The
// zero value encodes as null.
//
// +kubebuilder:validation:Type=string
// +kubebuilder:validation:Format=date-time
// +k8s:deepcopy-gen=false
type NanoTime struct {
	time.Time `protobuf:"-"`
}

// NewNanoTime wraps t.
func NewNanoTime(t time.Time) NanoTime { return NanoTime{Time: t} }

// DeepCopyInto copies the receiver into out.
func (t *NanoTime) DeepCopyInto(out *NanoTime) { *out = *t }

// DeepCopy returns a copy of the receiver.
func (t *NanoTime) DeepCopy() *NanoTime {
	if t == nil {
		return nil
	}
	out := new(NanoTime)
	t.DeepCopyInto(out)
	return out
}

// CeilMicro converts to metav1.MicroTime, rounding up to the next whole
// microsecond. Rounding up keeps a change that happened just after a
// rollout from looking older than it is; truncation could hide it.
func (t NanoTime) CeilMicro() metav1.MicroTime {
	if t.IsZero() {
		return metav1.MicroTime{}
	}
	c := t.Truncate(time.Microsecond)
	if c.Before(t.Time) {
		c = c.Add(time.Microsecond)
	}
	return metav1.NewMicroTime(c)
}

func (t NanoTime) encode() string { return t.UTC().Format(RFC3339NanoFixed) }

func decodeNano(s string) (NanoTime, error) {
	// RFC3339Nano accepts any number of fractional digits, including none.
	p, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return NanoTime{}, err
	}
	return NanoTime{Time: p.UTC()}, nil
}

// MarshalJSON encodes the time as an RFC 3339 string with nanoseconds, or
// null when zero.
func (t NanoTime) MarshalJSON() ([]byte, error) {
	if t.IsZero() {
		return []byte("null"), nil
	}
	return json.Marshal(t.encode())
}

// UnmarshalJSON accepts null or any RFC 3339 timestamp.
func (t *NanoTime) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		t.Time = time.Time{}
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	p, err := decodeNano(s)
	if err != nil {
		return err
	}
	*t = p
	return nil
}

// MarshalCBOR mirrors MarshalJSON for clients that speak CBOR.
func (t NanoTime) MarshalCBOR() ([]byte, error) {
	if t.IsZero() {
		return cbor.Marshal(nil)
	}
	return cbor.Marshal(t.encode())
}

// UnmarshalCBOR mirrors UnmarshalJSON for clients that speak CBOR.
func (t *NanoTime) UnmarshalCBOR(b []byte) error {
	var s *string
	if err := cbor.Unmarshal(b, &s); err != nil {
		return err
	}
	if s == nil {
		t.Time = time.Time{}
		return nil
	}
	p, err := decodeNano(*s)
	if err != nil {
		return err
	}
	*t = p
	return nil
}

// ToUnstructured returns the value the unstructured converter stores: the
// same string as the JSON form, or nil when zero.
func (t NanoTime) ToUnstructured() interface{} {
	if t.IsZero() {
		return nil
	}
	return t.encode()
}
