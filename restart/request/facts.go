package request

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/gitops"
	"github.com/kick-operator/kick/restart/assess"
	"github.com/kick-operator/kick/restart/discovery"
	"github.com/kick-operator/kick/restart/workload"
)

// Facts is facts for other callers that assess from the manager's caches
// (the admission preflight): the same reads, so the same answer.
func Facts(ctx context.Context, c client.Reader, csi bool, h workload.Handle, now time.Time) (assess.Facts, error) {
	return facts(ctx, c, csi, h, now)
}

// Decide assesses f, first asking the GitOps gate about target when a
// policy selects it: the assessment the request reconciler acts on.
func Decide(ctx context.Context, g gitops.Gate, target client.Object, f assess.Facts) assess.Assessment {
	if sel := assess.Assess(f).Selection; sel.Policy != nil {
		d := g.Decide(ctx, target, sel.Policy, f.Now)
		f.GitOps = &d
	}
	return assess.Assess(f)
}

// facts gathers from the cache what an assessment of a workload needs: its
// policies, its dependencies with their records (and labels, when a policy
// of the namespace selects dependencies), and the rollout of the object the
// handle restarts. Any read error is returned, so the caller retries rather
// than deciding on part of the facts.
func facts(ctx context.Context, c client.Reader, csi bool, h workload.Handle, now time.Time) (assess.Facts, error) {
	target := h.Target
	f := assess.Facts{
		Now: now,
		Target: assess.Target{
			Kind: workload.KindOf(target), Namespace: target.GetNamespace(), Name: target.GetName(), Labels: target.GetLabels(),
		},
	}
	if stamp, ok := h.Current(); ok {
		f.Target.RestartedAt = stamp
	}
	var policies kickv1alpha1.KickPolicyList
	if err := c.List(ctx, &policies, client.InNamespace(target.GetNamespace())); err != nil {
		return f, err
	}
	f.Policies = policies.Items
	labels := selectsDependencies(policies.Items)
	for _, dep := range discovery.FromWorkload(target) {
		d := assess.Dependency{Kind: dep.Kind, Name: dep.Name}
		record := kickv1alpha1.ObservationName(dep.Kind, dep.Name)
		switch dep.Kind {
		case string(kickv1alpha1.SourceSecret), string(kickv1alpha1.SourceConfigMap):
			d.Counted = true
		case string(kickv1alpha1.SourceSecretProviderClass):
			d.Counted = csi
			record = kickv1alpha1.ConsumerObservationName(dep.Kind, dep.Name, workload.KindOf(target), target.GetName())
		}
		if d.Counted {
			if err := readRecord(ctx, c, target.GetNamespace(), record, &d); err != nil {
				return f, err
			}
			if labels && d.Record != nil {
				if err := readLabels(ctx, c, target.GetNamespace(), dep, &d); err != nil {
					return f, err
				}
			}
		}
		f.Dependencies = append(f.Dependencies, d)
	}
	rollout, err := h.Inspect(ctx, c)
	if err != nil {
		return f, err
	}
	f.Rollout = rollout
	return f, nil
}

// selectsDependencies reports whether a policy narrows its dependencies by
// label; only then are the sources' labels read.
func selectsDependencies(policies []kickv1alpha1.KickPolicy) bool {
	for i := range policies {
		if d := policies[i].Spec.Discovery; d != nil && d.DependencySelector != nil {
			return true
		}
	}
	return false
}

func readRecord(ctx context.Context, c client.Reader, namespace, name string, d *assess.Dependency) error {
	var rec kickv1alpha1.SourceObservation
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &rec); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("read observation record %s/%s: %w", namespace, name, err)
	}
	d.Record = &rec.Spec
	return nil
}

// readLabels reads a source's labels, metadata only, as the manager caches
// Secrets and ConfigMaps (a typed read would start an informer holding every
// one of them in full).
func readLabels(ctx context.Context, c client.Reader, namespace string, dep discovery.Dependency, d *assess.Dependency) error {
	src := &metav1.PartialObjectMetadata{}
	src.SetGroupVersionKind(schema.FromAPIVersionAndKind(dep.APIVersion, dep.Kind))
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: dep.Name}, src); err != nil {
		if apierrors.IsNotFound(err) {
			d.Missing = true
			return nil
		}
		return fmt.Errorf("read labels of %s %s/%s: %w", dep.Kind, namespace, dep.Name, err)
	}
	d.Labels = src.GetLabels()
	return nil
}
