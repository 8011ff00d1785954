package request

import (
	"context"
	"errors"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kick-operator/kick/restart/inflight"
)

// TestRestartWaitsForItsWorkloadsRecords: a restart waits while the record
// of a source its workload consumes is being written, and only for those.
func TestRestartWaitsForItsWorkloadsRecords(t *testing.T) {
	web := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}}
	web.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "db", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "db"}}}}
	records := &inflight.Records{}

	other := records.Begin(inflight.Source{Namespace: "shop", Kind: "Secret", Name: "unrelated"}, "7")
	defer other(true)
	if err := waitForRecords(context.Background(), records, web); err != nil {
		t.Fatalf("a write of a source web does not consume held it: %v", err)
	}

	end := records.Begin(inflight.Source{Namespace: "shop", Kind: "Secret", Name: "db"}, "7")
	// Still waiting when its context is cancelled (whenever the goroutine
	// runs): a restart that went ahead on its own returns nil instead.
	ctx, cancel := context.WithCancel(context.Background())
	held := make(chan error, 1)
	go func() { held <- waitForRecords(ctx, records, web) }()
	cancel()
	if err := <-held; !errors.Is(err, context.Canceled) {
		t.Fatalf("the restart went ahead (%v) while its Secret's record was being written", err)
	}
	done := make(chan error, 1)
	go func() { done <- waitForRecords(context.Background(), records, web) }()
	end(true)
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	records.Begin(inflight.Source{Namespace: "shop", Kind: "Secret", Name: "db"}, "7")(false)
	if err := waitForRecords(context.Background(), records, web); !errors.Is(err, inflight.ErrNotRecorded) {
		t.Fatalf("after a failed write of its record: %v", err)
	}
}
