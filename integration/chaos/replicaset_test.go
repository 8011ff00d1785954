package chaos

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/integration/fixture"
	"github.com/kick-operator/kick/restart/freshness"
)

// TestReplicaSetSeenLateWakesItsRequest: the manager sees a Deployment's
// rollout complete before it sees the ReplicaSet that runs the new
// template (its ReplicaSet watch reconnected later than its Deployment
// watch, as after an API server outage). The request, which judges the
// rollout from both, must finish as soon as the ReplicaSet shows up, not at
// its next poll a minute later.
//
// The controller-manager is stopped so that the test orders the two: it
// writes the Deployment's finished rollout status itself, waits until the
// request reports that no ReplicaSet matches, and only then creates the
// ReplicaSet, as the controller-manager would have.
func TestReplicaSetSeenLateWakesItsRequest(t *testing.T) {
	f := fixture.Setup(t)
	f.Policy("all", policy)
	f.WebWithSecret()

	stopKCM(t, f)
	f.SetSecret("db", map[string]string{"password": "beta"})
	kr := f.WaitPhase("deployment-web", kickv1alpha1.PhaseExecuting, 60*time.Second)
	stamp := kr.Status.CurrentRollout.RestartedAt

	var d appsv1.Deployment
	if err := f.Env.Client.Get(f.Ctx, client.ObjectKey{Namespace: f.NS, Name: "web"}, &d); err != nil {
		t.Fatal(err)
	}
	if got := d.Spec.Template.Annotations[freshness.RestartedAtAnnotation]; got != stamp {
		t.Fatalf("web carries restart stamp %q, the request follows %q", got, stamp)
	}
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}
	if err := f.Env.Client.Status().Update(f.Ctx, &d); err != nil {
		t.Fatal(err)
	}
	cluster.Eventually(t, 30*time.Second, "the request to find no ReplicaSet for the finished rollout", func() (bool, error) {
		kr, err := f.Request("deployment-web")
		if err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(kr.Status.Conditions, kickv1alpha1.ConditionRolloutComplete)
		return c != nil && c.Reason == freshness.NoMatchingReplicaSet, fmt.Errorf("phase %s, condition %+v", kr.Status.Phase, c)
	})

	// The ReplicaSet the controller-manager would have created for the
	// restarted template.
	createReplicaSetOf(f, &d, "late")
	// Well within the request's poll (a minute): only the ReplicaSet's own
	// event can wake it this soon.
	f.WaitPhase("deployment-web", kickv1alpha1.PhaseSucceeded, 20*time.Second)
}

// createReplicaSetOf creates the ReplicaSet the controller-manager would
// create for d's current template, named after d and hash.
func createReplicaSetOf(f *fixture.F, d *appsv1.Deployment, hash string) {
	f.T.Helper()
	template := *d.Spec.Template.DeepCopy()
	template.Labels[appsv1.DefaultDeploymentUniqueLabelKey] = hash
	selector := d.Spec.Selector.DeepCopy()
	selector.MatchLabels[appsv1.DefaultDeploymentUniqueLabelKey] = hash
	f.Create(&appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: d.Name + "-" + hash, Labels: template.Labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(d, appsv1.SchemeGroupVersion.WithKind("Deployment"))}},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](1), Selector: selector, Template: template},
	})
}

// stopKCM stops the controller-manager until the test ends.
func stopKCM(t *testing.T, f *fixture.F) {
	t.Helper()
	const kcm = "kube-controller-manager"
	if err := f.Env.Cluster.StopComponent(kcm); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := f.Env.Cluster.StartComponent(ctx, kcm); err != nil {
			t.Errorf("start %s again: %v", kcm, err)
		}
	})
}
