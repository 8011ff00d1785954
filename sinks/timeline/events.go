package timeline

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
)

// The manager reads Events (to show them on the lanes).
// +kubebuilder:rbac:groups="",resources=events,verbs=get;list;watch

// eventSelector is the Events the timeline watches: those about objects
// outside the core group (so no Pod or Node Events: workloads, KickRequests
// and the like) other than ReplicaSets (their pod creations and deletions,
// the bulk of the rest, are on no lane). A field selector cannot say "one
// of these kinds", so it leaves out what it can; fromEvent picks out the
// Events of managed workloads and KickRequests.
func eventSelector() fields.Selector {
	return fields.AndSelectors(
		fields.OneTermNotEqualSelector("involvedObject.apiVersion", "v1"),
		fields.OneTermNotEqualSelector("involvedObject.kind", "ReplicaSet"),
	)
}

// EventSource lists and watches the Events the timeline may show, through
// cs (see Options.Events).
func EventSource(cs kubernetes.Interface) toolscache.ListerWatcher {
	return toolscache.NewFilteredListWatchFromClient(cs.CoreV1().RESTClient(), "events", metav1.NamespaceAll,
		func(o *metav1.ListOptions) { o.FieldSelector = eventSelector().String() })
}

// watchEvents adds the Events of managed workloads and KickRequests, those
// the API server still holds and each new or updated one, to the history
// until ctx ends. Nothing else keeps them: a reflector feeds each Event
// straight to the history (bounded, see History) and forgets it, where an
// informer would hold every matching Event of the cluster on every replica.
func (s *Server) watchEvents(ctx context.Context) {
	if s.opts.Events == nil {
		return
	}
	feed := eventFeed(func(obj any) {
		if ev, ok := obj.(*corev1.Event); ok {
			if e, ok := s.cat.fromEvent(ctx, ev); ok {
				s.opts.History.Add(e)
			}
		}
	})
	go toolscache.NewReflectorWithOptions(s.opts.Events, &corev1.Event{}, feed, toolscache.ReflectorOptions{Name: "timeline-events"}).Run(ctx.Done())
}

// eventFeed is a reflector store that keeps nothing: it hands every listed,
// added or updated object to the function.
type eventFeed func(obj any)

func (f eventFeed) Add(obj any) error    { f(obj); return nil }
func (f eventFeed) Update(obj any) error { f(obj); return nil }
func (f eventFeed) Delete(any) error     { return nil }
func (f eventFeed) Resync() error        { return nil }
func (f eventFeed) Replace(list []any, _ string) error {
	for _, obj := range list {
		f(obj)
	}
	return nil
}
