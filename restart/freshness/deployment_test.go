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
	"reflect"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

var base = time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)

// at returns base plus n minutes (whole seconds, like Kubernetes times).
func at(n int) time.Time { return base.Add(time.Duration(n) * time.Minute) }

const depUID = types.UID("dep-uid")

func podTemplate(image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name:  "web",
				Image: image,
				Env: []corev1.EnvVar{{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{
					SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "password"},
				}}},
				EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU:    resource.MustParse("100m"),
					corev1.ResourceMemory: resource.MustParse("128Mi"),
				}},
			}},
			Volumes: []corev1.Volume{{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "tls"}}}},
		},
	}
}

// replicaSet builds a ReplicaSet as the Deployment controller would: the
// deployment's template plus a pod-template-hash label.
func replicaSet(name string, owner types.UID, created time.Time, tmpl corev1.PodTemplateSpec) appsv1.ReplicaSet {
	t := *tmpl.DeepCopy()
	t.Labels[podTemplateHashLabel] = "h-" + name
	return appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name:              name,
			Namespace:         "ns",
			CreationTimestamp: metav1.NewTime(created),
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: owner, Controller: ptr.To(true),
			}},
		},
		Spec: appsv1.ReplicaSetSpec{Template: t},
	}
}

// deployment builds a settled Deployment with three replicas and no
// conditions, so σ is the current ReplicaSet's creation time by default.
func deployment(tmpl corev1.PodTemplateSpec) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: depUID, Generation: 4},
		Spec:       appsv1.DeploymentSpec{Replicas: ptr.To[int32](3), Template: *tmpl.DeepCopy()},
		Status: appsv1.DeploymentStatus{
			ObservedGeneration: 4, Replicas: 3, UpdatedReplicas: 3, ReadyReplicas: 3, AvailableReplicas: 3,
		},
	}
}

func condition(typ appsv1.DeploymentConditionType, reason string, update, transition time.Time) appsv1.DeploymentCondition {
	c := appsv1.DeploymentCondition{Type: typ, Status: corev1.ConditionTrue, Reason: reason}
	if !update.IsZero() {
		c.LastUpdateTime = metav1.NewTime(update)
	}
	if !transition.IsZero() {
		c.LastTransitionTime = metav1.NewTime(transition)
	}
	return c
}

func stampedTemplate(image string, stamp time.Time) corev1.PodTemplateSpec {
	t := podTemplate(image)
	t.Annotations = map[string]string{RestartedAtAnnotation: FormatStamp(stamp)}
	return t
}

func stampedDeployment(stamp time.Time) (*appsv1.Deployment, []*appsv1.ReplicaSet) {
	tmpl := stampedTemplate("web:v1", stamp)
	d := deployment(tmpl)
	d.Status.Conditions = []appsv1.DeploymentCondition{
		condition(appsv1.DeploymentAvailable, "MinimumReplicasAvailable", at(9), at(9)),
	}
	return d, ReplicaSetRefs(replicaSet("web-2", depUID, base.Add(time.Second), tmpl))
}

func TestDeployment(t *testing.T) {
	v1, v2, v3, v4 := podTemplate("web:v1"), podTemplate("web:v2"), podTemplate("web:v3"), podTemplate("web:v4")
	stamp := at(7).Add(123456789)

	tests := []struct {
		name  string
		setup func() (*appsv1.Deployment, []*appsv1.ReplicaSet)
		want  Rollout // Message is checked only for being non-empty
	}{{
		name: "normal: single ReplicaSet, σ is its creation time",
		setup: func() (*appsv1.Deployment, []*appsv1.ReplicaSet) {
			return deployment(v1), ReplicaSetRefs(replicaSet("web-1", depUID, at(1), v1))
		},
		want: Rollout{Start: at(1), Complete: true, ReplicaSet: "web-1"},
	}, {
		name: "rollout in progress: two ReplicaSets, updated < desired",
		setup: func() (*appsv1.Deployment, []*appsv1.ReplicaSet) {
			d := deployment(v2)
			d.Status.Replicas, d.Status.UpdatedReplicas, d.Status.AvailableReplicas = 4, 1, 3
			return d, ReplicaSetRefs(replicaSet("web-1", depUID, at(1), v1), replicaSet("web-2", depUID, at(5), v2))
		},
		want: Rollout{Start: at(5), Reason: RolloutInProgress, ReplicaSet: "web-2"},
	}, {
		name: "old replicas still running",
		setup: func() (*appsv1.Deployment, []*appsv1.ReplicaSet) {
			d := deployment(v2)
			d.Status.Replicas = 4
			return d, ReplicaSetRefs(replicaSet("web-1", depUID, at(1), v1), replicaSet("web-2", depUID, at(5), v2))
		},
		want: Rollout{Start: at(5), Reason: RolloutInProgress, ReplicaSet: "web-2"},
	}, {
		name: "updated replicas not yet available",
		setup: func() (*appsv1.Deployment, []*appsv1.ReplicaSet) {
			d := deployment(v2)
			d.Status.AvailableReplicas = 2
			return d, ReplicaSetRefs(replicaSet("web-2", depUID, at(5), v2))
		},
		want: Rollout{Start: at(5), Reason: RolloutInProgress, ReplicaSet: "web-2"},
	}, {
		name: "rollback: the older ReplicaSet matches again and is current though not newest",
		setup: func() (*appsv1.Deployment, []*appsv1.ReplicaSet) {
			return deployment(v1), ReplicaSetRefs(replicaSet("web-2", depUID, at(5), v2), replicaSet("web-1", depUID, at(1), v1))
		},
		want: Rollout{Start: at(1), Complete: true, ReplicaSet: "web-1"},
	}, {
		name: "history: exactly one of several ReplicaSets matches",
		setup: func() (*appsv1.Deployment, []*appsv1.ReplicaSet) {
			return deployment(v3), ReplicaSetRefs(
				replicaSet("web-1", depUID, at(1), v1), replicaSet("web-4", depUID, at(8), v4),
				replicaSet("web-3", depUID, at(6), v3), replicaSet("web-2", depUID, at(4), v2),
			)
		},
		want: Rollout{Start: at(6), Complete: true, ReplicaSet: "web-3"},
	}, {
		name: "no ReplicaSet matches",
		setup: func() (*appsv1.Deployment, []*appsv1.ReplicaSet) {
			return deployment(v2), ReplicaSetRefs(replicaSet("web-1", depUID, at(1), v1))
		},
		want: Rollout{Reason: NoMatchingReplicaSet},
	}, {
		name: "no ReplicaSets at all",
		setup: func() (*appsv1.Deployment, []*appsv1.ReplicaSet) {
			return deployment(v2), nil
		},
		want: Rollout{Reason: NoMatchingReplicaSet},
	}, {
		name: "ambiguous: two ReplicaSets match",
		setup: func() (*appsv1.Deployment, []*appsv1.ReplicaSet) {
			return deployment(v2), ReplicaSetRefs(
				replicaSet("web-2", depUID, at(5), v2), replicaSet("web-1", depUID, at(1), v1), replicaSet("web-2b", depUID, at(6), v2),
			)
		},
		want: Rollout{Reason: AmbiguousReplicaSetMatch},
	}, {
		name: "ReplicaSet of another Deployment UID is ignored",
		setup: func() (*appsv1.Deployment, []*appsv1.ReplicaSet) {
			return deployment(v2), ReplicaSetRefs(replicaSet("web-1", depUID, at(1), v1), replicaSet("other-2", "other-uid", at(5), v2))
		},
		want: Rollout{Reason: NoMatchingReplicaSet},
	}, {
		name: "same template under another UID does not make the match ambiguous",
		setup: func() (*appsv1.Deployment, []*appsv1.ReplicaSet) {
			return deployment(v2), ReplicaSetRefs(replicaSet("other-2", "other-uid", at(9), v2), replicaSet("web-2", depUID, at(5), v2))
		},
		want: Rollout{Start: at(5), Complete: true, ReplicaSet: "web-2"},
	}, {
		name: "owner reference that is not the controller is ignored",
		setup: func() (*appsv1.Deployment, []*appsv1.ReplicaSet) {
			rs := replicaSet("web-2", depUID, at(5), v2)
			rs.OwnerReferences[0].Controller = ptr.To(false)
			return deployment(v2), ReplicaSetRefs(rs)
		},
		want: Rollout{Reason: NoMatchingReplicaSet},
	}, {
		name: "template equality is semantic: quantity spelling and empty maps",
		setup: func() (*appsv1.Deployment, []*appsv1.ReplicaSet) {
			rs := replicaSet("web-2", depUID, at(5), v2)
			rs.Spec.Template.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("0.1")
			rs.Spec.Template.Annotations = map[string]string{}
			return deployment(v2), ReplicaSetRefs(rs)
		},
		want: Rollout{Start: at(5), Complete: true, ReplicaSet: "web-2"},
	}, {
		name: "revisions differing only in the restart stamp",
		setup: func() (*appsv1.Deployment, []*appsv1.ReplicaSet) {
			a, b := stampedTemplate("web:v1", at(2)), stampedTemplate("web:v1", at(6))
			return deployment(a), ReplicaSetRefs(replicaSet("web-b", depUID, at(6), b), replicaSet("web-a", depUID, at(2), a))
		},
		want: Rollout{Start: at(2), Complete: true, ReplicaSet: "web-a"},
	}, {
		name: "revisions differing only deep in the pod spec",
		setup: func() (*appsv1.Deployment, []*appsv1.ReplicaSet) {
			moved := podTemplate("web:v1")
			moved.Spec.Volumes[0].Secret.SecretName = "tls-2026"
			return deployment(moved), ReplicaSetRefs(
				replicaSet("web-1", depUID, at(1), v1), replicaSet("web-2", depUID, at(5), moved),
			)
		},
		want: Rollout{Start: at(5), Complete: true, ReplicaSet: "web-2"},
	}, {
		name: "a label other than the hash label makes templates differ",
		setup: func() (*appsv1.Deployment, []*appsv1.ReplicaSet) {
			rs := replicaSet("web-2", depUID, at(5), v2)
			rs.Spec.Template.Labels["tier"] = "front"
			return deployment(v2), ReplicaSetRefs(rs)
		},
		want: Rollout{Reason: NoMatchingReplicaSet},
	}, {
		name: "paused is deterministic even when settled",
		setup: func() (*appsv1.Deployment, []*appsv1.ReplicaSet) {
			d := deployment(v1)
			d.Spec.Paused = true
			return d, ReplicaSetRefs(replicaSet("web-1", depUID, at(1), v1))
		},
		want: Rollout{Start: at(1), Reason: Paused, ReplicaSet: "web-1"},
	}, {
		name: "paused wins over a missing ReplicaSet",
		setup: func() (*appsv1.Deployment, []*appsv1.ReplicaSet) {
			d := deployment(v2)
			d.Spec.Paused = true
			return d, ReplicaSetRefs(replicaSet("web-1", depUID, at(1), v1))
		},
		want: Rollout{Reason: Paused},
	}, {
		name: "zero replicas: complete once the ReplicaSet matches",
		setup: func() (*appsv1.Deployment, []*appsv1.ReplicaSet) {
			d := deployment(v2)
			d.Spec.Replicas = ptr.To[int32](0)
			// old pods still terminating do not matter: nothing to wait for
			d.Status = appsv1.DeploymentStatus{ObservedGeneration: 4, Replicas: 1}
			return d, ReplicaSetRefs(replicaSet("web-1", depUID, at(1), v1), replicaSet("web-2", depUID, at(5), v2))
		},
		want: Rollout{Start: at(5), Complete: true, ReplicaSet: "web-2"},
	}, {
		name: "zero replicas without a matching ReplicaSet",
		setup: func() (*appsv1.Deployment, []*appsv1.ReplicaSet) {
			d := deployment(v2)
			d.Spec.Replicas = ptr.To[int32](0)
			d.Status = appsv1.DeploymentStatus{ObservedGeneration: 4}
			return d, ReplicaSetRefs(replicaSet("web-1", depUID, at(1), v1))
		},
		want: Rollout{Reason: NoMatchingReplicaSet},
	}, {
		name: "zero replicas, generation not observed",
		setup: func() (*appsv1.Deployment, []*appsv1.ReplicaSet) {
			d := deployment(v2)
			d.Spec.Replicas = ptr.To[int32](0)
			d.Status = appsv1.DeploymentStatus{ObservedGeneration: 3}
			return d, ReplicaSetRefs(replicaSet("web-2", depUID, at(5), v2))
		},
		want: Rollout{Start: at(5), Reason: GenerationNotObserved, ReplicaSet: "web-2"},
	}, {
		name: "nil replicas means one",
		setup: func() (*appsv1.Deployment, []*appsv1.ReplicaSet) {
			d := deployment(v1)
			d.Spec.Replicas = nil
			d.Status = appsv1.DeploymentStatus{ObservedGeneration: 4, Replicas: 1, UpdatedReplicas: 1, AvailableReplicas: 1}
			return d, ReplicaSetRefs(replicaSet("web-1", depUID, at(1), v1))
		},
		want: Rollout{Start: at(1), Complete: true, ReplicaSet: "web-1"},
	}, {
		name: "nil replicas, none updated yet",
		setup: func() (*appsv1.Deployment, []*appsv1.ReplicaSet) {
			d := deployment(v1)
			d.Spec.Replicas = nil
			d.Status = appsv1.DeploymentStatus{ObservedGeneration: 4}
			return d, ReplicaSetRefs(replicaSet("web-1", depUID, at(1), v1))
		},
		want: Rollout{Start: at(1), Reason: RolloutInProgress, ReplicaSet: "web-1"},
	}, {
		name: "progress deadline exceeded",
		setup: func() (*appsv1.Deployment, []*appsv1.ReplicaSet) {
			d := deployment(v2)
			d.Status.UpdatedReplicas, d.Status.AvailableReplicas = 1, 2
			pc := condition(appsv1.DeploymentProgressing, ProgressDeadlineExceeded, at(6), at(6))
			pc.Status = corev1.ConditionFalse
			d.Status.Conditions = []appsv1.DeploymentCondition{pc}
			return d, ReplicaSetRefs(replicaSet("web-1", depUID, at(1), v1), replicaSet("web-2", depUID, at(5), v2))
		},
		want: Rollout{Start: at(5), Reason: ProgressDeadlineExceeded, ReplicaSet: "web-2"},
	}, {
		name: "generation not observed, though the status looks settled",
		setup: func() (*appsv1.Deployment, []*appsv1.ReplicaSet) {
			d := deployment(v2)
			d.Generation = 5
			return d, ReplicaSetRefs(replicaSet("web-2", depUID, at(5), v2))
		},
		want: Rollout{Start: at(5), Reason: GenerationNotObserved, ReplicaSet: "web-2"},
	}, {
		name: "generation not observed and new ReplicaSet not created yet",
		setup: func() (*appsv1.Deployment, []*appsv1.ReplicaSet) {
			d := deployment(v2)
			d.Generation = 5
			return d, ReplicaSetRefs(replicaSet("web-1", depUID, at(1), v1))
		},
		want: Rollout{Reason: GenerationNotObserved},
	}, {
		name: "condition updates do not advance σ (a resume or scale must not hide a change the pods never saw)",
		setup: func() (*appsv1.Deployment, []*appsv1.ReplicaSet) {
			d := deployment(v1)
			d.Status.Conditions = []appsv1.DeploymentCondition{
				condition(appsv1.DeploymentProgressing, "NewReplicaSetAvailable", at(4), at(2)),
				condition(appsv1.DeploymentAvailable, "MinimumReplicasAvailable", at(3), at(3)),
			}
			return d, ReplicaSetRefs(replicaSet("web-1", depUID, at(1), v1))
		},
		want: Rollout{Start: at(1), Complete: true, ReplicaSet: "web-1"},
	}, {
		name: "condition transitions do not advance σ either",
		setup: func() (*appsv1.Deployment, []*appsv1.ReplicaSet) {
			d := deployment(v1)
			d.Status.Conditions = []appsv1.DeploymentCondition{
				condition(appsv1.DeploymentAvailable, "MinimumReplicasAvailable", time.Time{}, at(6)),
				condition(appsv1.DeploymentProgressing, "NewReplicaSetAvailable", at(5), at(9)),
			}
			return d, ReplicaSetRefs(replicaSet("web-1", depUID, at(1), v1))
		},
		want: Rollout{Start: at(1), Complete: true, ReplicaSet: "web-1"},
	}, {
		name: "σ is the current ReplicaSet's creation",
		setup: func() (*appsv1.Deployment, []*appsv1.ReplicaSet) {
			d := deployment(v2)
			d.Status.Conditions = []appsv1.DeploymentCondition{
				condition(appsv1.DeploymentAvailable, "MinimumReplicasAvailable", at(2), at(2)),
			}
			return d, ReplicaSetRefs(replicaSet("web-2", depUID, at(5), v2))
		},
		want: Rollout{Start: at(5), Complete: true, ReplicaSet: "web-2"},
	}, {
		name: "restartedAt takes precedence over ReplicaSet and condition times",
		setup: func() (*appsv1.Deployment, []*appsv1.ReplicaSet) {
			tmpl := stampedTemplate("web:v1", stamp)
			d := deployment(tmpl)
			d.Status.Conditions = []appsv1.DeploymentCondition{
				condition(appsv1.DeploymentAvailable, "MinimumReplicasAvailable", at(9), at(9)),
			}
			return d, ReplicaSetRefs(replicaSet("web-1", depUID, at(1), v1), replicaSet("web-2", depUID, at(8), tmpl))
		},
		want: Rollout{Start: stamp, Complete: true, ReplicaSet: "web-2"},
	}, {
		name: "kubectl's whole-second stamp with offset",
		setup: func() (*appsv1.Deployment, []*appsv1.ReplicaSet) {
			tmpl := podTemplate("web:v1")
			tmpl.Annotations = map[string]string{RestartedAtAnnotation: "2026-05-01T12:07:00+02:00"}
			return deployment(tmpl), ReplicaSetRefs(replicaSet("web-2", depUID, at(8), tmpl))
		},
		want: Rollout{Start: at(7), Complete: true, ReplicaSet: "web-2"},
	}, {
		name: "restartedAt gives σ even while the ReplicaSet is missing",
		setup: func() (*appsv1.Deployment, []*appsv1.ReplicaSet) {
			return deployment(stampedTemplate("web:v1", stamp)), ReplicaSetRefs(replicaSet("web-1", depUID, at(1), v1))
		},
		want: Rollout{Start: stamp, Reason: NoMatchingReplicaSet},
	}, {
		name: "unparseable restartedAt falls back to the ReplicaSet",
		setup: func() (*appsv1.Deployment, []*appsv1.ReplicaSet) {
			tmpl := podTemplate("web:v1")
			tmpl.Annotations = map[string]string{RestartedAtAnnotation: "last tuesday"}
			return deployment(tmpl), ReplicaSetRefs(replicaSet("web-2", depUID, at(8), tmpl))
		},
		want: Rollout{Start: at(8), Complete: true, ReplicaSet: "web-2"},
	}}

	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, rss := tc.setup()
			got := Deployment(d, rss)
			checkRollout(t, got, tc.want)
		})
		// The same through the manager's cache, which keeps ReplicaSets
		// without their templates (CompactReplicaSet): every decision
		// must come out the same.
		t.Run(tc.name+"/compact", func(t *testing.T) {
			d, rss := tc.setup()
			for i := range rss {
				CompactReplicaSet(rss[i])
			}
			checkRollout(t, Deployment(d, rss), tc.want)
		})
	}
}

func checkRollout(t *testing.T, got, want Rollout) {
	t.Helper()
	if got.Message == "" {
		t.Errorf("empty Message in %+v", got)
	}
	got.Message = ""
	if !got.Start.Equal(want.Start) {
		t.Errorf("Start = %s, want %s", FormatStamp(got.Start), FormatStamp(want.Start))
	}
	got.Start, want.Start = time.Time{}, time.Time{}
	if !want.Since.IsZero() && !got.Since.Equal(want.Since) {
		t.Errorf("Since = %s, want %s", FormatStamp(got.Since), FormatStamp(want.Since))
	}
	got.Since, want.Since = time.Time{}, time.Time{}
	if got != want {
		t.Errorf("Rollout = %+v, want %+v", got, want)
	}
}

func TestCurrentReplicaSetAmbiguousMessageNamesMatches(t *testing.T) {
	v2 := podTemplate("web:v2")
	rss := ReplicaSetRefs(replicaSet("web-b", depUID, at(5), v2), replicaSet("web-a", depUID, at(6), v2))
	rs, reason, msg := CurrentReplicaSet(deployment(v2), rss)
	if rs != nil || reason != AmbiguousReplicaSetMatch {
		t.Fatalf("got %v, %q", rs, reason)
	}
	if want := "ReplicaSets web-a, web-b all match the deployment's pod template"; msg != want {
		t.Fatalf("message %q, want %q", msg, want)
	}
}

// Deployment must not modify what it is given (callers pass cached objects),
// and concurrent calls on shared objects must be race-free.
func TestDeploymentLeavesInputsAlone(t *testing.T) {
	d, rss := historyFixture(10)
	wantD := d.DeepCopy()
	wantRS := make([]*appsv1.ReplicaSet, len(rss))
	for i := range rss {
		wantRS[i] = rss[i].DeepCopy()
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r := Deployment(d, rss); !r.Complete {
				t.Errorf("not complete: %+v", r)
			}
		}()
	}
	wg.Wait()
	if !reflect.DeepEqual(d, wantD) {
		t.Fatal("Deployment modified the Deployment")
	}
	if !reflect.DeepEqual(rss, wantRS) {
		t.Fatal("Deployment modified the ReplicaSets")
	}
}

// historyFixture returns a settled Deployment whose n ReplicaSets are its
// revision history, the current one in the middle. Revisions differ in
// their restart stamp and cycle through three images.
func historyFixture(n int) (*appsv1.Deployment, []*appsv1.ReplicaSet) {
	return historyOf(n, func(i int, tmpl *corev1.PodTemplateSpec) {
		tmpl.Annotations = map[string]string{RestartedAtAnnotation: FormatStamp(at(i))}
		tmpl.Spec.Containers[0].Image = fmt.Sprintf("web:v%d", i%3)
	})
}

func historyOf(n int, revise func(int, *corev1.PodTemplateSpec)) (*appsv1.Deployment, []*appsv1.ReplicaSet) {
	cur := n / 2
	rss := make([]*appsv1.ReplicaSet, 0, n)
	var d *appsv1.Deployment
	for i := range n {
		tmpl := podTemplate("web:v1")
		revise(i, &tmpl)
		rs := replicaSet(fmt.Sprintf("web-%d", i), depUID, at(i), tmpl)
		rss = append(rss, &rs)
		if i == cur {
			d = deployment(tmpl)
		}
	}
	return d, rss
}

// BenchmarkDeployment inspects a Deployment with 10 ReplicaSets of history.
// "stamps-and-images" is the usual history; in "deep-difference" the
// revisions differ only in an environment variable, so no cheap check
// rejects them and every candidate goes through apiequality.Semantic.
func BenchmarkDeployment(b *testing.B) {
	deep := func(i int, tmpl *corev1.PodTemplateSpec) {
		c := &tmpl.Spec.Containers[0]
		c.Env = append(c.Env, corev1.EnvVar{Name: "REVISION", Value: fmt.Sprint(i)})
	}
	cases := []struct {
		name  string
		build func() (*appsv1.Deployment, []*appsv1.ReplicaSet)
	}{
		{"stamps-and-images", func() (*appsv1.Deployment, []*appsv1.ReplicaSet) { return historyFixture(10) }},
		{"deep-difference", func() (*appsv1.Deployment, []*appsv1.ReplicaSet) { return historyOf(10, deep) }},
	}
	for _, bc := range cases {
		d, rss := bc.build()
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if r := Deployment(d, rss); !r.Complete || r.ReplicaSet != "web-5" {
					b.Fatalf("wrong result: %+v", r)
				}
			}
		})
	}
}

// TestSinceIsConservative: Since never moves past the creation of the
// current template's ReplicaSet (or the stamp), even while conditions keep
// updating during a rollout, so a change made mid-rollout is never taken
// as already carried.
func TestSinceIsConservative(t *testing.T) {
	tmpl := podTemplate("web:v2")
	d := deployment(tmpl)
	d.Status.Replicas, d.Status.UpdatedReplicas, d.Status.AvailableReplicas = 4, 1, 3
	d.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, LastUpdateTime: metav1.NewTime(at(9))}}
	r := Deployment(d, ReplicaSetRefs(replicaSet("web-1", depUID, at(1), podTemplate("web:v1")), replicaSet("web-2", depUID, at(5), tmpl)))
	if r.Complete || !r.Since.Equal(at(5)) {
		t.Fatalf("in-progress rollout: Complete=%v Since=%s, want incomplete with Since at the new ReplicaSet's creation", r.Complete, FormatStamp(r.Since))
	}
	stamp := at(7).Add(123 * time.Nanosecond)
	tmpl.Annotations = map[string]string{RestartedAtAnnotation: FormatStamp(stamp)}
	d = deployment(tmpl)
	if r := Deployment(d, nil); !r.Since.Equal(stamp) {
		t.Fatalf("Since = %s, want the restart stamp %s", FormatStamp(r.Since), FormatStamp(stamp))
	}
	s := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(at(2))}}
	if r := StatefulSet(s); !r.Since.Equal(at(2)) {
		t.Fatalf("StatefulSet Since = %s, want its creation", FormatStamp(r.Since))
	}
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(at(3))}}
	ds.Status.Conditions = []appsv1.DaemonSetCondition{{Type: "Progressing", LastTransitionTime: metav1.NewTime(at(8))}}
	if r := DaemonSet(ds); !r.Since.Equal(at(3)) {
		t.Fatalf("DaemonSet Since = %s, want its creation, not a condition time", FormatStamp(r.Since))
	}
}
