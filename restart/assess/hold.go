package assess

import (
	"fmt"
	"slices"
	"strings"
	"time"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/freshness"
)

// Hold is a person's freeze (a KickHold of the workload's namespace) as the
// hold stage reads it.
type Hold struct {
	// Name is the KickHold's name.
	Name   string
	Target kickv1alpha1.HoldTarget
	Reason string
	// ExpiresAt is when the hold ends by itself; zero: when it is released.
	ExpiresAt time.Time
}

// HoldsOf returns a namespace's KickHolds as the hold stage reads them,
// sorted by name; holds being deleted are left out.
func HoldsOf(holds []kickv1alpha1.KickHold) []Hold {
	var out []Hold
	for i := range holds {
		h := &holds[i]
		if h.DeletionTimestamp != nil {
			continue
		}
		hold := Hold{Name: h.Name, Target: h.Spec.Target, Reason: h.Spec.Reason}
		if h.Spec.ExpiresAt != nil {
			hold.ExpiresAt = h.Spec.ExpiresAt.Time
		}
		out = append(out, hold)
	}
	slices.SortFunc(out, func(a, b Hold) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Cause names the hold as the object that holds a restart of namespace.
func (h Hold) Cause(namespace string) *kickv1alpha1.GateCause {
	return &kickv1alpha1.GateCause{APIVersion: kickv1alpha1.GroupVersion.String(), Kind: "KickHold", Namespace: namespace, Name: h.Name}
}

// activeAt reports whether the hold freezes restarts at now.
func (h Hold) activeAt(now time.Time) bool { return h.ExpiresAt.IsZero() || now.Before(h.ExpiresAt) }

// ReleaseCommand is the command that ends the hold.
func (h Hold) ReleaseCommand(namespace string) string {
	target := "namespace"
	if h.Target.Kind != kickv1alpha1.HoldNamespace {
		target = strings.ToLower(string(h.Target.Kind)) + "/" + h.Target.Name
	}
	if kickv1alpha1.HoldName(h.Target) != h.Name {
		return fmt.Sprintf("kubectl delete kickhold -n %s %s", namespace, h.Name)
	}
	return fmt.Sprintf("kubectl kick release -n %s %s", namespace, target)
}

// holdStage holds a restart that a KickHold of the workload's namespace
// freezes: a hold of the namespace or of the workload holds every restart;
// a hold of a source holds a restart that would bring in a change of that
// source (an in-scope dependency whose recorded change the running pods do
// not carry), like a halt does.
func holdStage(f Facts, latest freshness.Change, deps []DependencyResult) StageResult {
	var sourceHold *Hold
	for _, h := range f.Holds {
		if !h.activeAt(f.Now) {
			continue
		}
		t := h.Target
		switch {
		case t.Kind == kickv1alpha1.HoldNamespace:
			return held(f, h, "every restart in namespace "+f.Target.Namespace)
		case string(t.Kind) == string(f.Target.Kind) && t.Name == f.Target.Name:
			return held(f, h, "every restart of "+f.Target.String())
		case t.Kind.IsSource():
			for _, d := range deps {
				if d.Kind != string(t.Kind) || d.Name != t.Name || d.Scope != ScopeIn {
					continue
				}
				if !d.Change.IsZero() && freshness.Newer(d.Change, f.Rollout.Since) {
					return held(f, h, "restarts that bring in a change of "+t.String())
				}
				if sourceHold == nil {
					sourceHold = &h
				}
			}
		}
	}
	if sourceHold != nil {
		// A change known only from an event or a request annotation does
		// not name its source yet: wait for its record before letting it
		// pass a hold of a source the workload consumes.
		if lag := unrecorded(f, latest, pendingSources(f, deps)); !lag.IsZero() {
			return StageResult{Stage: StageHold, Reason: kickv1alpha1.GateHeld, Next: lag, Cause: sourceHold.Cause(f.Target.Namespace),
				Message: fmt.Sprintf("KickHold %s holds %s, which this workload consumes: waiting until %s for the record of the change at %s, to see whether it is a change of %s",
					sourceHold.Name, sourceHold.Target, formatTime(lag), formatTime(latest.Latest), sourceHold.Target)}
		}
	}
	return open(StageHold, "no KickHold freezes this restart")
}

// held is the hold stage's answer for a restart that hold h freezes.
func held(f Facts, h Hold, what string) StageResult {
	r := StageResult{Stage: StageHold, Reason: kickv1alpha1.GateHeld, Next: h.ExpiresAt, Held: &h, Cause: h.Cause(f.Target.Namespace),
		Message: fmt.Sprintf("held by KickHold %s (%s): %q; it holds %s until it is released (%s)",
			h.Name, h.Target, h.Reason, what, h.ReleaseCommand(f.Target.Namespace))}
	if !h.ExpiresAt.IsZero() {
		r.Message += " or expires at " + formatTime(h.ExpiresAt)
	}
	return r
}
