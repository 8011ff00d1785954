package api

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/restart/recorder"
)

// The recorder's Events, and the series patch of a repeat, as the real
// API server accepts them: a repeat within the window is counted into the
// first Event (series.count 3 after three), another note is another Event.
func TestRecorderEventsAndSeriesOnTheAPIServer(t *testing.T) {
	env := cluster.Get(t)
	ns := env.Namespace(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	b, err := recorder.New(recorder.Options{Client: cs.EventsV1(), Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	b.Start(ctx)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}
	if err := env.Client.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	rec := b.For("kick-request")
	emit := func(note string) {
		rec.Eventf(cm, nil, corev1.EventTypeNormal, "KickStarted", "Executing", "%s", note)
	}
	emit("restarting deployment/web")
	series := func(want int32) func() (bool, error) {
		return func() (bool, error) {
			l, err := cs.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err
			}
			var counts []string
			for _, ev := range l.Items {
				n := int32(1)
				if ev.Series != nil {
					n = ev.Series.Count
				}
				counts = append(counts, fmt.Sprintf("%q x%d", ev.Note, n))
				if ev.Note == "restarting deployment/web" && n == want && ev.ReportingController == "kick-request" {
					return true, nil
				}
			}
			return false, fmt.Errorf("events: %v", counts)
		}
	}
	cluster.Eventually(t, 30*time.Second, "the first Event", series(1))
	emit("restarting deployment/web")
	emit("restarting deployment/web")
	cluster.Eventually(t, 30*time.Second, "a series of 3 on the first Event", series(3))
	emit("restarting deployment/api")
	cluster.Eventually(t, 30*time.Second, "another note as its own Event", func() (bool, error) {
		l, err := cs.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		return len(l.Items) == 2, fmt.Errorf("%d Events, want 2", len(l.Items))
	})
}
