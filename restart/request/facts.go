package request

import (
	"context"
	"fmt"
	"sync/atomic"
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

// Decide assesses f, first asking the GitOps gate about target when a
// policy selects it: the assessment the request reconciler acts on.
func Decide(ctx context.Context, g gitops.Gate, target client.Object, f assess.Facts) assess.Assessment {
	if sel := assess.Select(f); sel.Policy != nil {
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
func facts(ctx context.Context, c client.Reader, kinds *workload.Registry, csi bool, names KeyNamer, waves *waveCache, h workload.Handle, now time.Time) (assess.Facts, error) {
	b, err := NewBatch(ctx, c, kinds, csi, h.Target.GetNamespace(), now)
	if err != nil {
		return assess.Facts{Now: now}, err
	}
	b.shared, b.KeyNames = waves, names
	return b.Facts(ctx, h)
}

// Batch gathers the facts of many workloads of one namespace at one
// instant (the admission preflight's consumers of the source being
// written) with the reads of facts, sharing what they have in common: the
// namespace's policies are listed once, and the written source's facts are
// supplied instead of read.
type Batch struct {
	c        client.Reader
	kinds    *workload.Registry
	csi      bool
	now      time.Time
	policies []kickv1alpha1.KickPolicy
	labels   bool
	halts    []assess.Halt
	holds    []assess.Hold
	override *Override
	// members are the wave members read, by policy and source; shared,
	// when set, keeps them across batches for a moment.
	members map[string][]assess.WaveMember
	shared  *waveCache
	// KeyNames, when set, lets the assessments count only the keys each
	// workload reads.
	KeyNames KeyNamer
}

// Override is a source's facts as they will be once a write is stored.
type Override struct {
	Kind, Name string
	Labels     map[string]string
	// Record is the observation record the observer will write for it.
	Record *kickv1alpha1.SourceObservationSpec
}

// NewBatch lists the namespace's policies, the failed restarts that halt a
// fan-out and the KickHolds. kinds (nil: the built-in kinds) are the workloads the
// wave stage looks for among a source's consumers.
func NewBatch(ctx context.Context, c client.Reader, kinds *workload.Registry, csi bool, namespace string, now time.Time) (*Batch, error) {
	// Shallow copies of the cache's policies: facts and assessments read
	// them, never modify them.
	policies, err := namespacePolicies(ctx, c, namespace)
	if err != nil {
		return nil, err
	}
	b := &Batch{c: c, kinds: kinds, csi: csi, now: now, policies: policies, labels: selectsDependencies(policies)}
	if len(policies) == 0 {
		return b, nil // nothing is managed, nothing is held
	}
	if b.halts, err = halts(ctx, c, namespace); err != nil {
		return b, err
	}
	if !holdsServed.Load() {
		return b, nil
	}
	holds, err := namespaceHolds(ctx, c, namespace)
	if err != nil {
		return b, err
	}
	b.holds = assess.HoldsOf(holds)
	return b, nil
}

// holdsServed is whether the API server served KickHolds when the manager
// started (Options.NoHolds); a process without it, such as a test of the
// pure parts, reads them.
var holdsServed = func() *atomic.Bool { var b atomic.Bool; b.Store(true); return &b }()

// Policies are the namespace's KickPolicies.
func (b *Batch) Policies() []kickv1alpha1.KickPolicy { return b.policies }

// Override makes every later Facts report o instead of reading the source
// and its record.
func (b *Batch) Override(o Override) { b.override = &o }

// Facts gathers the facts of the workload h restarts.
func (b *Batch) Facts(ctx context.Context, h workload.Handle) (assess.Facts, error) {
	target := h.Target
	f := assess.Facts{
		Now: b.now,
		Target: assess.Target{
			Kind: workload.KindOf(target), Namespace: target.GetNamespace(), Name: target.GetName(), Labels: target.GetLabels(),
		},
		Policies: b.policies,
		Halts:    b.halts,
		Holds:    b.holds,
	}
	if stamp, ok := h.Current(); ok {
		f.Target.RestartedAt = stamp
	}
	deps := discovery.FromWorkload(target)
	reads := b.keysRead(target, len(deps))
	f.KeyNames = b.KeyNames
	if len(deps) > 0 {
		f.Dependencies = make([]assess.Dependency, 0, len(deps))
	}
	// One read buffer for every record, and one array holding their specs.
	var rec kickv1alpha1.SourceObservation
	specs := make([]kickv1alpha1.SourceObservationSpec, 0, len(deps))
	for _, dep := range deps {
		d := assess.Dependency{Kind: dep.Kind, Name: dep.Name}
		record := kickv1alpha1.ObservationName(dep.Kind, dep.Name)
		switch dep.Kind {
		case string(kickv1alpha1.SourceSecret), string(kickv1alpha1.SourceConfigMap):
			d.Counted = true
		case string(kickv1alpha1.SourceSecretProviderClass):
			d.Counted = b.csi
			record = kickv1alpha1.ConsumerObservationName(dep.Kind, dep.Name, workload.KindOf(target), target.GetName())
		}
		switch o := b.override; {
		case o != nil && d.Counted && dep.Kind == o.Kind && dep.Name == o.Name:
			d.Record, d.Labels = o.Record, o.Labels
		case d.Counted:
			found, err := readRecord(ctx, b.c, target.GetNamespace(), record, &rec)
			if err != nil {
				return f, err
			}
			if found {
				specs = append(specs, rec.Spec) // within capacity: earlier pointers stay valid
				d.Record = &specs[len(specs)-1]
			}
			if b.labels && d.Record != nil {
				if err := readLabels(ctx, b.c, target.GetNamespace(), dep, &d); err != nil {
					return f, err
				}
			}
		}
		d.Reads = reads.of(dep)
		f.Dependencies = append(f.Dependencies, d)
	}
	rollout, err := h.Inspect(ctx, b.c)
	if err != nil {
		return f, err
	}
	f.Rollout = rollout
	return f, b.waves(ctx, &f)
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

// readRecord reads a dependency's observation record into rec, reporting
// whether there is one. rec shares its maps and pointers with the cache's
// object (a copy per dependency cost the preflight most of its time):
// facts are read, never modified.
func readRecord(ctx context.Context, c client.Reader, namespace, name string, rec *kickv1alpha1.SourceObservation) (bool, error) {
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, rec, client.UnsafeDisableDeepCopy); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("read observation record %s/%s: %w", namespace, name, err)
	}
	return true, nil
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
