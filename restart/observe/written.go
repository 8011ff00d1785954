package observe

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
)

// ownWrites remembers the records this process wrote until its cache shows
// them. A reconcile right after a write (the source changed again, or only
// its labels did) then classifies against what was written, not against the
// cache's older copy: it neither repeats the write only to have it refused
// as a conflict, nor announces a change that was already recorded. The
// manager is the only writer of records; a copy that turns out stale (a
// conflict) is dropped and the cache read again.
type ownWrites struct {
	mu sync.Mutex
	m  map[types.NamespacedName]*kickv1alpha1.SourceObservation
}

// wrote remembers rec as the API server returned it from a write.
func (w *ownWrites) wrote(rec *kickv1alpha1.SourceObservation) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[types.NamespacedName]*kickv1alpha1.SourceObservation{}
	}
	w.m[types.NamespacedName{Namespace: rec.Namespace, Name: rec.Name}] = rec
}

// newest returns the record to classify against: the one this process last
// wrote when the cache does not show it yet, else cached (nil: none).
func (w *ownWrites) newest(key types.NamespacedName, cached *kickv1alpha1.SourceObservation) *kickv1alpha1.SourceObservation {
	w.mu.Lock()
	defer w.mu.Unlock()
	own, ok := w.m[key]
	switch {
	case !ok:
		return cached
	case cached != nil && cached.ResourceVersion == own.ResourceVersion:
		delete(w.m, key)
		return cached
	}
	return own.DeepCopy()
}

// cacheSaw forgets a remembered write once the cache holds that version.
func (w *ownWrites) cacheSaw(rec *kickv1alpha1.SourceObservation) {
	key := types.NamespacedName{Namespace: rec.Namespace, Name: rec.Name}
	w.mu.Lock()
	defer w.mu.Unlock()
	if own, ok := w.m[key]; ok && own.ResourceVersion == rec.ResourceVersion {
		delete(w.m, key)
	}
}

// forget drops what is remembered of a record (deleted, or refused a write).
func (w *ownWrites) forget(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.m, key)
}

// len is the number of writes the cache does not show yet.
func (w *ownWrites) len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.m)
}
