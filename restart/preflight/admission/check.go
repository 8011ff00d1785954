package admission

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
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
	// Ready reports whether the caches have synced; nil means always.
	Ready func() bool
	// Budget bounds an answer; 0 means DefaultBudget.
	Budget time.Duration
	// DenyInDenyWindows turns on the opt-in deny mode.
	DenyInDenyWindows bool
	// ClusterLimit is --max-concurrent-restarts, for a fan-out's plan.
	ClusterLimit int
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Write is the part of an admission review the checker answers.
type Write struct {
	Operation preflight.Operation
	// Kind is discovery.KindSecret or discovery.KindConfigMap.
	Kind string
	// Namespace and Name are the review's (Name may be empty on create).
	Namespace, Name string
	// Object is the JSON of the object as written (create, update) or as
	// stored (delete); Old is the JSON of the object before an update.
	Object, Old []byte
	// Exempt is set when the writer is exempt from deny mode.
	Exempt bool
}

// errBudget is returned when the answer took longer than the budget.
var errBudget = errors.New("budget exceeded")

// errUnreadable is returned when the review's object does not decode.
var errUnreadable = errors.New("unreadable object")

// Check answers for w. It never fails: what it cannot establish becomes
// "cannot assess".
func (c *Checker) Check(ctx context.Context, w Write) preflight.Answer {
	if c.Ready != nil && !c.Ready() {
		return preflight.Compose(preflight.Input{CannotAssess: "cache not ready"})
	}
	budget := c.Budget
	if budget <= 0 {
		budget = DefaultBudget
	}
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	in, err := c.input(ctx, w)
	switch {
	case errors.Is(err, errUnreadable):
		return preflight.Compose(preflight.Input{CannotAssess: err.Error()})
	case errors.Is(err, errBudget) || ctx.Err() != nil:
		return preflight.Compose(preflight.Input{CannotAssess: fmt.Sprintf("no answer within %s", budget)})
	case err != nil:
		return preflight.Compose(preflight.Input{CannotAssess: "cache read failed"})
	}
	return preflight.Compose(in)
}

func (c *Checker) input(ctx context.Context, w Write) (preflight.Input, error) {
	in := preflight.Input{Operation: w.Operation, Kind: w.Kind, DenyInDenyWindows: c.DenyInDenyWindows, Exempt: w.Exempt, ClusterLimit: c.ClusterLimit}
	if w.Kind != discovery.KindSecret && w.Kind != discovery.KindConfigMap {
		return preflight.Input{}, nil
	}
	now := c.now()
	// The policies come first: in a namespace without any, the object is
	// never decoded nor compared.
	batch, err := request.NewBatch(ctx, c.Client, c.Kinds, c.CSI, w.Namespace, now)
	if err != nil || len(batch.Policies()) == 0 {
		return preflight.Input{}, err // no policy: not a namespace KICK manages
	}
	obj, err := decode(w.Kind, w.Object)
	if err != nil {
		return in, err
	}
	if obj.GetNamespace() == "" {
		obj.SetNamespace(w.Namespace)
	}
	workloads, err := c.consumers(ctx, w.Kind, obj)
	if err != nil || len(workloads) == 0 {
		return in, err
	}
	if w.Operation == preflight.Delete {
		for _, wl := range workloads {
			in.Consumers = append(in.Consumers, preflight.Consumer{Kind: workload.KindOf(wl), Name: wl.GetName()})
		}
		return in, nil
	}

	// An update that leaves the content as it was changes nothing; the
	// review's own oldObject says so. No stored fingerprint is consulted:
	// the answer must not tell whether a guessed content is the stored one.
	if w.Operation == preflight.Update {
		old, err := decode(w.Kind, w.Old)
		if err != nil {
			return in, err
		}
		in.Unchanged = sameContent(obj, old)
	}
	if !in.Unchanged {
		// The observer's record after it sees this content.
		var rec kickv1alpha1.SourceObservation
		var prev *kickv1alpha1.SourceObservationSpec
		switch err := c.Client.Get(ctx, client.ObjectKey{Namespace: obj.GetNamespace(), Name: kickv1alpha1.ObservationName(w.Kind, obj.GetName())}, &rec); {
		case err == nil && observe.OwnedBy(&rec, obj.GetUID()):
			prev = &rec.Spec
		case err != nil && !apierrors.IsNotFound(err):
			return in, err
		}
		class := observe.Relevant
		if prev == nil {
			class = observe.Baseline
		}
		spec := observe.Next(prev, class, observe.Observed{
			Source:          kickv1alpha1.ObservedSource{APIVersion: discovery.CoreAPIVersion, Kind: kickv1alpha1.SourceKind(w.Kind), Name: obj.GetName()},
			ResourceVersion: obj.GetResourceVersion(), LastWrite: now,
		}, now)
		batch.Override(request.Override{Kind: w.Kind, Name: obj.GetName(), Labels: obj.GetLabels(), Record: &spec})
	}

	// Beyond MaxAssessed consumers the answer names the rest; deny mode
	// must know of every Deny window, so it assesses all.
	if len(workloads) > preflight.MaxAssessed && !c.DenyInDenyWindows {
		for _, wl := range workloads[preflight.MaxAssessed:] {
			in.NotAssessed = append(in.NotAssessed, preflight.Consumer{Kind: workload.KindOf(wl), Name: wl.GetName()})
		}
		workloads = workloads[:preflight.MaxAssessed]
	}
	in.Consumers = make([]preflight.Consumer, 0, len(workloads))
	for _, wl := range workloads {
		if ctx.Err() != nil {
			return in, errBudget
		}
		h, err := c.Kinds.Handle(ctx, c.Client, wl)
		if err != nil {
			return in, err
		}
		f, err := batch.Facts(ctx, h)
		if err != nil {
			return in, err
		}
		a := request.Decide(ctx, c.GitOps, h.Target, f)
		in.Consumers = append(in.Consumers, preflight.Consumer{Kind: workload.KindOf(wl), Name: wl.GetName(), Assessment: &a,
			Rollout: c.lastRollout(ctx, wl)})
	}
	return in, nil
}

// lastRollout is how long the workload's last restart by KICK took to
// roll out, from its KickRequest; zero when unknown.
func (c *Checker) lastRollout(ctx context.Context, wl client.Object) time.Duration {
	var kr kickv1alpha1.KickRequest
	key := client.ObjectKey{Namespace: wl.GetNamespace(), Name: kickv1alpha1.RequestName(workload.KindOf(wl), wl.GetName())}
	if c.Client.Get(ctx, key, &kr, client.UnsafeDisableDeepCopy) != nil || kr.Status.Phase != kickv1alpha1.PhaseSucceeded ||
		kr.Status.LastRestartTime == nil || kr.Status.CompletionTime == nil {
		return 0
	}
	return max(kr.Status.CompletionTime.Sub(kr.Status.LastRestartTime.Time), 0)
}

// decode reads a Secret or ConfigMap from the review's JSON; the object's
// data is read here and compared in sameContent, and nowhere else.
func decode(kind string, raw []byte) (client.Object, error) {
	var obj client.Object = &corev1.ConfigMap{}
	if kind == discovery.KindSecret {
		obj = &corev1.Secret{}
	}
	if len(raw) == 0 || json.Unmarshal(raw, obj) != nil {
		return nil, errUnreadable
	}
	return obj, nil
}

// sameContent reports whether a and b (both Secrets or both ConfigMaps)
// hold the same data.
func sameContent(a, b client.Object) bool {
	switch x := a.(type) {
	case *corev1.Secret:
		y := b.(*corev1.Secret)
		return maps.EqualFunc(x.Data, y.Data, bytes.Equal)
	case *corev1.ConfigMap:
		y := b.(*corev1.ConfigMap)
		return maps.Equal(x.Data, y.Data) && maps.EqualFunc(x.BinaryData, y.BinaryData, bytes.Equal)
	}
	return false
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
