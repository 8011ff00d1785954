package chaos

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kick-operator/kick/cmd/kick-devcluster/controlplane"
	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/restart/freshness"
)

// How the suite counts, without asking KICK: after each round it waits
// until the cluster itself is quiet — every Deployment has restarted since
// the round started, the Deployment controller has observed every
// generation and finished every rollout, and neither a generation nor the
// set of ReplicaSets has changed for load.quiet — and then counts that
// round on its own, per Deployment, from what the Deployment shows:
//
//   - restarts: the generation's growth over the round (a restart is a
//     pod-template change, and nothing else edits these Deployments);
//   - answered: the template's restart stamp is later than the moment the
//     round's write of its Secret began (a restart for an earlier change
//     does not answer this one);
//   - lost: 1 when the round's change is not answered, else 0;
//   - duplicated: the restarts beyond the one that answered.
//
// A duplicate in one round and a loss in the next are two errors, never a
// net zero. The Deployment controller's revision annotation, which counts
// templates on its own, must equal the generation.

// revisionAnnotation is the Deployment controller's count of templates.
const revisionAnnotation = "deployment.kubernetes.io/revision"

// roundCount is one round's count, and the latest restart stamp that
// answered one of its changes.
type roundCount struct {
	restarts, lost, duplicated int
	lastRestart                time.Time
}

// deploymentState is what the count reads of one Deployment.
type deploymentState struct {
	generation int64
	// settled: the controller observed the generation and the rollout is
	// complete.
	settled  bool
	stamp    string
	revision string
}

// snapshot is the load's Deployments (by index) and a signature of what
// must stay the same for the cluster to count as quiet.
type snapshot struct {
	deployments []deploymentState
	signature   string
}

// observe reads every load Deployment and the namespace's ReplicaSets.
func (l *load) observe() (snapshot, error) {
	f := l.f
	var list appsv1.DeploymentList
	if err := f.Env.Client.List(f.Ctx, &list, client.InNamespace(f.NS)); err != nil {
		return snapshot{}, err
	}
	var sets metav1.PartialObjectMetadataList
	sets.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind("ReplicaSetList"))
	if err := f.Env.Client.List(f.Ctx, &sets, client.InNamespace(f.NS)); err != nil {
		return snapshot{}, err
	}
	s := snapshot{deployments: make([]deploymentState, l.n)}
	var sig strings.Builder
	for i := range list.Items {
		d := &list.Items[i]
		k, ok := l.index(d.Name)
		if !ok {
			continue
		}
		st := deploymentState{
			generation: d.Generation,
			settled:    d.Status.ObservedGeneration == d.Generation && controlplane.DeploymentAvailable(d),
			stamp:      d.Spec.Template.Annotations[freshness.RestartedAtAnnotation],
			revision:   d.Annotations[revisionAnnotation],
		}
		s.deployments[k] = st
		fmt.Fprintf(&sig, "%s:%d:%t;", d.Name, st.generation, st.settled)
	}
	names := make([]string, 0, len(sets.Items))
	for _, rs := range sets.Items {
		names = append(names, rs.Name)
	}
	slices.Sort(names)
	sig.WriteString(strings.Join(names, ","))
	s.signature = sig.String()
	return s, nil
}

// settle waits until every Deployment has restarted since the round
// started and the cluster has stayed quiet for l.quiet, and returns the
// last snapshot; on timeout it returns the last snapshot with the error.
func (l *load) settle(timeout time.Duration) (snapshot, error) {
	deadline := time.Now().Add(timeout)
	var last snapshot
	var since time.Time
	var lastErr error
	for {
		if l.whileSettling != nil {
			l.whileSettling()
		}
		s, err := l.observe()
		if err == nil {
			if since.IsZero() || s.signature != last.signature {
				since = time.Now()
			}
			last = s
			var behind, rolling []string
			for i, d := range s.deployments {
				if d.generation <= l.startGens[i] {
					behind = append(behind, name(i))
				}
				if !d.settled {
					rolling = append(rolling, name(i))
				}
			}
			quiet := time.Since(since)
			if len(behind) == 0 && len(rolling) == 0 && quiet >= l.quiet {
				return s, nil
			}
			lastErr = fmt.Errorf("not restarted: %s; rolling out: %s; quiet for %s", short(behind), short(rolling), quiet.Round(time.Millisecond))
		} else {
			lastErr = err
		}
		if time.Now().After(deadline) {
			return last, fmt.Errorf("round %d: timed out after %s waiting for every Deployment to restart and the cluster to stay quiet for %s (%v)",
				l.round, timeout, l.quiet, lastErr)
		}
		time.Sleep(250 * time.Millisecond) // polling the cluster's state
	}
}

// short lists at most five names.
func short(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	if len(names) > 5 {
		return strings.Join(names[:5], ", ") + fmt.Sprintf(" and %d more", len(names)-5)
	}
	return strings.Join(names, ", ")
}

// wait ends the current round: it waits for the cluster to settle (see
// settle), then counts the round and records the latencies of the changes
// it answered. It returns settle's error, after counting what the cluster
// shows at the deadline.
func (l *load) wait(timeout time.Duration) error {
	f := l.f
	f.T.Helper()
	s, err := l.settle(timeout)
	if s.deployments == nil {
		// Not one read succeeded: count from a fresh one.
		var readErr error
		if s, readErr = l.observe(); readErr != nil {
			f.T.Fatalf("round %d: cannot read the Deployments to count: %v (and %v)", l.round, readErr, err)
		}
	}
	c, latencies := l.countRound(s)
	l.rounds = append(l.rounds, c)
	l.latencies = append(l.latencies, latencies...)
	p50, worst := percentiles(latencies)
	f.T.Logf("round %d: %d restarts for %d changes, %d lost, %d duplicated; write → restart p50 %s, max %s",
		l.round, c.restarts, l.n, c.lost, c.duplicated, p50, worst)
	return err
}

// verdict is one Deployment's count in one round.
type verdict struct {
	restarts, lost, duplicated int
	// answeredAt is the restart stamp that answered the round's change;
	// zero when none did.
	answeredAt time.Time
}

// judge counts one Deployment's round: its generation when the round
// started and its state now, and when the round's write of its Secret
// began.
func judge(startGen int64, d deploymentState, writeStarted time.Time) verdict {
	v := verdict{restarts: int(d.generation - startGen)}
	v.duplicated = v.restarts
	stamp, stamped := freshness.ParseStamp(d.stamp)
	if v.restarts > 0 && stamped && stamp.After(writeStarted) {
		v.answeredAt = stamp
		v.duplicated--
	} else {
		v.lost = 1
	}
	return v
}

// countRound counts the current round from s, reporting every Deployment
// that lost or repeated its restart, and returns the latencies of the
// changes answered.
func (l *load) countRound(s snapshot) (roundCount, []time.Duration) {
	f := l.f
	f.T.Helper()
	var c roundCount
	var latencies []time.Duration
	l.mu.Lock()
	started, written := slices.Clone(l.writeStarted), slices.Clone(l.written)
	l.mu.Unlock()
	for i, d := range s.deployments {
		v := judge(l.startGens[i], d, started[i])
		c.restarts += v.restarts
		c.lost += v.lost
		c.duplicated += v.duplicated
		if !v.answeredAt.IsZero() {
			latencies = append(latencies, v.answeredAt.Sub(written[i]))
			if v.answeredAt.After(c.lastRestart) {
				c.lastRestart = v.answeredAt
			}
		}
		if v.lost > 0 || v.duplicated > 0 {
			f.T.Errorf("round %d: %s restarted %d times for one change (generation %d → %d, restart stamp %q, write began %s): %d lost, %d duplicated",
				l.round, name(i), v.restarts, l.startGens[i], d.generation, d.stamp, started[i].UTC().Format(time.RFC3339Nano), v.lost, v.duplicated)
			l.explain(name(i))
		}
		if d.settled && d.revision != strconv.FormatInt(d.generation, 10) {
			f.T.Errorf("round %d: %s is at generation %d but the Deployment controller counts revision %q: something other than a restart changed it",
				l.round, name(i), d.generation, d.revision)
		}
	}
	return c, latencies
}

// count sums the rounds' counts, then checks, apart from the counts, that
// KICK finished the bookkeeping of every restart: a request left open
// holds its workload's next change back.
func (l *load) count() (restarts, lost, duplicated int) {
	for _, c := range l.rounds {
		restarts += c.restarts
		lost += c.lost
		duplicated += c.duplicated
	}
	l.requestsFinished(pick(90*time.Second, 2*time.Minute))
	return restarts, lost, duplicated
}

// requestsFinished fails the test when requests of the load stay open
// longer than timeout after the cluster settled (a burst's requests may
// put off their first status write for up to a minute).
func (l *load) requestsFinished(timeout time.Duration) {
	f := l.f
	f.T.Helper()
	var open, targets []string
	err := cluster.Poll(timeout, "every KickRequest of the load to finish", func() (bool, error) {
		open, targets = open[:0], targets[:0]
		for _, kr := range f.Requests() {
			if _, ok := l.index(kr.Spec.TargetRef.Name); ok && !kr.Status.Phase.IsTerminal() {
				open = append(open, kr.Name+" ("+string(kr.Status.Phase)+")")
				targets = append(targets, kr.Spec.TargetRef.Name)
			}
		}
		return len(open) == 0, fmt.Errorf("open: %s", short(open))
	})
	if err != nil {
		f.T.Errorf("the cluster settled but KICK left requests open: %v", err)
		for _, target := range targets {
			l.explain(target)
		}
	}
}
