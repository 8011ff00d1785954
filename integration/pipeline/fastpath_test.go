package pipeline

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1 "k8s.io/api/core/v1"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/integration/fixture"
	"github.com/kick-operator/kick/restart/assess"
	"github.com/kick-operator/kick/restart/evidence"
	"github.com/kick-operator/kick/restart/freshness"
)

// TestImmediateRestartWritesLittle: an ungated restart takes the driver's
// path: the request names the stamp the workload got, and a rollout that
// completes quickly is recorded in one status write (Pending → Succeeded).
func TestImmediateRestartWritesLittle(t *testing.T) {
	f := fixture.Setup(t)
	f.Policy("all", selectAll)
	f.WebWithSecret()
	f.SetSecret("db", map[string]string{"password": "bravo"})
	kr := f.WaitPhase("deployment-web", kickv1alpha1.PhaseSucceeded, 60*time.Second)
	stamp := f.RestartStamp("web")
	if got := kr.Annotations[kickv1alpha1.RestartAnnotation]; got == "" || got != stamp {
		t.Fatalf("request names stamp %q, the workload carries %q", got, stamp)
	}
	if kr.Status.RestartCount != 1 || kr.Status.CurrentRollout == nil || kr.Status.CurrentRollout.RestartedAt != stamp {
		t.Fatalf("request did not record the driver's restart: %+v", kr.Status)
	}
	// The restart was written ahead of its bookkeeping: it carries the
	// note that speaks for it after a crash.
	var web appsv1.Deployment
	if err := f.Env.Client.Get(f.Ctx, client.ObjectKey{Namespace: f.NS, Name: "web"}, &web); err != nil {
		t.Fatal(err)
	}
	note, err := evidence.Parse(web.Annotations[kickv1alpha1.RestartedForAnnotation])
	if err != nil || note.Stamp != stamp || note.Change.IsZero() {
		t.Fatalf("restarted-for note %q (%v), want one for stamp %s", web.Annotations[kickv1alpha1.RestartedForAnnotation], err, stamp)
	}
	f.WaitReplicaSets("web", 2)
}

// changedWhileStopped sets up web consuming db, waits for db's record,
// kills the manager and changes db: the change is not recorded. It returns
// the resourceVersion of the recorded (old) content.
func changedWhileStopped(t *testing.T) (*fixture.F, string) {
	t.Helper()
	f := fixture.Setup(t)
	f.Policy("all", selectAll)
	f.WebWithSecret()
	baseline := f.WaitObservation("db").ResourceVersion
	f.Mgr.Kill()
	f.SetSecret("db", map[string]string{"password": "bravo"})
	return f, baseline
}

// crashedAfterTheRestart builds what a manager leaves when it dies right
// after the driver's restart of web for db's new content, before the
// record of the change and the request are written: the record still holds
// the old content, no request exists, and web carries the given note (the
// driver's names db at the new version) and, when restarted is set, the
// stamp (which rolls web out once).
func crashedAfterTheRestart(t *testing.T, restarted bool, note func(rv, stamp string) string) (*fixture.F, string) {
	f, baseline := changedWhileStopped(t)
	var db corev1.Secret
	if err := f.Env.Client.Get(f.Ctx, client.ObjectKey{Namespace: f.NS, Name: "db"}, &db); err != nil {
		t.Fatal(err)
	}
	stamp := freshness.FormatStamp(time.Now())
	write := map[string]any{
		"metadata": map[string]any{"annotations": map[string]string{kickv1alpha1.RestartedForAnnotation: note(db.ResourceVersion, stamp)}},
	}
	if restarted {
		write["spec"] = map[string]any{"template": map[string]any{"metadata": map[string]any{
			"annotations": map[string]string{freshness.RestartedAtAnnotation: stamp}}}}
	}
	patch, err := json.Marshal(write)
	if err != nil {
		t.Fatal(err)
	}
	obj := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: f.NS, Name: "web"}}
	if err := f.Env.Client.Patch(f.Ctx, obj, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
	if rec := f.WaitObservation("db"); rec.ResourceVersion != baseline {
		t.Fatalf("the record changed while no manager ran")
	}
	f.Mgr = f.Env.StartManager(t, fixture.ManagerNamespace)
	return f, stamp
}

// TestCrashAfterTheRestartBeforeItsBookkeepingRestartsNoMore: the next
// manager finds db's new content unrecorded, but web's note shows a
// restart answered exactly that version: it dates the change to that
// restart, writes the missing request (which follows the rollout already
// running) and restarts nothing.
func TestCrashAfterTheRestartBeforeItsBookkeepingRestartsNoMore(t *testing.T) {
	f, stamp := crashedAfterTheRestart(t, true, func(rv, stamp string) string {
		return evidence.Note{Stamp: stamp, Change: time.Now().Add(-time.Millisecond),
			Sources: []evidence.Source{{Kind: "Secret", Name: "db", ResourceVersion: rv}}}.String()
	})
	kr := f.WaitPhase("deployment-web", kickv1alpha1.PhaseSucceeded, 60*time.Second)
	if kr.Annotations[kickv1alpha1.RestartAnnotation] != stamp || kr.Status.RestartCount != 1 ||
		kr.Status.CurrentRollout == nil || kr.Status.CurrentRollout.RestartedAt != stamp {
		t.Fatalf("the request does not record the restart of stamp %s: annotations %v, status %+v", stamp, kr.Annotations, kr.Status)
	}
	f.Barrier()
	if got := f.RestartStamp("web"); got != stamp {
		t.Fatalf("the new manager restarted web again: stamp %q, want %q", got, stamp)
	}
	rec := f.WaitObservation("db")
	if at, _ := freshness.ParseStamp(stamp); rec.Spec.LastRelevantChangeTime == nil || rec.Spec.LastRelevantChangeTime.After(at) {
		t.Fatalf("db's change is dated %v, after the restart that answered it (%s)", rec.Spec.LastRelevantChangeTime, stamp)
	}
	f.WaitReplicaSets("web", 2)
}

// TestAForgedRestartNoteHoldsNothingBack plays a tenant who writes a note
// naming db's new version on web, which nothing restarted for it (web
// does not carry the note's stamp): the note is ignored, no request is
// made up for it, and the next manager restarts web once.
func TestAForgedRestartNoteHoldsNothingBack(t *testing.T) {
	f, stamp := crashedAfterTheRestart(t, false, func(rv, stamp string) string {
		return evidence.Note{Stamp: stamp, Change: time.Now().Add(-time.Hour),
			Sources: []evidence.Source{{Kind: "Secret", Name: "db", ResourceVersion: rv}}}.String()
	})
	kr := f.WaitPhase("deployment-web", kickv1alpha1.PhaseSucceeded, 60*time.Second)
	if kr.Annotations[kickv1alpha1.RestartAnnotation] == stamp {
		t.Fatalf("a request was made up for the forged note's stamp %s", stamp)
	}
	restartedOnceByNewManager(t, f, stamp)
}

// The two moments a manager can die on the driver's path leave durable
// states that the next manager must finish with exactly one restart. The
// tests build those states by hand: a request held at a gate (so the
// change is recorded and the request exists), the manager killed, then
// the restart annotation written as the driver writes it, with and without
// the workload carrying that stamp.

func crashedDriverState(t *testing.T, patched bool) (*fixture.F, string) {
	f := fixture.Setup(t)
	f.Policy("all", selectAll+"\nsuspend: true")
	f.WebWithSecret()
	f.SetSecret("db", map[string]string{"password": "bravo"})
	kr := f.WaitPhase("deployment-web", kickv1alpha1.PhaseWaitingForGate, 60*time.Second)
	f.Mgr.Kill()

	change, ok := freshness.ParseStamp(kr.Annotations[kickv1alpha1.ChangeAnnotation])
	if !ok {
		change = time.Now()
	}
	value := freshness.FormatStamp(change.Add(time.Millisecond))
	ctx := context.Background()
	patch := client.MergeFrom(kr.DeepCopy())
	kr.Annotations[kickv1alpha1.RestartAnnotation] = value
	if err := f.Env.Client.Patch(ctx, kr, patch); err != nil {
		t.Fatal(err)
	}
	if patched {
		setRestartStamp(t, f, "web", value)
	}
	f.PatchPolicy("all", `{"spec":{"suspend":false}}`)
	f.Mgr = f.Env.StartManager(t, fixture.ManagerNamespace)
	return f, value
}

// TestCrashAfterTheDriversPatchRestartsNoMore: the workload carries the
// stamp the request names; the new manager follows that rollout.
func TestCrashAfterTheDriversPatchRestartsNoMore(t *testing.T) {
	f, value := crashedDriverState(t, true)
	kr := f.WaitPhase("deployment-web", kickv1alpha1.PhaseSucceeded, 60*time.Second)
	if got := f.RestartStamp("web"); got != value {
		t.Fatalf("the new manager restarted again: stamp %q, want the driver's %q", got, value)
	}
	if kr.Status.CurrentRollout == nil || kr.Status.CurrentRollout.RestartedAt != value || kr.Status.RestartCount != 1 {
		t.Fatalf("request did not follow the driver's restart: %+v", kr.Status)
	}
	f.Barrier()
	f.WaitReplicaSets("web", 2)
}

// TestCrashBeforeTheDriversPatchRestartsOnce: the request names a stamp the
// workload never got; the new manager restarts it the usual way, once.
func TestCrashBeforeTheDriversPatchRestartsOnce(t *testing.T) {
	f, value := crashedDriverState(t, false)
	restartedOnceByNewManager(t, f, value)
}

// restartedOnceByNewManager checks that web's request succeeded with one
// restart of the new manager's own (not the stamp value the crashed one
// named), and that nothing restarts it again; it returns the stamp.
func restartedOnceByNewManager(t *testing.T, f *fixture.F, value string) string {
	t.Helper()
	kr := f.WaitPhase("deployment-web", kickv1alpha1.PhaseSucceeded, 60*time.Second)
	got := f.RestartStamp("web")
	if got == "" || got == value {
		t.Fatalf("workload stamp %q: want a restart of the new manager's own", got)
	}
	if kr.Status.RestartCount != 1 {
		t.Fatalf("restartCount %d, want 1", kr.Status.RestartCount)
	}
	f.Barrier()
	f.WaitReplicaSets("web", 2)
	if again := f.RestartStamp("web"); again != got {
		t.Fatalf("restarted again: %q then %q", got, again)
	}
	return got
}

// setRestartStamp writes the restartedAt annotation as a restart would.
func setRestartStamp(t *testing.T, f *fixture.F, deployment, value string) {
	t.Helper()
	patch := []byte(`{"spec":{"template":{"metadata":{"annotations":{"` + freshness.RestartedAtAnnotation + `":"` + value + `"}}}}}`)
	obj := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: f.NS, Name: deployment}}
	if err := f.Env.Client.Patch(context.Background(), obj, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
}

// TestCrashBeforeTheChangeIsRecordedRestartsOnce: the driver writes its
// request while the observer still writes the record of the change. A
// manager that dies between the two leaves a request naming the change and
// a stamp, and a record from before the change. The next manager records
// the change again and restarts once: the request's stamp never reached the
// workload, and the new record dates the change before the new restart.
func TestCrashBeforeTheChangeIsRecordedRestartsOnce(t *testing.T) {
	f, baseline := changedWhileStopped(t)
	change := time.Now()
	value := freshness.FormatStamp(change.Add(time.Millisecond))
	f.Create(&kickv1alpha1.KickRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "deployment-web", Labels: map[string]string{kickv1alpha1.ManagedByLabel: kickv1alpha1.ManagedByKick},
			Annotations: map[string]string{
				kickv1alpha1.ChangeAnnotation:  assess.FormatChange(freshness.At(change)),
				kickv1alpha1.RestartAnnotation: value,
			}},
		Spec: kickv1alpha1.KickRequestSpec{TargetRef: kickv1alpha1.TargetRef{APIVersion: "apps/v1", Kind: kickv1alpha1.TargetDeployment, Name: "web"}},
	})
	if rec := f.WaitObservation("db"); rec.ResourceVersion != baseline {
		t.Fatalf("the record changed while no manager ran")
	}
	f.Mgr = f.Env.StartManager(t, fixture.ManagerNamespace)

	restartedOnceByNewManager(t, f, value)
}

// TestCrashBeforeTheRequestWritesItOnStart: the restart and the record of
// its change are durable, its request is not (the manager stopped between;
// staged by deleting the request while no manager runs). The next manager
// finds web's note naming a stamp that no request names, writes the
// request, which follows the rollout that ran, and restarts nothing.
func TestCrashBeforeTheRequestWritesItOnStart(t *testing.T) {
	f := fixture.Setup(t)
	f.Policy("all", selectAll)
	f.WebWithSecret()
	f.SetSecret("db", map[string]string{"password": "bravo"})
	f.WaitPhase("deployment-web", kickv1alpha1.PhaseSucceeded, 60*time.Second)
	stamp := f.RestartStamp("web")
	f.Mgr.Kill()
	kr := &kickv1alpha1.KickRequest{ObjectMeta: metav1.ObjectMeta{Namespace: f.NS, Name: "deployment-web"}}
	if err := f.Env.Client.Delete(f.Ctx, kr); err != nil {
		t.Fatal(err)
	}
	f.Mgr = f.Env.StartManager(t, fixture.ManagerNamespace)

	kr = f.WaitPhase("deployment-web", kickv1alpha1.PhaseSucceeded, 60*time.Second)
	if kr.Annotations[kickv1alpha1.RestartAnnotation] != stamp || kr.Status.RestartCount != 1 ||
		kr.Status.CurrentRollout == nil || kr.Status.CurrentRollout.RestartedAt != stamp {
		t.Fatalf("the request written on start does not record the restart of stamp %s: annotations %v, status %+v", stamp, kr.Annotations, kr.Status)
	}
	f.Barrier()
	if got := f.RestartStamp("web"); got != stamp {
		t.Fatalf("the new manager restarted web again: stamp %q, want %q", got, stamp)
	}
	f.WaitReplicaSets("web", 2)
}
