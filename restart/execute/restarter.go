package execute

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kick-operator/kick/restart/freshness"
)

// Restarter is how one workload kind is restarted: which value to write,
// where it is read back from, and the patch that writes it.
type Restarter interface {
	// Stamp returns the restart time and the value to write for a restart
	// issued at now that must supersede every change up to latestChange
	// (zero: no known change).
	Stamp(now, latestChange time.Time) (time.Time, string)
	// Current returns the restart time the workload carries, false when
	// it carries none (or an unparseable one).
	Current(obj client.Object) (time.Time, bool)
	// Apply writes value to the workload. Writing the value it already
	// carries changes nothing.
	Apply(ctx context.Context, c client.Writer, obj client.Object, value string) error
}

// PodTemplate restarts Deployments, StatefulSets and DaemonSets through
// the restartedAt pod-template annotation (like `kubectl rollout restart`),
// stamped to the nanosecond.
type PodTemplate struct{}

// Stamp implements Restarter: see the package function Stamp.
func (PodTemplate) Stamp(now, latestChange time.Time) (time.Time, string) {
	t := Stamp(now, latestChange)
	return t, freshness.FormatStamp(t)
}

// Current implements Restarter.
func (PodTemplate) Current(obj client.Object) (time.Time, bool) {
	return freshness.ParseStamp(CurrentStamp(obj))
}

// Apply implements Restarter: see Restart.
func (PodTemplate) Apply(ctx context.Context, c client.Writer, obj client.Object, value string) error {
	return Restart(ctx, c, obj, value)
}

// ApplyWithNote implements Noter: see RestartWithNote.
func (PodTemplate) ApplyWithNote(ctx context.Context, c client.Writer, obj client.Object, value, key, note string) error {
	return RestartWithNote(ctx, c, obj, value, key, note)
}

// Noter is a Restarter that can set an annotation of the workload in the
// same write as the restart.
type Noter interface {
	ApplyWithNote(ctx context.Context, c client.Writer, obj client.Object, value, key, note string) error
}

// RestartAtHolder is a workload restarted through spec.restartAt (an Argo
// Rollout).
type RestartAtHolder interface {
	client.Object
	// RestartAt returns spec.restartAt, nil when unset.
	RestartAt() *metav1.Time
}

// RestartAt restarts Argo Rollouts through spec.restartAt: the Rollouts
// controller replaces, within the rollout's availability limits and without
// a new revision or its canary/blue-green steps, every pod created before
// that time, then records it in status.restartedAt. The pod template is
// never touched.
type RestartAt struct{}

// Stamp implements Restarter: see WholeSecondStamp.
func (RestartAt) Stamp(now, latestChange time.Time) (time.Time, string) {
	t := WholeSecondStamp(now, latestChange)
	return t, t.Format(time.RFC3339)
}

// Current implements Restarter.
func (RestartAt) Current(obj client.Object) (time.Time, bool) {
	h, ok := obj.(RestartAtHolder)
	if !ok {
		return time.Time{}, false
	}
	t := h.RestartAt()
	if t == nil || t.IsZero() {
		return time.Time{}, false
	}
	return t.UTC(), true
}

// Apply implements Restarter: a merge patch of spec.restartAt alone.
func (RestartAt) Apply(ctx context.Context, c client.Writer, obj client.Object, value string) error {
	t, err := time.Parse(time.RFC3339, value)
	if err != nil || t.Nanosecond() != 0 {
		return fmt.Errorf("restartAt %q is not a whole-second RFC 3339 time", value)
	}
	data, err := json.Marshal(map[string]any{"spec": map[string]any{"restartAt": value}})
	if err != nil {
		return err
	}
	return c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, data))
}

// WholeSecondStamp is the restartAt time for a restart issued at now that
// must supersede every change up to latestChange: the first whole second
// not earlier than either.
//
// restartAt is stored to the second, and the Rollouts controller replaces
// the pods created before it (pod creation times are whole seconds too), so
// rounding up is what makes the restart provably newer than the change: a
// pod created in the same second as the change, but before it, is replaced.
//
// It is not earlier than now, although replacing the pods created before
// the change would suffice, because KICK reads the restart time back as the
// start of the rollout it follows: the rollout timeout and
// restart.minInterval count from it, and a restart answering a change that
// waited hours for a schedule window must not start out as hours late. It
// also keeps a manual request (whose change is the moment it was seen) a
// real restart. At most one second in the future, it merely delays the
// Rollouts controller, which waits for that time, by less than a second.
func WholeSecondStamp(now, latestChange time.Time) time.Time {
	t := now
	if latestChange.After(t) {
		t = latestChange
	}
	t = t.UTC()
	if s := t.Truncate(time.Second); !s.Equal(t) {
		return s.Add(time.Second)
	}
	return t
}
