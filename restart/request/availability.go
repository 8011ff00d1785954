package request

import (
	"context"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
)

// A Deployment records when it last became available (its Available
// condition's transition time), so a wave's bake restarts when a member
// dropped out of availability and came back, even between two looks.
// StatefulSets and DaemonSets record no such moment. For them the manager
// remembers it from their status events: the moment an update shows the
// workload available where the one before did not. That memory is a
// hint, lost on a restart of the manager (a member then bakes from its
// completion, as before), and bounded: availabilityMax workloads in all,
// availabilityNamespaceMax per namespace, each kept availabilityTTL, so a
// tenant whose workloads flap cannot push another namespace's out.
const (
	availabilityMax          = 1 << 16
	availabilityNamespaceMax = 1 << 12
	availabilityTTL          = 24 * time.Hour
)

// availabilityMemory is when StatefulSets and DaemonSets last became
// available again, by kind, namespace and name.
type availabilityMemory struct {
	mu          sync.Mutex
	at          map[WorkloadKey]time.Time
	inNamespace map[string]int
	// swept is when expire last ran: a full namespace sweeps the whole
	// memory at most once a minute, however fast its workloads flap.
	swept time.Time
}

// availableNow reports whether a StatefulSet or DaemonSet is available:
// its controller has seen its spec and every pod it wants is available.
// ok is false for other objects.
func availableNow(obj client.Object) (available, ok bool) {
	switch w := obj.(type) {
	case *appsv1.StatefulSet:
		want := int32(1)
		if w.Spec.Replicas != nil {
			want = *w.Spec.Replicas
		}
		return w.Status.ObservedGeneration >= w.Generation && w.Status.AvailableReplicas >= want, true
	case *appsv1.DaemonSet:
		s := w.Status
		return s.ObservedGeneration >= w.Generation && s.NumberUnavailable == 0 && s.NumberAvailable >= s.DesiredNumberScheduled, true
	}
	return false, false
}

func availabilityKey(obj client.Object) (WorkloadKey, bool) {
	var kind kickv1alpha1.TargetKind
	switch obj.(type) {
	case *appsv1.StatefulSet:
		kind = kickv1alpha1.TargetStatefulSet
	case *appsv1.DaemonSet:
		kind = kickv1alpha1.TargetDaemonSet
	default:
		return WorkloadKey{}, false
	}
	return WorkloadKey{Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName()}, true
}

// observe notes a status update of a StatefulSet or DaemonSet: one that
// makes it available again is remembered at now.
func (m *availabilityMemory) observe(old, updated client.Object, now time.Time) {
	key, ok := availabilityKey(updated)
	if !ok {
		return
	}
	was, _ := availableNow(old)
	is, _ := availableNow(updated)
	if was || !is {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.at == nil {
		m.at, m.inNamespace = map[WorkloadKey]time.Time{}, map[string]int{}
	}
	if _, known := m.at[key]; !known {
		if len(m.at) >= availabilityMax || m.inNamespace[key.Namespace] >= availabilityNamespaceMax {
			m.expire(now)
		}
		if len(m.at) >= availabilityMax || m.inNamespace[key.Namespace] >= availabilityNamespaceMax {
			return // the member bakes from its completion
		}
		m.inNamespace[key.Namespace]++
	}
	m.at[key] = now
}

// expire drops what is older than availabilityTTL; the caller holds mu.
func (m *availabilityMemory) expire(now time.Time) {
	if now.Sub(m.swept) < time.Minute {
		return
	}
	m.swept = now
	for k, t := range m.at {
		if now.Sub(t) > availabilityTTL {
			m.drop(k)
		}
	}
}

func (m *availabilityMemory) drop(k WorkloadKey) {
	delete(m.at, k)
	if m.inNamespace[k.Namespace]--; m.inNamespace[k.Namespace] <= 0 {
		delete(m.inNamespace, k.Namespace)
	}
}

// forget drops a deleted workload.
func (m *availabilityMemory) forget(obj client.Object) {
	key, ok := availabilityKey(obj)
	if !ok {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, known := m.at[key]; known {
		m.drop(key)
	}
}

// since is when the StatefulSet or DaemonSet obj last became available
// again as this process saw it; zero when it is not available now, when
// nothing is remembered, and for other kinds.
func (m *availabilityMemory) since(obj client.Object) time.Time {
	if m == nil {
		return time.Time{}
	}
	key, ok := availabilityKey(obj)
	if !ok {
		return time.Time{}
	}
	if is, _ := availableNow(obj); !is {
		return time.Time{}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.at[key]
}

// availabilityHandler feeds m from StatefulSet and DaemonSet events; it
// queues nothing.
func availabilityHandler(m *availabilityMemory, now func() time.Time) handler.EventHandler {
	return handler.Funcs{
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, _ queue) {
			m.observe(e.ObjectOld, e.ObjectNew, now())
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, _ queue) {
			m.forget(e.Object)
		},
	}
}
