package observe

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/evidence"
	"github.com/kick-operator/kick/restart/freshness"
	"github.com/kick-operator/kick/router"
)

// answeredBy returns the earliest restart of a consumer that already
// answered the observed content: the consumer carries a restarted-for note
// (package evidence) naming this source at exactly the observed
// resourceVersion, and still carries the note's stamp. The driver writes
// such a note when it restarts a workload before the change's record is
// durable; a manager that stopped in between finds the content unrecorded
// and would otherwise date the change to now, after that restart, and
// restart again.
//
// The note is on an object tenants write, so it is only believed within
// what it can prove: the stamp must not be earlier than the content's last
// write (λ, cut to the second) nor later than now, and the workload must
// carry it. A forged note can at most date a change to a restart that
// really happened after the content was written.
func (r *SourceReconciler) answeredBy(ctx context.Context, kind string, o Observed, consumers []router.ObjectRef, now time.Time) (time.Time, bool) {
	var earliest time.Time
	for _, c := range consumers {
		wk, ok := r.Kinds.Lookup(kickv1alpha1.TargetKind(c.Kind))
		if !ok {
			continue
		}
		w := wk.New()
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: c.Name}, w); err != nil {
			continue
		}
		note, err := evidence.Parse(w.GetAnnotations()[kickv1alpha1.RestartedForAnnotation])
		if err != nil || !note.Covers(kind, string(o.Source.Name), o.ResourceVersion) {
			continue
		}
		stamp, ok := freshness.ParseStamp(note.Stamp)
		current, carried := wk.Restarter.Current(w)
		if !ok || !carried || !current.Equal(stamp) || stamp.Before(o.LastWrite) || stamp.After(now) {
			continue
		}
		if earliest.IsZero() || stamp.Before(earliest) {
			earliest = stamp
		}
	}
	return earliest, !earliest.IsZero()
}
