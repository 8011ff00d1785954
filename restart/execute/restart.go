package execute

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kick-operator/kick/restart/discovery"
	"github.com/kick-operator/kick/restart/freshness"
)

// Stamp is the restart time to write for a restart issued at now that must
// supersede every change up to latestChange: never earlier than just after
// latestChange, so the new rollout is provably newer even if the manager's
// clock lags the API server's.
func Stamp(now, latestChange time.Time) time.Time {
	if !latestChange.IsZero() && !now.After(latestChange) {
		return latestChange.Add(time.Nanosecond)
	}
	return now
}

// Restart stamps the workload's pod template with the restartedAt
// annotation, which makes the workload controller roll out new Pods. It is
// the only write KICK makes to a workload.
//
// The write is conditional on what obj (usually the cached copy) shows, so a
// decision taken on a stale copy cannot restart twice: when obj carries a
// stamp, a JSON patch first tests that the stored stamp is still that one;
// when it carries none, the merge patch names obj's resourceVersion. A
// manager whose cache lags (a new leader, say) gets a conflict and decides
// again once its cache shows the other restart, instead of restarting on
// top of it. Writing the stamp the workload already carries changes
// nothing.
func Restart(ctx context.Context, c client.Writer, obj client.Object, stamp string) error {
	return restart(ctx, c, obj, stamp, "", "")
}

// RestartWithNote is Restart that also sets the workload's annotation key
// to note in the same write, so the note exists exactly when the restart
// does. When obj carries a stamp but no annotations at all, the write is
// conditional on obj's resourceVersion instead (a JSON patch cannot add an
// annotation without knowing whether the map exists).
func RestartWithNote(ctx context.Context, c client.Writer, obj client.Object, stamp, key, note string) error {
	return restart(ctx, c, obj, stamp, key, note)
}

func restart(ctx context.Context, c client.Writer, obj client.Object, stamp, key, note string) error {
	old := CurrentStamp(obj)
	if old == stamp && key == "" {
		return nil
	}
	if old != "" && (key == "" || obj.GetAnnotations() != nil) {
		path := "/spec/template/metadata/annotations/" + jsonPointerEscape(freshness.RestartedAtAnnotation)
		ops := []map[string]string{
			{"op": "test", "path": path, "value": old},
			{"op": "replace", "path": path, "value": stamp},
		}
		if key != "" {
			// "add" replaces a member that exists.
			ops = append(ops, map[string]string{"op": "add", "path": "/metadata/annotations/" + jsonPointerEscape(key), "value": note})
		}
		data, err := json.Marshal(ops)
		if err != nil {
			return err
		}
		return c.Patch(ctx, obj, client.RawPatch(types.JSONPatchType, data))
	}
	meta := map[string]any{}
	if rv := obj.GetResourceVersion(); rv != "" {
		meta["resourceVersion"] = rv
	}
	if key != "" {
		meta["annotations"] = map[string]string{key: note}
	}
	patch := map[string]any{
		"metadata": meta,
		"spec": map[string]any{"template": map[string]any{"metadata": map[string]any{
			"annotations": map[string]string{freshness.RestartedAtAnnotation: stamp},
		}}},
	}
	data, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	return c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, data))
}

// jsonPointerEscape escapes one JSON Pointer reference token (RFC 6901).
func jsonPointerEscape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// CurrentStamp returns the restartedAt annotation of the workload's pod
// template, "" when unset.
func CurrentStamp(obj client.Object) string {
	tmpl, ok := discovery.PodTemplate(obj)
	if !ok {
		return ""
	}
	return tmpl.Annotations[freshness.RestartedAtAnnotation]
}
