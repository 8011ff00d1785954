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
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
)

// DaemonSet inspects a DaemonSet's rollout. σ is the template's restartedAt
// stamp when present, else the later of the DaemonSet's creation time and
// its latest condition transition (upstream seldom sets DaemonSet
// conditions, so this is usually the creation time, a lower bound).
//
// The rollout is complete when the controller has observed the latest
// generation and every node that should run a pod runs an updated,
// available one. With the OnDelete update strategy only the generation is
// required, for the same reason as for StatefulSets: pods are never
// replaced unless deleted, so the counts would never converge.
func DaemonSet(d *appsv1.DaemonSet) Rollout {
	r := Rollout{Start: later(d.CreationTimestamp.Time, latestDaemonSetCondition(d.Status.Conditions)), Since: d.CreationTimestamp.Time}
	if t, ok := TemplateStamp(&d.Spec.Template); ok {
		r.Start, r.Since = t, t
	}
	st := &d.Status
	switch {
	case st.ObservedGeneration < d.Generation:
		r.Reason, r.Message = GenerationNotObserved,
			fmt.Sprintf("daemonset controller has observed generation %d of %d", st.ObservedGeneration, d.Generation)
	case d.Spec.UpdateStrategy.Type == appsv1.OnDeleteDaemonSetStrategyType:
		r.Complete, r.Message = true, "OnDelete update strategy: pods are replaced only when deleted"
	case st.UpdatedNumberScheduled != st.DesiredNumberScheduled:
		r.Reason, r.Message = RolloutInProgress,
			fmt.Sprintf("%d of %d scheduled pods updated", st.UpdatedNumberScheduled, st.DesiredNumberScheduled)
	case st.NumberAvailable != st.DesiredNumberScheduled || st.NumberUnavailable != 0:
		r.Reason, r.Message = RolloutInProgress,
			fmt.Sprintf("%d of %d pods available, %d unavailable", st.NumberAvailable, st.DesiredNumberScheduled, st.NumberUnavailable)
	default:
		r.Complete, r.Message = true, fmt.Sprintf("%d pods updated and available", st.DesiredNumberScheduled)
	}
	return r
}

func latestDaemonSetCondition(conds []appsv1.DaemonSetCondition) time.Time {
	var t time.Time
	for i := range conds {
		t = later(t, conds[i].LastTransitionTime.Time)
	}
	return t
}
