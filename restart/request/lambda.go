package request

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/discovery"
	"github.com/kick-operator/kick/restart/freshness"
	"github.com/kick-operator/kick/restart/policy"
	"github.com/kick-operator/kick/restart/workload"
)

// LatestChange returns Λ(w): the newest relevant change recorded for the
// workload's in-scope dependencies (model §6), read from the cached
// observation records and the sources' cached labels. A baseline is known
// only to the second, so it spans from its recorded write to the moment
// KICK first saw it.
func LatestChange(ctx context.Context, c client.Reader, w client.Object, p *kickv1alpha1.KickPolicy) (freshness.Change, error) {
	return LatestChangeOf(ctx, c, w, p, false)
}

// LatestChangeOf is LatestChange, counting Secrets Store CSI classes too
// when csi is set (the CSI integration runs): a class's record is the one
// kept for this workload (kickv1alpha1.ConsumerObservationName), and its
// dependencySelector scope is the SecretProviderClass's labels.
func LatestChangeOf(ctx context.Context, c client.Reader, w client.Object, p *kickv1alpha1.KickPolicy, csi bool) (freshness.Change, error) {
	var latest freshness.Change
	for _, dep := range discovery.FromWorkload(w) {
		name := kickv1alpha1.ObservationName(dep.Kind, dep.Name)
		switch {
		case dep.Kind == string(kickv1alpha1.SourceSecret), dep.Kind == string(kickv1alpha1.SourceConfigMap):
		case dep.Kind == string(kickv1alpha1.SourceSecretProviderClass) && csi:
			name = kickv1alpha1.ConsumerObservationName(dep.Kind, dep.Name, workload.KindOf(w), w.GetName())
		default:
			continue
		}
		var rec kickv1alpha1.SourceObservation
		key := client.ObjectKey{Namespace: w.GetNamespace(), Name: name}
		if err := c.Get(ctx, key, &rec); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return freshness.Change{}, err
		}
		change := RecordedChange(&rec.Spec)
		if change.IsZero() || (!change.Earliest.After(latest.Earliest) && !change.Latest.After(latest.Latest)) {
			continue
		}
		in, err := sourceInScope(ctx, c, w.GetNamespace(), dep, p)
		if err != nil {
			return freshness.Change{}, err
		}
		if in {
			latest = latest.Max(change)
		}
	}
	return latest, nil
}

// RecordedChange reads the change interval of an observation record.
func RecordedChange(spec *kickv1alpha1.SourceObservationSpec) freshness.Change {
	if spec.LastRelevantChangeTime == nil {
		return freshness.Change{}
	}
	c := freshness.At(spec.LastRelevantChangeTime.Time)
	if spec.Class == kickv1alpha1.ObservationBaseline && spec.LastRelevantChangeTime.Nanosecond() == 0 {
		// Recorded to the second: the write happened before the end of
		// that second and before KICK saw it.
		end := c.Earliest.Add(time.Second - time.Nanosecond)
		if seen := spec.BaselineObservedAt; seen != nil && seen.Before(end) && !seen.Before(c.Earliest) {
			end = seen.Time
		}
		c.Latest = end
	}
	return c
}

func sourceInScope(ctx context.Context, c client.Reader, namespace string, dep discovery.Dependency, p *kickv1alpha1.KickPolicy) (bool, error) {
	if p.Spec.Discovery == nil || p.Spec.Discovery.DependencySelector == nil {
		return true, nil
	}
	// Only the labels matter: read the source metadata-only, as the manager
	// caches Secrets and ConfigMaps (a typed read would start an informer
	// holding every one of them in full).
	src := &metav1.PartialObjectMetadata{}
	src.SetGroupVersionKind(schema.FromAPIVersionAndKind(dep.APIVersion, dep.Kind))
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: dep.Name}, src); err != nil {
		if apierrors.IsNotFound(err) {
			// A missing Secret or ConfigMap is out of scope; a class is
			// judged by the labels it has (none), as the CSI observer does.
			if dep.Kind == string(kickv1alpha1.SourceSecretProviderClass) {
				return policy.DependencyInScope(p, nil), nil
			}
			return false, nil
		}
		return false, err
	}
	return policy.DependencyInScope(p, src.GetLabels()), nil
}

// latest combines changes, bound by bound.
func latest(cs ...freshness.Change) freshness.Change {
	var out freshness.Change
	for _, c := range cs {
		out = out.Max(c)
	}
	return out
}

// exactly wraps a known instant (zero stays zero).
func exactly(t time.Time) freshness.Change {
	if t.IsZero() {
		return freshness.Change{}
	}
	return freshness.At(t)
}
