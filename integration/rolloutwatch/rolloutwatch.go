// Package rolloutwatch follows Deployments through one watch and counts the
// rollouts in progress from the Deployments' own status, in the API
// server's order, never from a controller's bookkeeping. The fan-out tests
// (integration/fanout) check the restart budget with it and the fan-out
// benchmark (integration/bench) draws its curve from it.
package rolloutwatch

import (
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kick-operator/kick/cmd/kick-devcluster/controlplane"
	"github.com/kick-operator/kick/restart/freshness"
)

// Sampler is the state one watch of Deployments reported so far.
type Sampler struct {
	mu sync.Mutex
	// state is the latest copy of each Deployment ("namespace/name").
	state map[string]*appsv1.Deployment
	// rolling are the Deployments whose status says a rollout is in
	// progress (not available at their current generation).
	rolling map[string]bool
	// stamps are the restart stamps each Deployment's template carried,
	// in the order they appeared.
	stamps map[string][]string
	// started is the order in which Deployments began a rollout for a new
	// stamp, and lastStart when the latest of them was seen.
	started   []string
	lastStart time.Time
	// startedAt is when the watch showed each Deployment's latest stamp;
	// availableAt when it first showed it available after that.
	startedAt, availableAt map[string]time.Time
	// peak is the most rollouts in progress at any one point.
	peak     int
	peakWhen string
	// timeline is the number of rollouts in progress each time it changed.
	timeline []Point
	now      func() time.Time
}

// Point is the number of rollouts in progress from At on.
type Point struct {
	At         time.Time
	InProgress int
}

// Follow reads w until its result channel closes (stop w, or cancel the
// context it was started with, to end it). Start the watch before the
// change whose rollouts it should see.
func Follow(w watch.Interface) *Sampler {
	s := &Sampler{state: map[string]*appsv1.Deployment{}, rolling: map[string]bool{}, stamps: map[string][]string{},
		startedAt: map[string]time.Time{}, availableAt: map[string]time.Time{}, now: time.Now}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			d, ok := ev.Object.(*appsv1.Deployment)
			if !ok || ev.Type == watch.Bookmark {
				continue
			}
			s.observe(ev.Type, d)
		}
	}()
	return s
}

func (s *Sampler) observe(typ watch.EventType, d *appsv1.Deployment) {
	s.mu.Lock()
	defer s.mu.Unlock()
	at := s.now()
	key := d.Namespace + "/" + d.Name
	before := len(s.rolling)
	if typ == watch.Deleted {
		delete(s.state, key)
		delete(s.rolling, key)
		s.note(at, before)
		return
	}
	s.state[key] = d
	stamp := d.Spec.Template.Annotations[freshness.RestartedAtAnnotation]
	if seen := s.stamps[key]; stamp != "" && (len(seen) == 0 || seen[len(seen)-1] != stamp) {
		s.stamps[key] = append(seen, stamp)
		s.started = append(s.started, key)
		s.lastStart = at
		s.startedAt[key] = at
		delete(s.availableAt, key)
	}
	if controlplane.DeploymentAvailable(d) {
		if _, seen := s.availableAt[key]; !seen && len(s.stamps[key]) > 0 {
			s.availableAt[key] = at
		}
		delete(s.rolling, key)
	} else {
		s.rolling[key] = true
	}
	if n := len(s.rolling); n > s.peak {
		s.peak, s.peakWhen = n, fmt.Sprintf("after an event of %s at resourceVersion %s", key, d.ResourceVersion)
	}
	s.note(at, before)
}

// note adds a point to the timeline when the count moved.
func (s *Sampler) note(at time.Time, before int) {
	if n := len(s.rolling); n != before || len(s.timeline) == 0 {
		s.timeline = append(s.timeline, Point{At: at, InProgress: n})
	}
}

// Restarts returns how many restart stamps each Deployment took.
func (s *Sampler) Restarts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for k, st := range s.stamps {
		out[k] = len(st)
	}
	return out
}

// Peak is the most rollouts in progress at once, and the event that
// brought it.
func (s *Sampler) Peak() (int, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peak, s.peakWhen
}

// Started returns the Deployments in the order their restarts began.
func (s *Sampler) Started() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.started...)
}

// Times returns when the watch showed the Deployment's latest stamp and
// when it first showed it available after that (zero while it has not).
func (s *Sampler) Times(key string) (started, available time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.startedAt[key], s.availableAt[key]
}

// LastStart is when the watch last saw a Deployment take a new stamp.
func (s *Sampler) LastStart() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastStart
}

// InProgress is the number of rollouts in progress now.
func (s *Sampler) InProgress() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.rolling)
}

// Timeline returns the rollouts in progress over time, one point each time
// the number changed.
func (s *Sampler) Timeline() []Point {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Point(nil), s.timeline...)
}

// Settled reports whether each of the Deployments took want restarts and
// every one of them is available again; the error says which is not.
func (s *Sampler) Settled(want int, deployments ...string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, key := range deployments {
		d, ok := s.state[key]
		switch {
		case !ok:
			return false, fmt.Errorf("%s not seen", key)
		case len(s.stamps[key]) < want:
			return false, fmt.Errorf("%s restarted %d times", key, len(s.stamps[key]))
		case !controlplane.DeploymentAvailable(d):
			return false, fmt.Errorf("%s still rolling out: %+v", key, d.Status)
		}
	}
	return true, nil
}
