package execute

import (
	"context"
	"encoding/json"
	"time"

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
// annotation (a merge patch of that one key), which makes the workload
// controller roll out new Pods. It is the only write KICK makes to a
// workload; writing the same stamp twice is a no-op.
func Restart(ctx context.Context, c client.Writer, obj client.Object, stamp string) error {
	patch := map[string]any{"spec": map[string]any{"template": map[string]any{"metadata": map[string]any{
		"annotations": map[string]string{freshness.RestartedAtAnnotation: stamp},
	}}}}
	data, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	return c.Patch(ctx, obj, client.RawPatch("application/merge-patch+json", data))
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
