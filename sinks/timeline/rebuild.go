package timeline

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/policy"
	"github.com/kick-operator/kick/sinks/timeline/entry"
)

// rebuild fills h with what KICK's durable objects in the cache still
// tell: every KickRequest's cycle and the last change of every
// SourceObservation (on each consumer). A restarted manager shows the last
// hours this way; the Events the API server still holds come through the
// first list of watchEvents.
func (c catalog) rebuild(ctx context.Context, h *History) error {
	var errs []error
	var requests kickv1alpha1.KickRequestList
	if err := c.reader.List(ctx, &requests); err != nil {
		errs = append(errs, err)
	}
	for i := range requests.Items {
		h.Add(entry.FromRequest(&requests.Items[i])...)
	}
	var records kickv1alpha1.SourceObservationList
	if err := c.reader.List(ctx, &records); err != nil {
		errs = append(errs, err)
	}
	for i := range records.Items {
		rec := &records.Items[i]
		consumers, err := c.consumers(ctx, rec.Namespace, string(rec.Spec.Source.Kind), rec.Spec.Source.Name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		h.Add(entry.FromObservation(rec, consumers)...)
	}
	return errors.Join(errs...)
}

// fromEvent is the entry of an Event about a managed workload or a
// KickRequest (shown on its target's lane); false for any other Event.
//
// An Event counts only for objects of its own namespace: whoever may
// create Events in one namespace can name any object in involvedObject,
// and an Event of namespace a about a workload of namespace b would
// otherwise put a's words on b's lane. The API server files every Event it
// makes, and KICK's recorder files every Event it makes, in the namespace
// of the object concerned.
func (c catalog) fromEvent(ctx context.Context, ev *corev1.Event) (entry.Entry, bool) {
	ref := ev.InvolvedObject
	ns := ev.Namespace
	if ref.Namespace != "" && ref.Namespace != ns {
		return entry.Entry{}, false
	}
	if ref.Kind == "KickRequest" {
		var kr kickv1alpha1.KickRequest
		if err := c.reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: ref.Name}, &kr); err != nil {
			return entry.Entry{}, false
		}
		return entry.FromEvent(ev, entry.TargetOf(&kr)), true
	}
	k, ok := c.kinds.Lookup(kickv1alpha1.TargetKind(ref.Kind))
	if !ok || k.APIVersion != ref.APIVersion {
		return entry.Entry{}, false
	}
	obj := k.New()
	if err := c.reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: ref.Name}, obj); err != nil || !c.managed(ctx, obj) {
		return entry.Entry{}, false
	}
	return entry.FromEvent(ev, entry.Workload{Namespace: ns, Kind: ref.Kind, Name: ref.Name}), true
}

// managed reports whether some KickPolicy in the workload's namespace selects it.
func (c catalog) managed(ctx context.Context, obj client.Object) bool {
	var policies kickv1alpha1.KickPolicyList
	if err := c.reader.List(ctx, &policies, client.InNamespace(obj.GetNamespace())); err != nil {
		return false
	}
	for i := range policies.Items {
		if cp, err := policy.Compile(&policies.Items[i]); err == nil && cp.MatchesWorkload(obj.GetLabels()) {
			return true
		}
	}
	return false
}
