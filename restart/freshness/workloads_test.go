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

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func statefulSet() *appsv1.StatefulSet {
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns", Generation: 2, CreationTimestamp: metav1.NewTime(at(1))},
		Spec:       appsv1.StatefulSetSpec{Replicas: ptr.To[int32](3), Template: podTemplate("db:v1")},
		Status: appsv1.StatefulSetStatus{
			ObservedGeneration: 2, Replicas: 3, ReadyReplicas: 3, CurrentReplicas: 3, UpdatedReplicas: 3, AvailableReplicas: 3,
			CurrentRevision: "db-7f", UpdateRevision: "db-7f",
		},
	}
}

func TestStatefulSet(t *testing.T) {
	stamp := at(5).Add(987654321)
	tests := []struct {
		name   string
		mutate func(*appsv1.StatefulSet)
		want   Rollout
	}{
		{"complete, σ is the creation time", func(*appsv1.StatefulSet) {}, Rollout{Start: at(1), Complete: true}},
		{"restartedAt stamp is σ", func(s *appsv1.StatefulSet) {
			s.Spec.Template.Annotations = map[string]string{RestartedAtAnnotation: FormatStamp(stamp)}
		}, Rollout{Start: stamp, Complete: true}},
		{"generation not observed", func(s *appsv1.StatefulSet) { s.Generation = 3 },
			Rollout{Start: at(1), Reason: GenerationNotObserved}},
		{"revisions differ", func(s *appsv1.StatefulSet) { s.Status.UpdateRevision = "db-8a" },
			Rollout{Start: at(1), Reason: RolloutInProgress}},
		{"only one revision set is not a difference", func(s *appsv1.StatefulSet) { s.Status.CurrentRevision = "" },
			Rollout{Start: at(1), Complete: true}},
		{"updated lags desired", func(s *appsv1.StatefulSet) {
			s.Status.UpdatedReplicas = 2
		}, Rollout{Start: at(1), Reason: RolloutInProgress}},
		{"ready lags desired", func(s *appsv1.StatefulSet) { s.Status.ReadyReplicas = 2 },
			Rollout{Start: at(1), Reason: RolloutInProgress}},
		{"scaled up, new replica not ready", func(s *appsv1.StatefulSet) { s.Spec.Replicas = ptr.To[int32](4) },
			Rollout{Start: at(1), Reason: RolloutInProgress}},
		{"nil replicas means one", func(s *appsv1.StatefulSet) {
			s.Spec.Replicas = nil
			s.Status.UpdatedReplicas, s.Status.ReadyReplicas = 1, 1
		}, Rollout{Start: at(1), Complete: true}},
		{"zero replicas", func(s *appsv1.StatefulSet) {
			s.Spec.Replicas = ptr.To[int32](0)
			s.Status.UpdatedReplicas, s.Status.ReadyReplicas = 0, 0
		}, Rollout{Start: at(1), Complete: true}},
		{"partitioned rolling update", func(s *appsv1.StatefulSet) {
			s.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{
				Type:          appsv1.RollingUpdateStatefulSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](2)},
			}
			s.Status.UpdateRevision, s.Status.UpdatedReplicas = "db-8a", 1
		}, Rollout{Start: at(1), Reason: Partitioned}},
		{"partition set but rollout finished", func(s *appsv1.StatefulSet) {
			s.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](2)}
		}, Rollout{Start: at(1), Complete: true}},
		{"OnDelete: lagging counts do not block", func(s *appsv1.StatefulSet) {
			s.Spec.UpdateStrategy.Type = appsv1.OnDeleteStatefulSetStrategyType
			s.Status.UpdateRevision, s.Status.UpdatedReplicas, s.Status.ReadyReplicas = "db-8a", 0, 2
		}, Rollout{Start: at(1), Complete: true}},
		{"OnDelete still needs the generation observed", func(s *appsv1.StatefulSet) {
			s.Spec.UpdateStrategy.Type = appsv1.OnDeleteStatefulSetStrategyType
			s.Generation = 3
		}, Rollout{Start: at(1), Reason: GenerationNotObserved}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := statefulSet()
			tc.mutate(s)
			checkRollout(t, StatefulSet(s), tc.want)
		})
	}
}

func daemonSet() *appsv1.DaemonSet {
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "ns", Generation: 2, CreationTimestamp: metav1.NewTime(at(1))},
		Spec:       appsv1.DaemonSetSpec{Template: podTemplate("agent:v1")},
		Status: appsv1.DaemonSetStatus{
			ObservedGeneration: 2, DesiredNumberScheduled: 5, CurrentNumberScheduled: 5, UpdatedNumberScheduled: 5,
			NumberReady: 5, NumberAvailable: 5,
		},
	}
}

func TestDaemonSet(t *testing.T) {
	stamp := at(5).Add(1)
	tests := []struct {
		name   string
		mutate func(*appsv1.DaemonSet)
		want   Rollout
	}{
		{"complete, σ is the creation time", func(*appsv1.DaemonSet) {}, Rollout{Start: at(1), Complete: true}},
		{"restartedAt stamp is σ", func(d *appsv1.DaemonSet) {
			d.Spec.Template.Annotations = map[string]string{RestartedAtAnnotation: FormatStamp(stamp)}
			d.Status.Conditions = []appsv1.DaemonSetCondition{{Type: "Custom", LastTransitionTime: metav1.NewTime(at(9))}}
		}, Rollout{Start: stamp, Complete: true}},
		{"latest condition transition advances σ", func(d *appsv1.DaemonSet) {
			d.Status.Conditions = []appsv1.DaemonSetCondition{
				{Type: "A", LastTransitionTime: metav1.NewTime(at(4))},
				{Type: "B", LastTransitionTime: metav1.NewTime(at(3))},
			}
		}, Rollout{Start: at(4), Complete: true}},
		{"condition older than creation does not move σ back", func(d *appsv1.DaemonSet) {
			d.Status.Conditions = []appsv1.DaemonSetCondition{{Type: "A", LastTransitionTime: metav1.NewTime(at(0))}}
		}, Rollout{Start: at(1), Complete: true}},
		{"generation not observed", func(d *appsv1.DaemonSet) { d.Generation = 3 },
			Rollout{Start: at(1), Reason: GenerationNotObserved}},
		{"updated lags desired", func(d *appsv1.DaemonSet) { d.Status.UpdatedNumberScheduled = 4 },
			Rollout{Start: at(1), Reason: RolloutInProgress}},
		{"available lags desired", func(d *appsv1.DaemonSet) { d.Status.NumberAvailable = 4 },
			Rollout{Start: at(1), Reason: RolloutInProgress}},
		{"some pods unavailable", func(d *appsv1.DaemonSet) { d.Status.NumberUnavailable = 1 },
			Rollout{Start: at(1), Reason: RolloutInProgress}},
		{"no nodes to run on", func(d *appsv1.DaemonSet) {
			d.Status = appsv1.DaemonSetStatus{ObservedGeneration: 2}
		}, Rollout{Start: at(1), Complete: true}},
		{"OnDelete: lagging counts do not block", func(d *appsv1.DaemonSet) {
			d.Spec.UpdateStrategy.Type = appsv1.OnDeleteDaemonSetStrategyType
			d.Status.UpdatedNumberScheduled, d.Status.NumberUnavailable = 1, 2
		}, Rollout{Start: at(1), Complete: true}},
		{"OnDelete still needs the generation observed", func(d *appsv1.DaemonSet) {
			d.Spec.UpdateStrategy.Type = appsv1.OnDeleteDaemonSetStrategyType
			d.Generation = 3
		}, Rollout{Start: at(1), Reason: GenerationNotObserved}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := daemonSet()
			tc.mutate(d)
			checkRollout(t, DaemonSet(d), tc.want)
		})
	}
}

// The stamp's sub-second part survives StatefulSet and DaemonSet inspection.
func TestStampSameSecondOtherKinds(t *testing.T) {
	stamp := at(5).Add(400 * time.Millisecond)
	s := statefulSet()
	s.Spec.Template.Annotations = map[string]string{RestartedAtAnnotation: FormatStamp(stamp)}
	d := daemonSet()
	d.Spec.Template.Annotations = map[string]string{RestartedAtAnnotation: FormatStamp(stamp)}
	for name, r := range map[string]Rollout{"StatefulSet": StatefulSet(s), "DaemonSet": DaemonSet(d)} {
		if got := Decide(At(stamp.Add(time.Nanosecond)), r); got != Stale {
			t.Errorf("%s: change 1ns after stamp: %s, want Stale", name, got)
		}
		if got := Decide(At(stamp), r); got != Fresh {
			t.Errorf("%s: change at stamp: %s, want Fresh", name, got)
		}
	}
}
