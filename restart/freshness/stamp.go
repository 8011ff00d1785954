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
	"time"

	corev1 "k8s.io/api/core/v1"
)

// RestartedAtAnnotation is the pod-template annotation KICK (like
// `kubectl rollout restart`) sets to make a workload controller roll a new
// revision. Its value is the restart time.
const RestartedAtAnnotation = "kubectl.kubernetes.io/restartedAt"

// stampLayout is RFC 3339 in UTC with all nine fractional digits. The
// fixed width keeps stamps sortable as strings, and the nanoseconds matter:
// a stamp cut to whole seconds can be older than a change made later in the
// same second, which would then look newer than every restart forever.
const stampLayout = "2006-01-02T15:04:05.000000000Z07:00"

// FormatStamp renders t as a restartedAt value: RFC 3339, UTC, nanoseconds.
func FormatStamp(t time.Time) string {
	return t.UTC().Format(stampLayout)
}

// ParseStamp reads a restartedAt value. It accepts RFC 3339 with or without
// a fractional second and with any zone offset (kubectl writes whole seconds
// in local time, e.g. 2026-05-01T12:00:00+02:00). The result is in UTC.
func ParseStamp(s string) (time.Time, bool) {
	if s == "" {
		return time.Time{}, false
	}
	// The RFC3339Nano layout also parses values without a fraction.
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, false
	}
	return t.UTC(), true
}

// TemplateStamp returns the parsed restartedAt annotation of a pod template,
// and false when it is absent or unparseable.
func TemplateStamp(tmpl *corev1.PodTemplateSpec) (time.Time, bool) {
	if tmpl == nil {
		return time.Time{}, false
	}
	v, ok := tmpl.Annotations[RestartedAtAnnotation]
	if !ok {
		return time.Time{}, false
	}
	return ParseStamp(v)
}
