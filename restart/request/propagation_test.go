package request

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/freshness"
	"github.com/kick-operator/kick/restart/inflight"
)

// deploymentStamped is the Deployment shop/name as the cache would show it,
// carrying the restart stamp (none when stamp is zero).
func deploymentStamped(name string, stamp time.Time) *appsv1.Deployment {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name}}
	if !stamp.IsZero() {
		d.Spec.Template.Annotations = map[string]string{freshness.RestartedAtAnnotation: freshness.FormatStamp(stamp)}
	}
	return d
}

// stillExpected reports whether the record of a change still waits for the
// restarter's look at key: AwaitLooks returns at once for a workload looked
// at, and only when its context ends for one still expected.
func stillExpected(records *inflight.Records, key string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	records.AwaitLooks(ctx, []string{key}, time.Hour)
	return ctx.Err() != nil
}

// TestARestartIsLookedAtOnceTheCacheShowsIt: the record of a change waits
// for the restart of its consumer to reach the watchers, seen as the cache
// receiving the workload with the restart's stamp (or a later one); a
// version without it, an older stamp or another workload do not end the
// wait. Within a fan-out, or without the watch, the look ends with the
// patch, as before.
func TestARestartIsLookedAtOnceTheCacheShowsIt(t *testing.T) {
	stamp := time.Date(2026, 12, 5, 22, 0, 0, 123456789, time.UTC)
	value := freshness.FormatStamp(stamp)
	web := WorkloadKey{Kind: kickv1alpha1.TargetDeployment, Namespace: "shop", Name: "web"}

	records := &inflight.Records{}
	now := stamp
	d := &Driver{Records: records, watchesRestarts: true, Now: func() time.Time { return now }}
	records.Expect([]string{web.lookKey()})
	d.lookedOnceShown(web, value)
	if !stillExpected(records, web.lookKey()) {
		t.Fatal("the look ended when the patch returned, before the cache showed the restart")
	}
	d.restartShown(deploymentStamped("web", time.Time{}))
	d.restartShown(deploymentStamped("web", stamp.Add(-time.Second)))
	d.restartShown(deploymentStamped("api", stamp))
	if !stillExpected(records, web.lookKey()) {
		t.Fatal("the look ended on a version without the restart, or on another workload")
	}
	d.restartShown(deploymentStamped("web", stamp))
	if stillExpected(records, web.lookKey()) {
		t.Fatal("the cache showed the restart and the record still waits")
	}

	// A later restart shown (someone restarted it again meanwhile) counts.
	records.Expect([]string{web.lookKey()})
	d.lookedOnceShown(web, value)
	d.restartShown(deploymentStamped("web", stamp.Add(time.Minute)))
	if stillExpected(records, web.lookKey()) {
		t.Fatal("a later restart shown did not end the wait")
	}

	// Within a fan-out (another restart 100 ms ago) the look ends with
	// the patch: the watchers lag behind a busy API server, and each
	// record would wait its full bound.
	records.Expect([]string{web.lookKey()})
	d.lastRestart.Store(now.Add(-100 * time.Millisecond).UnixNano())
	d.lookedOnceShown(web, value)
	if stillExpected(records, web.lookKey()) {
		t.Fatal("a restart within a fan-out held its record until the cache showed it")
	}
	// Once the fan-out is over, the wait is back.
	records.Expect([]string{web.lookKey()})
	now = now.Add(fanOutQuiet)
	d.lookedOnceShown(web, value)
	if !stillExpected(records, web.lookKey()) {
		t.Fatal("a restart fanOutQuiet after the last one did not wait for the cache")
	}
	d.restartShown(deploymentStamped("web", stamp))

	// No watch: the look ends with the patch.
	records.Expect([]string{web.lookKey()})
	(&Driver{Records: records, Now: func() time.Time { return now }}).lookedOnceShown(web, value)
	if stillExpected(records, web.lookKey()) {
		t.Fatal("without a watch on the workloads the record waits for nothing that will come")
	}
}

// TestAnAwaitedRestartIsForgotten: a restart seen once is not seen again,
// and forget drops one not yet seen.
func TestAnAwaitedRestartIsForgotten(t *testing.T) {
	var p propagation
	at := time.Unix(100, 0)
	p.expect("shop/Deployment/web", at)
	if p.shown("shop/Deployment/web", at, false) {
		t.Fatal("a workload carrying no stamp showed the restart")
	}
	if !p.shown("shop/Deployment/web", at, true) || p.shown("shop/Deployment/web", at, true) {
		t.Fatal("the restart was not shown exactly once")
	}
	p.expect("shop/Deployment/web", at)
	p.forget("shop/Deployment/web")
	if p.shown("shop/Deployment/web", at, true) || len(p.pending) != 0 {
		t.Fatal("a forgotten restart is still awaited")
	}
}
