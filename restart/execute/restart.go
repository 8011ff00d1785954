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
	if old := CurrentStamp(obj); old != "" {
		if old == stamp {
			return nil
		}
		path := "/spec/template/metadata/annotations/" + strings.ReplaceAll(strings.ReplaceAll(freshness.RestartedAtAnnotation, "~", "~0"), "/", "~1")
		data, err := json.Marshal([]map[string]string{
			{"op": "test", "path": path, "value": old},
			{"op": "replace", "path": path, "value": stamp},
		})
		if err != nil {
			return err
		}
		return c.Patch(ctx, obj, client.RawPatch(types.JSONPatchType, data))
	}
	meta := map[string]any{}
	if rv := obj.GetResourceVersion(); rv != "" {
		meta["resourceVersion"] = rv
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

// CurrentStamp returns the restartedAt annotation of the workload's pod
// template, "" when unset.
func CurrentStamp(obj client.Object) string {
	tmpl, ok := discovery.PodTemplate(obj)
	if !ok {
		return ""
	}
	return tmpl.Annotations[freshness.RestartedAtAnnotation]
}
