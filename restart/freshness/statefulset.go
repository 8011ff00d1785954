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

	appsv1 "k8s.io/api/apps/v1"
)

// StatefulSet inspects a StatefulSet's rollout. σ is the template's
// restartedAt stamp when present, else the StatefulSet's creation time: no
// status field records when the current revision finished, so without a
// stamp σ is only a lower bound and may cause one extra restart on adoption.
//
// The rollout is complete when the controller has observed the latest
// generation, the current and update revisions agree (when both are set)
// and every desired replica is updated and ready.
//
// With the OnDelete update strategy the controller never replaces pods by
// itself, so the updated count only converges when someone deletes pods.
// Waiting for it would hold a request forever; completeness then only
// requires the latest generation to be observed. (A restart stamp under
// OnDelete is likewise only picked up by pods recreated later.)
func StatefulSet(s *appsv1.StatefulSet) Rollout {
	r := Rollout{Start: s.CreationTimestamp.Time}
	if t, ok := TemplateStamp(&s.Spec.Template); ok {
		r.Start = t
	}
	r.Since = r.Start
	desired := replicasOrOne(s.Spec.Replicas)
	st := &s.Status
	revisionsDiffer := st.UpdateRevision != "" && st.CurrentRevision != "" && st.UpdateRevision != st.CurrentRevision
	switch {
	case st.ObservedGeneration < s.Generation:
		r.Reason, r.Message = GenerationNotObserved,
			fmt.Sprintf("statefulset controller has observed generation %d of %d", st.ObservedGeneration, s.Generation)
	case s.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType:
		r.Complete, r.Message = true, "OnDelete update strategy: pods are replaced only when deleted"
	case (revisionsDiffer || st.UpdatedReplicas != desired) && partition(s) > 0:
		r.Reason, r.Message = Partitioned,
			fmt.Sprintf("rolling update held at partition %d; %d of %d replicas updated", partition(s), st.UpdatedReplicas, desired)
	case revisionsDiffer:
		r.Reason, r.Message = RolloutInProgress,
			fmt.Sprintf("current revision %s, update revision %s", st.CurrentRevision, st.UpdateRevision)
	case st.UpdatedReplicas != desired:
		r.Reason, r.Message = RolloutInProgress, fmt.Sprintf("%d of %d replicas updated", st.UpdatedReplicas, desired)
	case st.ReadyReplicas != desired:
		r.Reason, r.Message = RolloutInProgress, fmt.Sprintf("%d of %d replicas ready", st.ReadyReplicas, desired)
	default:
		r.Complete, r.Message = true, fmt.Sprintf("revision %s rolled out", st.UpdateRevision)
	}
	return r
}

func partition(s *appsv1.StatefulSet) int32 {
	ru := s.Spec.UpdateStrategy.RollingUpdate
	if ru == nil || ru.Partition == nil {
		return 0
	}
	return *ru.Partition
}
