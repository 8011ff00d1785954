package policy

import (
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
)

// countRefresh is how often a policy's status is written at most when only
// its blockedWorkloads count moves between two non-zero values. A capped
// fan-out changes the count at every slot hand-over; writing each one cost
// the fan-out about one write per restart for a number `kubectl get` shows
// and `kubectl kick explain` gives exactly. A wait that starts (0 to some)
// or ends (some to 0), and every other change, is written at once.
const countRefresh = 5 * time.Second

// countWait returns how long the write of want may wait (0: write now):
// only blockedWorkloads differs from the stored status, it stays above 0 on
// both sides, and this process wrote the policy's status less than
// countRefresh ago (lastWrite, zero when it has not).
func countWait(stored, want kickv1alpha1.KickPolicyStatus, lastWrite, now time.Time) time.Duration {
	if stored.BlockedWorkloads == 0 || want.BlockedWorkloads == 0 || lastWrite.IsZero() {
		return 0
	}
	stored.BlockedWorkloads = want.BlockedWorkloads
	if !equality.Semantic.DeepEqual(stored, want) {
		return 0
	}
	return max(countRefresh-now.Sub(lastWrite), 0)
}

// wroteAt and lastWriteOf keep when this process last wrote each policy's
// status (forget drops it with the announcement).
func (r *Reconciler) wroteAt(key types.NamespacedName, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.written == nil {
		r.written = map[types.NamespacedName]time.Time{}
	}
	r.written[key] = at
}

func (r *Reconciler) lastWriteOf(key types.NamespacedName) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.written[key]
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}
