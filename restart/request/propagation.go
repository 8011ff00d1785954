package request

import (
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kick-operator/kick/restart/freshness"
	"github.com/kick-operator/kick/restart/inflight"
	"github.com/kick-operator/kick/restart/workload"
)

// propagation holds the restarts the driver applied at once until its
// cache shows them. A restart's patch returns before the API server has
// sent the restarted workload to its watchers (the workload's own
// controller, whoever waits for the rollout); the change's record, which
// the observer writes once the restarter has looked (inflight.Records),
// would compete with that on a small API server. So a restart counts as
// looked at only once this manager's watch has received it, which the API
// server sends to every watcher at the same time. The observer's wait stays
// bounded (observe.lookWait) if the watch never shows it: a later change of
// the workload by someone else, or a lost watch.
type propagation struct {
	mu      sync.Mutex
	pending map[string]time.Time // look key → the stamp applied
}

// expect notes that the workload (its look key) was restarted with stamp.
func (p *propagation) expect(key string, stamp time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pending == nil {
		p.pending = map[string]time.Time{}
	}
	p.pending[key] = stamp
}

// shown reports whether the workload's restart awaited by expect is now
// shown: the workload carries that stamp or a later one. It forgets the
// restart when it is.
func (p *propagation) shown(key string, current time.Time, carried bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	stamp, ok := p.pending[key]
	if !ok || !carried || current.Before(stamp) {
		return false
	}
	delete(p.pending, key)
	return true
}

// forget drops the workload's awaited restart, if any.
func (p *propagation) forget(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.pending, key)
}

// restartShown is told of every version of a workload the cache receives:
// once it shows a restart the driver applied, the restart counts as looked
// at and the change's record may be written.
func (d *Driver) restartShown(obj client.Object) {
	kind, ok := d.Kinds.KindOf(obj)
	if !ok {
		return
	}
	key := inflight.WorkloadKey(string(kind.Target), obj.GetNamespace(), obj.GetName())
	current, carried := workload.Handle{Object: obj, Kind: kind, Target: obj}.Current()
	if d.awaiting.shown(key, current, carried) {
		d.Records.Looked(key)
	}
}

// lookedOnceShown ends the look at a workload the driver just restarted
// with the stamp value: once the cache shows the restart, or at once
// without a watch telling restartShown, or within a fan-out (the driver
// restarted another workload less than fanOutQuiet ago). In a fan-out the
// API server is busy with the restarts anyway, its watchers fall behind,
// and the observer's wait for each would only hold its workers up to
// lookWait.
func (d *Driver) lookedOnceShown(k WorkloadKey, value string) {
	stamp, ok := freshness.ParseStamp(value)
	inFanOut := d.Now().Sub(time.Unix(0, d.lastRestart.Load())) < fanOutQuiet
	if !d.watchesRestarts || !ok || inFanOut {
		d.Records.Looked(k.lookKey())
		return
	}
	d.awaiting.expect(k.lookKey(), stamp)
}
