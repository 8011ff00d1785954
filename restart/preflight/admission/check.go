package admission

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/gitops"
	"github.com/kick-operator/kick/restart/discovery"
	"github.com/kick-operator/kick/restart/observe"
	"github.com/kick-operator/kick/restart/preflight"
	"github.com/kick-operator/kick/restart/request"
	"github.com/kick-operator/kick/restart/workload"
)

// DefaultBudget is how long an answer may take before it becomes "cannot
// assess"; well inside the webhook's one-second timeout.
const DefaultBudget = 200 * time.Millisecond

// Checker answers for one write. Every read goes to the manager's cache.
type Checker struct {
	// Client reads the manager's cache (sources metadata-only).
	Client client.Reader
	// GitOps decides the GitOps stage, from the providers' caches.
	GitOps gitops.Gate
	// Kinds are the workload kinds the manager restarts (nil: built-in).
	Kinds *workload.Registry
	// CSI makes Secrets Store CSI classes count as dependencies.
	CSI bool
	// Keys fingerprint the written content the way the observer does.
	Keys *observe.Fingerprinter
	// Ready reports whether the caches have synced; nil means always.
	Ready func() bool
	// Budget bounds an answer; 0 means DefaultBudget.
	Budget time.Duration
	// DenyInDenyWindows turns on the opt-in deny mode.
	DenyInDenyWindows bool
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// errBudget is returned when the answer took longer than the budget.
var errBudget = errors.New("budget exceeded")

// Check answers for a write of obj (*corev1.Secret or *corev1.ConfigMap):
// the object as written on create and update, as stored on delete. It
// never fails: what it cannot establish becomes "cannot assess".
func (c *Checker) Check(ctx context.Context, op preflight.Operation, obj client.Object) preflight.Answer {
	if c.Ready != nil && !c.Ready() {
		return preflight.Compose(preflight.Input{CannotAssess: "cache not ready"})
	}
	budget := c.Budget
	if budget <= 0 {
		budget = DefaultBudget
	}
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	in, err := c.input(ctx, op, obj)
	switch {
	case errors.Is(err, errBudget) || ctx.Err() != nil:
		return preflight.Compose(preflight.Input{CannotAssess: fmt.Sprintf("no answer within %s", budget)})
	case err != nil:
		return preflight.Compose(preflight.Input{CannotAssess: "cache read failed"})
	}
	return preflight.Compose(in)
}

func (c *Checker) input(ctx context.Context, op preflight.Operation, obj client.Object) (preflight.Input, error) {
	kind, fingerprint := c.content(obj)
	in := preflight.Input{Operation: op, Kind: kind, DenyInDenyWindows: c.DenyInDenyWindows}
	if kind == "" {
		return in, nil
	}
	now := c.now()
	batch, err := request.NewBatch(ctx, c.Client, c.CSI, obj.GetNamespace(), now)
	if err != nil || len(batch.Policies()) == 0 {
		return in, err // no policy: not a namespace KICK manages
	}
	workloads, err := c.consumers(ctx, kind, obj)
	if err != nil || len(workloads) == 0 {
		return in, err
	}
	if op == preflight.Delete {
		for _, w := range workloads {
			in.Consumers = append(in.Consumers, preflight.Consumer{Kind: workload.KindOf(w), Name: w.GetName()})
		}
		return in, nil
	}

	var rec kickv1alpha1.SourceObservation
	var current *kickv1alpha1.SourceObservation
	switch err := c.Client.Get(ctx, client.ObjectKey{Namespace: obj.GetNamespace(), Name: kickv1alpha1.ObservationName(kind, obj.GetName())}, &rec); {
	case err == nil && observe.OwnedBy(&rec, obj.GetUID()):
		current = &rec
	case err != nil && !apierrors.IsNotFound(err):
		return in, err
	}
	// The observer's own comparison and record update, applied to the
	// written content instead of a later read of it.
	class := observe.Classify(current, fingerprint, obj.GetResourceVersion(), c.Keys.KeyID())
	if class == observe.Baseline || class == observe.Relevant {
		var prev *kickv1alpha1.SourceObservationSpec
		if current != nil {
			prev = &current.Spec
		}
		spec := observe.Next(prev, class, observe.Observed{
			Source:      kickv1alpha1.ObservedSource{APIVersion: discovery.CoreAPIVersion, Kind: kickv1alpha1.SourceKind(kind), Name: obj.GetName()},
			Fingerprint: fingerprint, KeyID: c.Keys.KeyID(), ResourceVersion: obj.GetResourceVersion(), LastWrite: now,
		}, now)
		batch.Override(request.Override{Kind: kind, Name: obj.GetName(), Labels: obj.GetLabels(), Record: &spec})
	} else {
		in.Unchanged = true
	}

	// Beyond MaxAssessed consumers the answer names the rest; deny mode
	// must know of every Deny window, so it assesses all.
	if len(workloads) > preflight.MaxAssessed && !c.DenyInDenyWindows {
		for _, w := range workloads[preflight.MaxAssessed:] {
			in.NotAssessed = append(in.NotAssessed, preflight.Consumer{Kind: workload.KindOf(w), Name: w.GetName()})
		}
		workloads = workloads[:preflight.MaxAssessed]
	}
	in.Consumers = make([]preflight.Consumer, 0, len(workloads))
	for _, w := range workloads {
		if ctx.Err() != nil {
			return in, errBudget
		}
		h, err := c.Kinds.Handle(ctx, c.Client, w)
		if err != nil {
			return in, err
		}
		f, err := batch.Facts(ctx, h)
		if err != nil {
			return in, err
		}
		a := request.Decide(ctx, c.GitOps, h.Target, f)
		in.Consumers = append(in.Consumers, preflight.Consumer{Kind: workload.KindOf(w), Name: w.GetName(), Assessment: &a})
	}
	return in, nil
}

// content returns the source kind and the keyed fingerprint of its
// content; the object's data is read here and nowhere else.
func (c *Checker) content(obj client.Object) (kind, fingerprint string) {
	switch o := obj.(type) {
	case *corev1.Secret:
		return discovery.KindSecret, c.Keys.Secret(o)
	case *corev1.ConfigMap:
		return discovery.KindConfigMap, c.Keys.ConfigMap(o)
	}
	return "", ""
}

// consumers lists, from the cache index, the workloads in the source's
// namespace that consume it, sorted by kind and name.
func (c *Checker) consumers(ctx context.Context, kind string, src client.Object) ([]client.Object, error) {
	var out []client.Object
	sel := client.MatchingFields{discovery.SourceIndex: discovery.IndexKey(kind, src.GetName())}
	for _, wk := range c.Kinds.Kinds() {
		list := wk.NewList()
		// Read-only use: no copy of each workload out of the cache.
		if err := c.Client.List(ctx, list, client.InNamespace(src.GetNamespace()), sel, client.UnsafeDisableDeepCopy); err != nil {
			return nil, err
		}
		if err := meta.EachListItem(list, func(o runtime.Object) error {
			if w, ok := o.(client.Object); ok && w.GetDeletionTimestamp() == nil {
				out = append(out, w)
			}
			return nil
		}); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(out, func(a, b client.Object) int {
		if k := strings.Compare(string(workload.KindOf(a)), string(workload.KindOf(b))); k != 0 {
			return k
		}
		return strings.Compare(a.GetName(), b.GetName())
	})
	return out, nil
}

func (c *Checker) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}
