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
	"fmt"
	"math"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// DefaultMinInterval is restart.minInterval when the field is absent.
const DefaultMinInterval = 30 * time.Second

// EffectiveProvider returns the GitOps provider in force, None when unset.
func (s *KickPolicySpec) EffectiveProvider() GitOpsProvider {
	if s == nil || s.GitOps == nil || s.GitOps.Provider == "" {
		return ProviderNone
	}
	return s.GitOps.Provider
}

// RequiresReconciled reports whether the GitOps owner must be reconciled
// before a restart. It defaults to true and is false for provider None.
func (s *KickPolicySpec) RequiresReconciled() bool {
	if s.EffectiveProvider() == ProviderNone {
		return false
	}
	if s.GitOps.RequireReconciled == nil {
		return true
	}
	return *s.GitOps.RequireReconciled
}

// EffectiveMinInterval returns restart.minInterval, 30s when unset and
// never negative.
func (s *KickPolicySpec) EffectiveMinInterval() time.Duration {
	if s == nil || s.Restart == nil || s.Restart.MinInterval == nil {
		return DefaultMinInterval
	}
	if d := s.Restart.MinInterval.Duration; d > 0 {
		return d
	}
	return 0
}

// EffectiveSettle returns restart.settle, 0 (act at once) when unset or
// negative.
func (s *KickPolicySpec) EffectiveSettle() time.Duration {
	if s == nil || s.Restart == nil || s.Restart.Settle == nil || s.Restart.Settle.Duration < 0 {
		return 0
	}
	return s.Restart.Settle.Duration
}

// EffectiveTimeZone returns the window's time zone name, UTC when unset.
func (w *ScheduleWindow) EffectiveTimeZone() string {
	if w.TimeZone == "" {
		return "UTC"
	}
	return w.TimeZone
}

// MaxConcurrentRestarts resolves restart.maxConcurrent against the number
// of workloads the policy matches: an integer as written, a percentage of
// matched rounded up, never below 1. It reports false when the policy sets
// no cap.
func (s *KickPolicySpec) MaxConcurrentRestarts(matched int) (int, bool) {
	if s == nil || s.Restart == nil || s.Restart.MaxConcurrent == nil {
		return 0, false
	}
	v := s.Restart.MaxConcurrent
	if v.Type == intstr.Int {
		return max(int(v.IntVal), 1), true
	}
	pct, err := intstr.GetScaledValueFromIntOrPercent(&intstr.IntOrString{Type: intstr.String, StrVal: v.StrVal}, 100, true)
	if err != nil || pct <= 0 {
		// Admission refuses such values; one at a time is the safe reading
		// of an object written before validation existed.
		return 1, true
	}
	return max(int(math.Ceil(float64(pct)*float64(matched)/100)), 1), true
}

// RestartWaves returns the policy's restart waves; nil when it sets none.
func (s *KickPolicySpec) RestartWaves() []RestartWave {
	if s == nil || s.Restart == nil {
		return nil
	}
	return s.Restart.Waves
}

// WaveOf returns the index of the first wave whose selector matches
// labels, len(waves) when none does (those workloads go last), and the
// error of a selector that cannot be parsed.
func (s *KickPolicySpec) WaveOf(labels map[string]string) (int, error) {
	waves := s.RestartWaves()
	for i := range waves {
		sel, err := metav1.LabelSelectorAsSelector(&waves[i].Selector)
		if err != nil {
			return 0, fmt.Errorf("restart.waves[%d] (%s): selector: %w", i, waves[i].Name, err)
		}
		if sel.Matches(k8slabels.Set(labels)) {
			return i, nil
		}
	}
	return len(waves), nil
}

// WaveName names wave i of WaveOf: the wave's name, or "(no wave)" for the
// workloads no wave selects.
func (s *KickPolicySpec) WaveName(i int) string {
	if waves := s.RestartWaves(); i < len(waves) {
		return waves[i].Name
	}
	return "(no wave)"
}

// WaveBake is how long wave i must stay rolled out before the next starts.
func (s *KickPolicySpec) WaveBake(i int) time.Duration {
	if waves := s.RestartWaves(); i < len(waves) && waves[i].Bake != nil && waves[i].Bake.Duration > 0 {
		return waves[i].Bake.Duration
	}
	return 0
}

// CountsEveryKey reports whether every change of a source counts for the
// policy's workloads (restart.keys All), not only changes of the keys they
// read (Read, the default).
func (s *KickPolicySpec) CountsEveryKey() bool {
	return s != nil && s.Restart != nil && s.Restart.Keys == KeysAll
}
