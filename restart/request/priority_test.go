package request

import (
	"context"
	"testing"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func TestRolloutEventsQueueBehindNewWork(t *testing.T) {
	// The KickRequest controller's own queue (it takes turns between
	// namespaces, and keeps priorities).
	q := namespaceTurns(nil, nil, logr.Discard())("test", nil).(priorityqueue.PriorityQueue[reconcile.Request])
	defer q.ShutDown()
	tracking := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "shop", Name: "deployment-web"}}
	fresh := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "shop", Name: "deployment-api"}}

	h := lowPriority(handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{tracking}
	}))
	old := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", ResourceVersion: "1"}}
	updated := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", ResourceVersion: "2"}}
	h.Update(context.Background(), event.UpdateEvent{ObjectOld: old, ObjectNew: updated}, q)
	q.Add(fresh)

	for i, want := range []reconcile.Request{fresh, tracking} {
		got, priority, _ := q.GetWithPriority()
		if got != want {
			t.Fatalf("item %d: got %v (priority %d), want %v", i, got, priority, want)
		}
		q.Done(got)
	}
}
