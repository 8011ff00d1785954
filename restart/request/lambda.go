package request

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/discovery"
	"github.com/kick-operator/kick/restart/policy"
)

// LatestChange returns Λ(w): the newest relevant change time recorded for
// the workload's in-scope dependencies (model §6), read from the cached
// observation records and the sources' cached labels.
func LatestChange(ctx context.Context, c client.Reader, w client.Object, p *kickv1alpha1.KickPolicy) (time.Time, error) {
	var latest time.Time
	for _, dep := range discovery.FromWorkload(w) {
		if dep.Kind != string(kickv1alpha1.SourceSecret) && dep.Kind != string(kickv1alpha1.SourceConfigMap) {
			continue
		}
		var rec kickv1alpha1.SourceObservation
		key := client.ObjectKey{Namespace: w.GetNamespace(), Name: kickv1alpha1.ObservationName(dep.Kind, dep.Name)}
		if err := c.Get(ctx, key, &rec); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return time.Time{}, err
		}
		if rec.Spec.LastRelevantChangeTime == nil || !rec.Spec.LastRelevantChangeTime.After(latest) {
			continue
		}
		in, err := sourceInScope(ctx, c, w.GetNamespace(), dep, p)
		if err != nil {
			return time.Time{}, err
		}
		if in {
			latest = rec.Spec.LastRelevantChangeTime.Time
		}
	}
	return latest, nil
}

func sourceInScope(ctx context.Context, c client.Reader, namespace string, dep discovery.Dependency, p *kickv1alpha1.KickPolicy) (bool, error) {
	if p.Spec.Discovery == nil || p.Spec.Discovery.DependencySelector == nil {
		return true, nil
	}
	var src client.Object = &corev1.Secret{}
	if dep.Kind == string(kickv1alpha1.SourceConfigMap) {
		src = &corev1.ConfigMap{}
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: dep.Name}, src); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, err
	}
	return policy.DependencyInScope(p, src.GetLabels()), nil
}

// manualChange is the change time a person's or CI's request stands for:
// the end of the second it was created in (creation times are whole
// seconds), so a rollout that started before the request never satisfies it.
func manualChange(kr *kickv1alpha1.KickRequest) time.Time {
	if !isManual(kr) || kr.CreationTimestamp.IsZero() {
		return time.Time{}
	}
	return kr.CreationTimestamp.Time.Add(time.Second - time.Nanosecond)
}

func latest(ts ...time.Time) time.Time {
	var out time.Time
	for _, t := range ts {
		if t.After(out) {
			out = t
		}
	}
	return out
}
