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
	"k8s.io/apimachinery/pkg/util/intstr"

	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestKickPolicySpecDefaults(t *testing.T) {
	var nilSpec *KickPolicySpec
	if nilSpec.EffectiveProvider() != ProviderNone || nilSpec.RequiresReconciled() || nilSpec.EffectiveMinInterval() != DefaultMinInterval {
		t.Fatal("a nil spec must behave like an empty one")
	}
	empty := &KickPolicySpec{}
	if empty.EffectiveProvider() != ProviderNone {
		t.Errorf("provider = %s, want None", empty.EffectiveProvider())
	}
	if empty.RequiresReconciled() {
		t.Error("provider None never requires reconciliation")
	}
	if empty.EffectiveMinInterval() != 30*time.Second {
		t.Errorf("minInterval = %s, want 30s", empty.EffectiveMinInterval())
	}

	argo := &KickPolicySpec{GitOps: &GitOpsSpec{Provider: ProviderArgoCD}}
	if !argo.RequiresReconciled() {
		t.Error("requireReconciled defaults to true for a real provider")
	}
	off := false
	argo.GitOps.RequireReconciled = &off
	if argo.RequiresReconciled() {
		t.Error("requireReconciled=false must be honoured")
	}

	zero := &KickPolicySpec{Restart: &RestartSpec{MinInterval: &metav1.Duration{}}}
	if zero.EffectiveMinInterval() != 0 {
		t.Errorf("explicit 0s gave %s", zero.EffectiveMinInterval())
	}
	neg := &KickPolicySpec{Restart: &RestartSpec{MinInterval: &metav1.Duration{Duration: -time.Second}}}
	if neg.EffectiveMinInterval() != 0 {
		t.Errorf("a negative interval gave %s", neg.EffectiveMinInterval())
	}

	if (&ScheduleWindow{}).EffectiveTimeZone() != "UTC" {
		t.Error("time zone defaults to UTC")
	}
}

func TestSchemeRegistersAllKinds(t *testing.T) {
	s := runtime.NewScheme()
	if err := AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{
		"KickPolicy", "KickPolicyList", "KickRequest", "KickRequestList",
		"NotificationPolicy", "NotificationPolicyList", "SourceObservation", "SourceObservationList",
	} {
		if !s.Recognizes(GroupVersion.WithKind(kind)) {
			t.Errorf("scheme does not know %s", kind)
		}
	}
}

func TestMaxConcurrentRestarts(t *testing.T) {
	spec := func(v *intstr.IntOrString) *KickPolicySpec {
		return &KickPolicySpec{Restart: &RestartSpec{MaxConcurrent: v}}
	}
	for _, tc := range []struct {
		name    string
		spec    *KickPolicySpec
		matched int
		want    int
		capped  bool
	}{
		{"unset", &KickPolicySpec{}, 10, 0, false},
		{"integer", spec(ptrTo(intstr.FromInt32(5))), 100, 5, true},
		{"percentage rounds up", spec(ptrTo(intstr.FromString("10%"))), 212, 22, true},
		{"percentage of none is one", spec(ptrTo(intstr.FromString("25%"))), 0, 1, true},
		{"unparsable reads as one at a time", spec(ptrTo(intstr.FromString("lots"))), 50, 1, true},
	} {
		got, capped := tc.spec.MaxConcurrentRestarts(tc.matched)
		if got != tc.want || capped != tc.capped {
			t.Errorf("%s: %d, %v; want %d, %v", tc.name, got, capped, tc.want, tc.capped)
		}
	}
}

func ptrTo[T any](v T) *T { return &v }
