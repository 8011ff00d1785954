package chaos

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/cmd/kick-devcluster/controlplane"
	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/integration/fixture"
)

// policy restarts every workload of the namespace at once: no gate, no
// minInterval, no settle.
const policy = "discovery: {workloadSelector: {}}\nrestart: {minInterval: 0s}"

// load is n Deployments (app-000, ...), each consuming its own Secret (of
// the same name) through an env valueFrom, in the fixture's namespace.
// Changes go in rounds: a round writes every Secret once, and the next
// round starts only once the cluster has settled after the last one (see
// wait), so no two changes of a Secret can be coalesced into one restart
// and each Deployment must restart exactly once per round. Each round is
// counted on its own (count_test.go).
type load struct {
	f     *fixture.F
	n     int
	round int
	// changes counts the Secret writes.
	changes int
	// rng orders the writes (and the tests' fault moments); only the test's
	// goroutine uses it.
	rng *rand.Rand
	// quiet is how long the cluster must show no change before a round is
	// counted.
	quiet time.Duration

	// startGens are the Deployments' generations when the current round
	// started; rounds are the counts of the rounds so far.
	startGens []int64
	rounds    []roundCount

	// latencies are write → restart stamp, of every change answered so far.
	latencies []time.Duration

	// whileSettling, when set, runs at every poll while a round settles
	// (the failover test replaces replicas that exited there).
	whileSettling func()

	// mu guards what the writing goroutine sets: when each Secret's write
	// of the current round began, when its last write returned, and in
	// which round.
	mu           sync.Mutex
	writeStarted []time.Time
	written      []time.Time
	writtenRound []int
}

func name(i int) string { return fmt.Sprintf("app-%03d", i) }

// index is the inverse of name: false for an object that is not the load's.
func (l *load) index(obj string) (int, bool) {
	i, err := strconv.Atoi(strings.TrimPrefix(obj, "app-"))
	return i, err == nil && strings.HasPrefix(obj, "app-") && i >= 0 && i < l.n
}

// newLoad creates the policy, the Secrets and the Deployments, and waits
// until every Deployment is available and KICK recorded every Secret.
func newLoad(f *fixture.F, n int) *load {
	f.T.Helper()
	f.Policy("all", policy)
	for i := range n {
		f.Secret(name(i), map[string]string{"v": "0"}, nil)
		spec := fixture.PodSpec()
		spec.Containers[0].Env = []corev1.EnvVar{{Name: "V", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: name(i)}, Key: "v"}}}}
		f.Deployment(name(i), 1, spec)
	}
	l := &load{f: f, n: n, rng: random(f.T), quiet: pick(3*time.Second, 10*time.Second),
		writeStarted: make([]time.Time, n), written: make([]time.Time, n), writtenRound: make([]int, n)}
	cluster.Eventually(f.T, 2*time.Minute, fmt.Sprintf("%d Deployments to become available", n), func() (bool, error) {
		var list appsv1.DeploymentList
		if err := f.Env.Client.List(f.Ctx, &list, client.InNamespace(f.NS)); err != nil {
			return false, err
		}
		ready := 0
		for i := range list.Items {
			if _, ok := l.index(list.Items[i].Name); ok && controlplane.DeploymentAvailable(&list.Items[i]) {
				ready++
			}
		}
		return ready == n, fmt.Errorf("%d of %d available", ready, n)
	})
	cluster.Eventually(f.T, time.Minute, fmt.Sprintf("observation records of %d Secrets", n), func() (bool, error) {
		var list kickv1alpha1.SourceObservationList
		if err := f.Env.Client.List(f.Ctx, &list, client.InNamespace(f.NS)); err != nil {
			return false, err
		}
		return len(list.Items) >= n, fmt.Errorf("%d of %d records", len(list.Items), n)
	})
	return l
}

// change starts the next round: it notes every Deployment's generation,
// then writes every Secret once, in random order and evenly spread over
// spread, from a goroutine. A write the API server refuses (an outage) is
// retried for up to two minutes. The channel yields nil or the first
// failure once every write is done.
func (l *load) change(spread time.Duration) <-chan error {
	l.f.T.Helper()
	gens, err := l.generations()
	if err != nil {
		l.f.T.Fatal(err)
	}
	l.startGens = gens
	l.round++
	l.changes += l.n
	round, order := l.round, l.rng.Perm(l.n)
	done := make(chan error, 1)
	go func() {
		start := time.Now()
		for k, i := range order {
			if d := time.Until(start.Add(spread * time.Duration(k) / time.Duration(l.n))); d > 0 {
				time.Sleep(d) // pacing the load, not waiting for a condition
			}
			if err := l.write(i, round); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	return done
}

// randN returns a random duration in [0, d) from the test's seeded source.
func (l *load) randN(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return time.Duration(l.rng.Int64N(int64(d)))
}

func (l *load) write(i, round int) error {
	patch := fmt.Sprintf(`{"data":{"v":%q}}`, base64.StdEncoding.EncodeToString([]byte(strconv.Itoa(round))))
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: l.f.NS, Name: name(i)}}
	l.mu.Lock()
	l.writeStarted[i] = time.Now()
	l.mu.Unlock()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := l.f.Env.Client.Patch(ctx, s, client.RawPatch(types.MergePatchType, []byte(patch)))
		cancel()
		if err == nil {
			l.mu.Lock()
			l.written[i], l.writtenRound[i] = time.Now(), round
			l.mu.Unlock()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("round %d: write Secret %s: %w", round, name(i), err)
		}
		time.Sleep(200 * time.Millisecond) // an outage: try again
	}
}

// generations reads metadata.generation of every load Deployment.
func (l *load) generations() ([]int64, error) {
	var list metav1.PartialObjectMetadataList
	list.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind("DeploymentList"))
	if err := l.f.Env.Client.List(l.f.Ctx, &list, client.InNamespace(l.f.NS)); err != nil {
		return nil, err
	}
	gens := make([]int64, l.n)
	for _, d := range list.Items {
		if i, ok := l.index(d.Name); ok {
			gens[i] = d.Generation
		}
	}
	return gens, nil
}

// progress counts the Secrets written in the current round whose
// Deployment has restarted since the round started (answered) and has not
// yet (pending: the changes in flight).
func (l *load) progress() (answered, pending int, err error) {
	gens, err := l.generations()
	if err != nil {
		return 0, 0, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, g := range gens {
		switch {
		case l.writtenRound[i] != l.round:
		case g <= l.startGens[i]:
			pending++
		default:
			answered++
		}
	}
	return answered, pending, nil
}

// explain logs what a failure needs to be understood for one Deployment:
// its requests' status, its rollout status and the manager's log lines
// that name it (the failure output otherwise holds only the log's tail).
func (l *load) explain(deployment string) {
	f := l.f
	for _, kr := range f.Requests() {
		if kr.Spec.TargetRef.Name != deployment {
			continue
		}
		st, _ := json.Marshal(kr.Status)
		f.T.Logf("KickRequest %s: annotations %v\nstatus %s", kr.Name, kr.Annotations, st)
	}
	var d appsv1.Deployment
	if err := f.Env.Client.Get(f.Ctx, client.ObjectKey{Namespace: f.NS, Name: deployment}, &d); err == nil {
		st, _ := json.Marshal(d.Status)
		f.T.Logf("Deployment %s: generation %d, template annotations %v\nstatus %s", deployment, d.Generation, d.Spec.Template.Annotations, st)
	}
	var lines []string
	for _, line := range strings.Split(f.Mgr.Log(), "\n") {
		if strings.Contains(line, deployment+`"`) || strings.Contains(line, deployment+" ") || strings.Contains(line, "/"+deployment) {
			lines = append(lines, line)
		}
	}
	if len(lines) > 300 {
		lines = lines[len(lines)-300:]
	}
	f.T.Logf("kick-manager log lines naming %s (%d, at most the last 300):\n%s", deployment, len(lines), strings.Join(lines, "\n"))
}

// percentiles returns the median and the largest of ds.
func percentiles(ds []time.Duration) (p50, worst time.Duration) {
	if len(ds) == 0 {
		return 0, 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2].Round(time.Millisecond), s[len(s)-1].Round(time.Millisecond)
}

// figures logs one parsable line: "chaos: SCENARIO key=value ...", with
// the load's counts and latencies appended to the given pairs.
func (l *load) figures(scenario string, restarts, lost, duplicated int, kv ...any) {
	p50, worst := percentiles(l.latencies)
	kv = append([]any{"deployments", l.n, "rounds", l.round, "changes", l.changes}, kv...)
	kv = append(kv, "restarts", restarts, "lost", lost, "duplicated", duplicated,
		"latency_p50", p50, "latency_max", worst, "form", pick("short", "full"), "seed", suiteSeed)
	var b strings.Builder
	b.WriteString("chaos: " + scenario)
	for i := 0; i+1 < len(kv); i += 2 {
		fmt.Fprintf(&b, " %v=%v", kv[i], kv[i+1])
	}
	l.f.T.Log(b.String())
}
