package workload

import (
	"context"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/execute"
	"github.com/kick-operator/kick/restart/freshness"
)

// Registry is the set of workload kinds active in this manager. The
// manager builds it once at start-up, after probing its integrations, and
// hands the same value to every controller that enumerates kinds (indexes,
// watches, lists, counts); it never changes afterwards. A nil *Registry
// means Builtin().
type Registry struct {
	kinds     []Kind
	redirects []Redirect
}

// Redirect lets a kind take over the restart of another kind's object: it
// returns the object (of a registered kind) that may be restarted and
// inspected instead of target, nil when there is none, and whether it takes
// target's restarts over now (false: target is restarted itself, but a
// restart already written to that object is still followed there; see
// Follow).
type Redirect func(ctx context.Context, c client.Reader, target client.Object) (client.Object, bool, error)

var builtin = &Registry{kinds: []Kind{DeploymentKind, StatefulSetKind, DaemonSetKind}}

// Builtin is the registry of the apps/v1 kinds: Deployment, StatefulSet
// and DaemonSet.
func Builtin() *Registry { return builtin }

// With returns a new registry holding r's kinds and k, whose redirects are
// consulted (in order) before restarting a target.
func (r *Registry) With(k Kind, redirects ...Redirect) *Registry {
	r = r.get()
	return &Registry{
		kinds:     append(append([]Kind{}, r.kinds...), k),
		redirects: append(append([]Redirect{}, r.redirects...), redirects...),
	}
}

func (r *Registry) get() *Registry {
	if r == nil {
		return builtin
	}
	return r
}

// Kinds returns the registered kinds.
func (r *Registry) Kinds() []Kind { return append([]Kind{}, r.get().kinds...) }

// Lookup returns the registered kind named target.
func (r *Registry) Lookup(target kickv1alpha1.TargetKind) (*Kind, bool) {
	for i, k := range r.get().kinds {
		if k.Target == target {
			return &r.get().kinds[i], true
		}
	}
	return nil, false
}

// KindOf returns the registered kind of obj; false for an object of no
// registered kind.
func (r *Registry) KindOf(obj client.Object) (*Kind, bool) {
	t := KindOf(obj)
	if t == "" {
		return nil, false
	}
	return r.Lookup(t)
}

// New returns an empty object of the given target kind, or an error naming
// the kind when this manager cannot restart it.
func (r *Registry) New(target kickv1alpha1.TargetKind) (client.Object, error) {
	if k, ok := r.Lookup(target); ok {
		return k.New(), nil
	}
	if target == kickv1alpha1.TargetRollout {
		return nil, fmt.Errorf("kind Rollout needs the manager's Argo Rollouts integration (--enable-argo-rollouts), which is not active")
	}
	return nil, fmt.Errorf("kind %q is not a workload KICK restarts (Deployment, StatefulSet, DaemonSet, Rollout)", target)
}

// APIVersion returns the API version of a registered target kind, the
// apps/v1 default otherwise.
func (r *Registry) APIVersion(target kickv1alpha1.TargetKind) string {
	if k, ok := r.Lookup(target); ok {
		return k.APIVersion
	}
	return kickv1alpha1.DefaultTargetAPIVersion
}

// Objects returns one empty object per registered kind.
func (r *Registry) Objects() []client.Object {
	out := make([]client.Object, 0, len(r.get().kinds))
	for _, k := range r.get().kinds {
		out = append(out, k.New())
	}
	return out
}

// Lists returns one empty list per registered kind.
func (r *Registry) Lists() []client.ObjectList {
	out := make([]client.ObjectList, 0, len(r.get().kinds))
	for _, k := range r.get().kinds {
		out = append(out, k.NewList())
	}
	return out
}

// Inspect returns the rollout state of a workload of a registered kind.
func (r *Registry) Inspect(ctx context.Context, c client.Reader, obj client.Object) (freshness.Rollout, error) {
	k, ok := r.KindOf(obj)
	if !ok {
		return freshness.Rollout{}, fmt.Errorf("cannot inspect the rollout of %T", obj)
	}
	return k.Inspect(ctx, c, obj)
}

// Follows returns the workloads whose requests follow obj besides obj's
// own (see Kind.Follows).
func (r *Registry) Follows(obj client.Object) []Ref {
	k, ok := r.KindOf(obj)
	if !ok || k.Follows == nil {
		return nil
	}
	return k.Follows(obj)
}

// Handle returns how a request restarts and follows target: through target
// itself, or through the object a redirect names.
func (r *Registry) Handle(ctx context.Context, c client.Reader, target client.Object) (Handle, error) {
	hs, err := r.handles(ctx, c, target)
	if err != nil {
		return Handle{}, err
	}
	return hs[0], nil
}

// Follow returns the handle of a restart already written with value. Which
// object Handle picks can change while that restart rolls out: the Rollouts
// redirect depends on the Deployment's replica count, which a person, a
// GitOps sync or the Rollouts controller may change at any time. A restart
// must be followed on the object it was written to; on the other one its
// stamp is missing, which looks like a lost patch and would be written
// again, a second restart. So the object that carries value is followed (the
// one Handle picks first), else one carrying a later restart, else (the cache
// has not seen the patch yet) the one Handle picks.
func (r *Registry) Follow(ctx context.Context, c client.Reader, target client.Object, value string) (Handle, error) {
	hs, err := r.handles(ctx, c, target)
	if err != nil {
		return Handle{}, err
	}
	mine, ok := freshness.ParseStamp(value)
	if !ok {
		return hs[0], nil
	}
	for _, exact := range []bool{true, false} {
		for _, h := range hs {
			if at, ok := h.Current(); ok && (at.Equal(mine) || !exact && at.After(mine)) {
				return h, nil
			}
		}
	}
	return hs[0], nil
}

// handles returns the handles that may restart target: first the one
// Handle picks, then the others (target itself, and redirects' objects that
// do not take over now).
func (r *Registry) handles(ctx context.Context, c client.Reader, target client.Object) ([]Handle, error) {
	var hs []Handle
	picked := false
	add := func(obj client.Object, pick bool) {
		k, ok := r.KindOf(obj)
		if !ok {
			return
		}
		h := Handle{Object: obj, Kind: k, Target: target}
		if pick && !picked {
			hs, picked = append([]Handle{h}, hs...), true
			return
		}
		hs = append(hs, h)
	}
	for _, redirect := range r.get().redirects {
		obj, ok, err := redirect(ctx, c, target)
		if err != nil {
			return nil, err
		}
		if obj != nil {
			add(obj, ok)
		}
	}
	add(target, true)
	if !picked {
		return nil, fmt.Errorf("%T is not a workload kind this manager restarts", target)
	}
	return hs, nil
}

// Handle is the object a request stamps and whose rollout it follows, for
// one target workload. Object is the target itself, except where a
// redirect applies: a Deployment that an Argo Rollout runs through
// spec.workloadRef is restarted and followed through that Rollout.
type Handle struct {
	Object client.Object
	Kind   *Kind
	Target client.Object
}

// Redirected reports whether Object is not the target itself.
func (h Handle) Redirected() bool { return h.Object != h.Target }

// Ref names Object.
func (h Handle) Ref() Ref {
	return Ref{Kind: h.Kind.Target, Namespace: h.Object.GetNamespace(), Name: h.Object.GetName()}
}

// Inspect returns the rollout state of Object.
func (h Handle) Inspect(ctx context.Context, c client.Reader) (freshness.Rollout, error) {
	return h.Kind.Inspect(ctx, c, h.Object)
}

// Stamp returns the restart time and value for a restart at now answering
// every change up to latestChange.
func (h Handle) Stamp(now, latestChange time.Time) (time.Time, string) {
	return h.Kind.Restarter.Stamp(now, latestChange)
}

// Current returns the restart time Object carries.
func (h Handle) Current() (time.Time, bool) { return h.Kind.Restarter.Current(h.Object) }

// Restart writes the restart value to Object.
func (h Handle) Restart(ctx context.Context, c client.Writer, value string) error {
	return h.Kind.Restarter.Apply(ctx, c, h.Object, value)
}

// CanNote reports whether RestartWithNote can restart Object: its restarter
// writes notes, and Object is the target itself (a note on another object
// would not be found from the target).
func (h Handle) CanNote() bool {
	_, ok := h.Kind.Restarter.(execute.Noter)
	return ok && !h.Redirected()
}

// RestartWithNote writes the restart value to Object and sets its
// annotation key to note in the same write; see CanNote.
func (h Handle) RestartWithNote(ctx context.Context, c client.Writer, value, key, note string) error {
	n, ok := h.Kind.Restarter.(execute.Noter)
	if !ok {
		return fmt.Errorf("%s cannot carry a note with its restart", h.Ref())
	}
	return n.ApplyWithNote(ctx, c, h.Object, value, key, note)
}
