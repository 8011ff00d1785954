package entry

import (
	"sort"
	"strconv"
	"time"
)

// Type is what an entry marks on a workload's lane.
type Type string

const (
	// Change: a consumed Secret or ConfigMap changed (relevant observation).
	Change Type = "change"
	// Baseline: KICK recorded a source for the first time; no restart follows.
	Baseline Type = "baseline"
	// Gate: a gate held the restart back, or opened (Reason Allowed).
	Gate Type = "gate"
	// Request: a KickRequest was created or moved to a phase with no marker of its own.
	Request Type = "request"
	// Restart: KICK patched the workload.
	Restart Type = "restart"
	// Completion: the restart's rollout completed (request Succeeded).
	Completion Type = "completion"
	// Finished: the request ended without a restart (NoLongerRequired, DryRun).
	Finished Type = "finished"
	// Failure: the request failed.
	Failure Type = "failure"
	// Event: a Kubernetes Event about the workload or its KickRequest.
	Event Type = "event"
)

// Workload identifies a managed workload: its lane.
type Workload struct {
	Namespace string `json:"namespace"`
	Kind      string `json:"kind"`
	Name      string `json:"name"`
}

// Key is "namespace/Kind/name".
func (w Workload) Key() string { return w.Namespace + "/" + w.Kind + "/" + w.Name }

// String is "Kind namespace/name".
func (w Workload) String() string { return w.Kind + " " + w.Namespace + "/" + w.Name }

// Entry is one thing that happened to a workload. It never carries Secret
// data, key names or fingerprints: only object names, times, phases and
// the reasons and messages KICK and Kubernetes publish anyway.
type Entry struct {
	Time time.Time `json:"time"`
	Type Type      `json:"type"`
	Workload
	// Summary is one line for people.
	Summary string `json:"summary"`
	// Reason is the source class (Relevant, Baseline), the gate reason, the
	// request outcome or the Event reason.
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// Source is the changed object ("Secret db") of change and baseline entries.
	Source string `json:"source,omitempty"`
	// Consumers counts the managed workloads that consume Source.
	Consumers int `json:"consumers,omitempty"`
	// KeysUnread marks a change of keys the workload does not read: no
	// restart awaits it (see KeysUnread). It names no key.
	KeysUnread bool `json:"keysUnread,omitempty"`
	// Request is the KickRequest's name, Phase the phase it entered.
	Request string `json:"request,omitempty"`
	Phase   string `json:"phase,omitempty"`
	// Stage is the gate that held the restart back; Until when it may open by itself.
	Stage string     `json:"stage,omitempty"`
	Until *time.Time `json:"until,omitempty"`
	// Warning marks failures and Warning Events.
	Warning bool `json:"warning,omitempty"`
	// Note relates the entry to earlier ones ("restarted 0.8 s after the
	// change; waited 3h12m for ..."); see Narrate.
	Note string `json:"note,omitempty"`
	// ID identifies the occurrence, so an entry rebuilt from objects and the
	// same one seen live count once.
	ID string `json:"-"`
}

// Sort orders entries by time (stable: equal times keep their order).
func Sort(es []Entry) {
	sort.SliceStable(es, func(i, j int) bool { return es[i].Time.Before(es[j].Time) })
}

// Dedupe sorts es and drops entries whose ID appeared before (entries
// without an ID are kept), and changes without a source when a change of a
// named source is known for the same workload at the same millisecond.
func Dedupe(es []Entry) []Entry {
	Sort(es)
	seen := make(map[string]struct{}, len(es))
	named := map[string]struct{}{}
	for _, e := range es {
		if e.Type == Change && e.Source != "" {
			named[anonID(e)] = struct{}{}
		}
	}
	out := es[:0]
	for _, e := range es {
		if e.Type == Change && e.Source == "" {
			if _, ok := named[anonID(e)]; ok {
				continue
			}
		}
		if e.ID != "" {
			if _, dup := seen[e.ID]; dup {
				continue
			}
			seen[e.ID] = struct{}{}
		}
		out = append(out, e)
	}
	afterRestart(out)
	return out
}

func anonID(e Entry) string { return id(Change, e.Workload, e.Time) }

// afterRestart moves the end of a request that the API server dated to the
// second (completionTime) behind the restart it concludes when both fall
// in the same second: the rollout cannot have completed before it started.
// It then sorts es again.
func afterRestart(es []Entry) {
	restarts := map[string][]time.Time{}
	for _, e := range es {
		if e.Type == Restart {
			k := e.Key() + "|" + e.Request
			restarts[k] = append(restarts[k], e.Time)
		}
	}
	moved := false
	for i := range es {
		e := &es[i]
		if e.Type != Completion && e.Type != Failure && e.Type != Finished {
			continue
		}
		for _, r := range restarts[e.Key()+"|"+e.Request] {
			if !r.Before(e.Time) && r.Sub(e.Time) < time.Second {
				e.Time, moved = r.Add(time.Microsecond), true
			}
		}
	}
	if moved {
		Sort(es)
	}
}

// Since keeps the entries at or after from (all when from is zero).
func Since(es []Entry, from time.Time) []Entry {
	if from.IsZero() {
		return es
	}
	out := es[:0:0]
	for _, e := range es {
		if !e.Time.Before(from) {
			out = append(out, e)
		}
	}
	return out
}

// id joins the parts of an occurrence's identity. Times are cut to the
// millisecond: KICK's records keep microseconds or nanoseconds, router
// events the same instants, so both sides agree.
func id(typ Type, w Workload, at time.Time, parts ...string) string {
	s := string(typ) + "|" + w.Key() + "|" + strconv.FormatInt(at.UnixMilli(), 10)
	for _, p := range parts {
		s += "|" + p
	}
	return s
}

// secondID is id with the time cut to the second, for times the API server
// stores to the second (gate decisions, completion times).
func secondID(typ Type, w Workload, at time.Time, parts ...string) string {
	return id(typ, w, at.Truncate(time.Second), parts...)
}
