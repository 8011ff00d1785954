package pipeline

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/integration/fixture"
	"github.com/kick-operator/kick/restart/freshness"
)

// TestFutureChangeTimeIsBounded plays a tenant (or a CI runner with a
// clock far ahead) that writes a change annotation in the year 9999. KICK
// counts it as a change at its own "now", says so in the status, and the
// workload's restart stamp stays in the present, so the next Secret
// rotation still restarts it.
func TestFutureChangeTimeIsBounded(t *testing.T) {
	f := fixture.Setup(t)
	f.Policy("all", selectAll+"\nrestart: {minInterval: 0s}")
	f.WebWithSecret()
	f.Create(&kickv1alpha1.KickRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "from-the-future",
			Annotations: map[string]string{kickv1alpha1.ChangeAnnotation: "9999-12-31T00:00:00Z"}},
		Spec: kickv1alpha1.KickRequestSpec{TargetRef: kickv1alpha1.TargetRef{Kind: kickv1alpha1.TargetDeployment, Name: "web"}},
	})
	kr := f.WaitPhase("from-the-future", kickv1alpha1.PhaseSucceeded, 60*time.Second)
	c := meta.FindStatusCondition(kr.Status.Conditions, kickv1alpha1.ConditionChangeTimeBounded)
	if c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("no ChangeTimeBounded condition: %+v", kr.Status.Conditions)
	}
	if v := kr.Annotations[kickv1alpha1.ChangeAnnotation]; v == "9999-12-31T00:00:00Z" {
		t.Fatal("the future change annotation was kept")
	}
	stamp, ok := freshness.ParseStamp(f.RestartStamp("web"))
	if !ok || stamp.After(time.Now().Add(time.Minute)) {
		t.Fatalf("restart stamp %s lies in the future", f.RestartStamp("web"))
	}

	// The next rotation still restarts web (through the finished request,
	// which it reopens).
	f.SetSecret("db", map[string]string{"password": "bravo"})
	f.WaitReplicaSets("web", 3)
}

// TestSquattedRequestNameIsNotTrusted plays a tenant who pre-creates the
// request name KICK would use for web ("deployment-web"), pointed at
// another workload. KICK must neither hand web's change to that request
// (which would restart the other workload) nor lose it: web is restarted
// through a request of its own.
func TestSquattedRequestNameIsNotTrusted(t *testing.T) {
	f := fixture.Setup(t)
	f.Policy("web-only", `discovery: {workloadSelector: {matchLabels: {app: web}}}`)
	f.WebWithSecret()
	f.Deployment("other", 1, fixture.PodSpec("db"))
	f.WaitAvailable("other")
	kickRequest(f, "deployment-web", kickv1alpha1.TargetDeployment, "other", "squatting")
	squat := f.WaitPhase("deployment-web", kickv1alpha1.PhaseFailed, 30*time.Second)

	f.SetSecret("db", map[string]string{"password": "bravo"})
	var mine kickv1alpha1.KickRequest
	cluster.Eventually(t, 60*time.Second, "web restarted through a request of its own", func() (bool, error) {
		var list kickv1alpha1.KickRequestList
		if err := f.Env.Client.List(f.Ctx, &list, client.InNamespace(f.NS)); err != nil {
			return false, err
		}
		for _, kr := range list.Items {
			if kr.Name != "deployment-web" && kr.Spec.TargetRef.Name == "web" && kr.Status.Phase == kickv1alpha1.PhaseSucceeded {
				mine = kr
				return true, nil
			}
		}
		return false, fmt.Errorf("%d requests, none for web has succeeded", len(list.Items))
	})
	if mine.GenerateName != "deployment-web-" {
		t.Fatalf("KICK's request is named %q (generateName %q)", mine.Name, mine.GenerateName)
	}
	if got := f.ReplicaSets("web"); len(got) != 2 {
		t.Fatalf("want exactly one restart of web, ReplicaSets %v", got)
	}
	if got := f.ReplicaSets("other"); len(got) != 1 {
		t.Fatalf("the squatted request restarted other: %v", got)
	}
	after, err := f.Request("deployment-web")
	if err != nil {
		t.Fatal(err)
	}
	if after.Annotations[kickv1alpha1.ChangeAnnotation] != squat.Annotations[kickv1alpha1.ChangeAnnotation] || after.Status.Phase != kickv1alpha1.PhaseFailed {
		t.Fatalf("the squatted request was touched: annotation %q -> %q, phase %s",
			squat.Annotations[kickv1alpha1.ChangeAnnotation], after.Annotations[kickv1alpha1.ChangeAnnotation], after.Status.Phase)
	}
}
