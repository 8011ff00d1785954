package execute

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func TestStampIsNeverOlderThanTheChange(t *testing.T) {
	change := time.Date(2026, 11, 29, 12, 0, 0, 500, time.UTC)
	for _, tc := range []struct {
		name string
		now  time.Time
		want time.Time
	}{
		{"clock ahead of the change", change.Add(time.Second), change.Add(time.Second)},
		{"clock equal to the change", change, change.Add(time.Nanosecond)},
		{"clock behind the change (skew)", change.Add(-time.Second), change.Add(time.Nanosecond)},
	} {
		if got := Stamp(tc.now, change); !got.Equal(tc.want) {
			t.Errorf("%s: Stamp = %s, want %s", tc.name, got, tc.want)
		}
	}
	now := time.Now()
	if got := Stamp(now, time.Time{}); !got.Equal(now) {
		t.Errorf("no known change: Stamp = %s, want now", got)
	}
}

// TestRestartIsConditionalOnTheStampItSaw: a restart decided on a copy
// that does not show a restart made meanwhile (a lagging cache after a
// leader change) is refused by the API server instead of restarting twice.
func TestRestartIsConditionalOnTheStampItSaw(t *testing.T) {
	c, get := oneDeployment(t, nil)
	ctx := context.Background()

	stale := get() // no stamp yet
	if err := Restart(ctx, c, get(), "2026-01-01T00:00:01.000000000Z"); err != nil {
		t.Fatalf("first restart: %v", err)
	}
	if err := Restart(ctx, c, stale, "2026-01-01T00:00:02.000000000Z"); err == nil {
		t.Fatal("a restart decided on a copy from before the first one was accepted")
	}
	seen := get() // carries the first stamp
	if err := Restart(ctx, c, get(), "2026-01-01T00:00:03.000000000Z"); err != nil {
		t.Fatalf("second restart: %v", err)
	}
	if err := Restart(ctx, c, seen, "2026-01-01T00:00:04.000000000Z"); err == nil {
		t.Fatal("a restart decided on a copy showing an older stamp was accepted")
	}
	if got := CurrentStamp(get()); got != "2026-01-01T00:00:03.000000000Z" {
		t.Fatalf("stamp = %s, want the second restart's", got)
	}
	// Writing the stamp the workload carries is a no-op, even from an old copy.
	if err := Restart(ctx, c, get(), "2026-01-01T00:00:03.000000000Z"); err != nil {
		t.Fatalf("same stamp again: %v", err)
	}
}

// TestRestartWithNoteWritesBothOrNothing: the note lands in the same write
// as the stamp, keeps the workload's other annotations, and a copy that
// does not show the last restart is refused with its note.
func TestRestartWithNoteWritesBothOrNothing(t *testing.T) {
	const key = "kick.corewire.io/restarted-for"
	for _, tc := range []struct {
		name        string
		annotations map[string]string
	}{
		{"with annotations", map[string]string{"deployment.kubernetes.io/revision": "3"}},
		{"without annotations", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, get := oneDeployment(t, tc.annotations)
			ctx := context.Background()
			stale := get()
			if err := RestartWithNote(ctx, c, get(), "2026-01-01T00:00:01Z", key, "first"); err != nil {
				t.Fatalf("first restart: %v", err)
			}
			if err := RestartWithNote(ctx, c, stale, "2026-01-01T00:00:02Z", key, "stale"); err == nil {
				t.Fatal("a restart decided on a copy from before the first one was accepted")
			}
			seen := get()
			if err := RestartWithNote(ctx, c, get(), "2026-01-01T00:00:03Z", key, "second"); err != nil {
				t.Fatalf("second restart: %v", err)
			}
			if err := RestartWithNote(ctx, c, seen, "2026-01-01T00:00:04Z", key, "stale"); err == nil {
				t.Fatal("a restart decided on a copy showing an older stamp was accepted")
			}
			d := get()
			if CurrentStamp(d) != "2026-01-01T00:00:03Z" || d.Annotations[key] != "second" {
				t.Fatalf("stamp %s, note %q; want the second restart's", CurrentStamp(d), d.Annotations[key])
			}
			for k, v := range tc.annotations {
				if d.Annotations[k] != v {
					t.Errorf("annotation %s lost: %v", k, d.Annotations)
				}
			}
		})
	}
}

// oneDeployment returns a client holding the Deployment ns/web with the
// given annotations, and a reader of its current copy.
func oneDeployment(t *testing.T, annotations map[string]string) (client.Client, func() *appsv1.Deployment) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", Annotations: annotations}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(dep).Build()
	return c, func() *appsv1.Deployment {
		var d appsv1.Deployment
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "web"}, &d); err != nil {
			t.Fatal(err)
		}
		return &d
	}
}
