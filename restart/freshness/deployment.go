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
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// podTemplateHashLabel is the label the Deployment controller adds to each
// ReplicaSet's selector and pod template; the Deployment's own template
// never has it.
const podTemplateHashLabel = appsv1.DefaultDeploymentUniqueLabelKey

// Deployment inspects a Deployment's rollout. replicaSets may be any
// superset of the Deployment's ReplicaSets (typically read from an owner
// index); those not controlled by d's UID are ignored.
//
// σ is the template's restartedAt stamp when present and parseable.
// Otherwise it is the creation time of the current ReplicaSet. Unlike the
// reference model, σ is not moved forward to the latest condition update:
// conditions also change on resume, scaling and availability flaps, none of
// which recreates pods, so advancing σ there dismisses changes the running
// pods never saw. A change between a ReplicaSet's creation and its pods'
// start (or a rollback to an old ReplicaSet) costs at most one extra
// restart, the safe side.
//
// A paused Deployment is reported incomplete with Reason Paused: nothing
// rolls out while it is paused, so the caller keeps waiting until it is
// resumed instead of deciding on a template that is not running.
// With spec.replicas 0 there are no pods to wait for: the rollout is
// complete as soon as the current ReplicaSet is known and the controller
// has observed the latest generation.
func Deployment(d *appsv1.Deployment, replicaSets []*appsv1.ReplicaSet) Rollout {
	var r Rollout
	cur, selReason, selMsg := CurrentReplicaSet(d, replicaSets)
	if cur != nil {
		r.ReplicaSet = cur.Name
	}
	if t, ok := TemplateStamp(&d.Spec.Template); ok {
		r.Start, r.Since = t, t
	} else if cur != nil {
		r.Start = cur.CreationTimestamp.Time
		r.Since = r.Start
	}

	desired := replicasOrOne(d.Spec.Replicas)
	st := &d.Status
	switch {
	case d.Spec.Paused:
		r.Reason, r.Message = Paused, "deployment is paused; nothing rolls out until it is resumed"
	case st.ObservedGeneration < d.Generation:
		r.Reason, r.Message = GenerationNotObserved,
			fmt.Sprintf("deployment controller has observed generation %d of %d", st.ObservedGeneration, d.Generation)
	case cur == nil:
		r.Reason, r.Message = selReason, selMsg
	case desired == 0:
		r.Complete, r.Message = true, fmt.Sprintf("scaled to zero; current ReplicaSet %s", cur.Name)
	case progressDeadlineExceeded(d.Status.Conditions):
		r.Reason, r.Message = ProgressDeadlineExceeded,
			fmt.Sprintf("rollout of ReplicaSet %s exceeded its progress deadline", cur.Name)
	case st.UpdatedReplicas < desired:
		r.Reason, r.Message = RolloutInProgress,
			fmt.Sprintf("%d of %d replicas updated", st.UpdatedReplicas, desired)
	case st.Replicas > st.UpdatedReplicas:
		r.Reason, r.Message = RolloutInProgress,
			fmt.Sprintf("%d old replicas pending termination", st.Replicas-st.UpdatedReplicas)
	case st.AvailableReplicas < st.UpdatedReplicas:
		r.Reason, r.Message = RolloutInProgress,
			fmt.Sprintf("%d of %d updated replicas available", st.AvailableReplicas, st.UpdatedReplicas)
	default:
		r.Complete, r.Message = true, fmt.Sprintf("rollout of ReplicaSet %s complete", cur.Name)
	}
	return r
}

// CurrentReplicaSet finds the ReplicaSet running d's current pod template:
// among the ReplicaSets controlled by d's UID, the one whose template equals
// d's once the pod-template-hash label is ignored (for a ReplicaSet cut down
// by CompactReplicaSet, whose fingerprint equals that of d's template). It deliberately does not
// pick the newest ReplicaSet, which is wrong after a rollback. When there is
// not exactly one match it returns nil with NoMatchingReplicaSet or
// AmbiguousReplicaSetMatch and a message. The result points into
// replicaSets.
func CurrentReplicaSet(d *appsv1.Deployment, replicaSets []*appsv1.ReplicaSet) (*appsv1.ReplicaSet, string, string) {
	var match *appsv1.ReplicaSet
	var names []string
	var dFingerprint string // of d's template, computed for the first compact ReplicaSet
	for i := range replicaSets {
		rs := replicaSets[i]
		if !controlledBy(rs, d.UID) {
			continue
		}
		if fp, compact := compactFingerprint(rs); compact {
			if dFingerprint == "" {
				dFingerprint = TemplateFingerprint(&d.Spec.Template)
			}
			if fp == "" || fp != dFingerprint {
				continue
			}
		} else if !sameTemplate(&rs.Spec.Template, &d.Spec.Template) {
			continue
		}
		if match == nil {
			match = rs
			continue
		}
		if names == nil {
			names = append(names, match.Name)
		}
		names = append(names, rs.Name)
	}
	switch {
	case names != nil:
		sort.Strings(names)
		return nil, AmbiguousReplicaSetMatch,
			fmt.Sprintf("ReplicaSets %s all match the deployment's pod template", strings.Join(names, ", "))
	case match == nil:
		return nil, NoMatchingReplicaSet, "no ReplicaSet of this deployment matches its pod template yet"
	default:
		return match, "", ""
	}
}

// controlledBy reports whether obj's controller reference points at uid.
func controlledBy(obj metav1.Object, uid types.UID) bool {
	ref := metav1.GetControllerOfNoCopy(obj)
	return ref != nil && ref.UID == uid
}

// sameTemplate compares a ReplicaSet's pod template with a Deployment's,
// ignoring the pod-template-hash label on both sides. Labels, annotations
// and container images are compared by hand first: they are plain strings
// that Semantic would compare exactly, and across a revision history they
// usually differ (a restart stamp, a new image), which rejects most
// candidates without the reflective comparison. The rest of the metadata
// and the pod spec go through semanticEqual, by pointer and on a metadata
// copy, so no cached object is modified and no whole template is copied.
func sameTemplate(rsTmpl, dTmpl *corev1.PodTemplateSpec) bool {
	if !labelsEqualIgnoringHash(rsTmpl.Labels, dTmpl.Labels) ||
		!stringMapsEqual(rsTmpl.Annotations, dTmpl.Annotations) ||
		!sameImages(rsTmpl.Spec.Containers, dTmpl.Spec.Containers) ||
		!sameImages(rsTmpl.Spec.InitContainers, dTmpl.Spec.InitContainers) {
		return false
	}
	am, bm := rsTmpl.ObjectMeta, dTmpl.ObjectMeta
	am.Labels, bm.Labels = nil, nil
	am.Annotations, bm.Annotations = nil, nil
	return semanticEqual(&am, &bm) && semanticEqual(&rsTmpl.Spec, &dTmpl.Spec)
}

// semanticEqual is apiequality.Semantic.DeepEqual, trying reflect.DeepEqual
// first: what is equal field by field is semantically equal too, and the
// plain comparison does without Semantic's per-value lookup of custom
// equality functions, several times faster on a pod spec. The current
// ReplicaSet's template is a decoded copy of the Deployment's, so the fast
// answer is the usual one; anything else (a quantity spelt differently,
// nil against empty) still gets Semantic's answer.
func semanticEqual(a, b any) bool {
	return reflect.DeepEqual(a, b) || apiequality.Semantic.DeepEqual(a, b)
}

// sameImages reports whether two container lists have the same length and
// the same image at each position.
func sameImages(a, b []corev1.Container) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Image != b[i].Image {
			return false
		}
	}
	return true
}

// stringMapsEqual compares two string maps, treating nil and empty alike
// as apiequality.Semantic does.
func stringMapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// labelsEqualIgnoringHash compares two label maps as if neither had the
// pod-template-hash label.
func labelsEqualIgnoringHash(a, b map[string]string) bool {
	n := 0
	for k, v := range a {
		if k == podTemplateHashLabel {
			continue
		}
		if w, ok := b[k]; !ok || w != v {
			return false
		}
		n++
	}
	m := len(b)
	if _, ok := b[podTemplateHashLabel]; ok {
		m--
	}
	return n == m
}

func progressDeadlineExceeded(conds []appsv1.DeploymentCondition) bool {
	for i := range conds {
		if conds[i].Type == appsv1.DeploymentProgressing && conds[i].Reason == ProgressDeadlineExceeded {
			return true
		}
	}
	return false
}

// ReplicaSetRefs points at each of replicaSets, for Deployment and
// CurrentReplicaSet when the ReplicaSets come as a list's items.
func ReplicaSetRefs(replicaSets ...appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	out := make([]*appsv1.ReplicaSet, len(replicaSets))
	for i := range replicaSets {
		out[i] = &replicaSets[i]
	}
	return out
}
