package budget

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"
)

// Waiter is a request that wants a slot.
type Waiter struct {
	// Key identifies the request ("namespace/name").
	Key       string
	Namespace string
	// Policy is the selecting KickPolicy's name; PolicyLimit its resolved
	// restart.maxConcurrent, 0 when it sets none.
	Policy      string
	PolicyLimit int
	// Change is the change the request answers: within a policy the oldest
	// change goes first.
	Change time.Time
}

func (w Waiter) policyKey() string { return w.Namespace + "/" + w.Policy }

// Usage is what is in progress now.
type Usage struct {
	Total       int
	ByNamespace map[string]int
	// ByPolicy is keyed by "namespace/policy".
	ByPolicy map[string]int
}

// State is everything a grant decision reads.
type State struct {
	// ClusterLimit is --max-concurrent-restarts; 0 means no cluster cap.
	ClusterLimit int
	Usage        Usage
	// Waiting are the requests that want a slot, the asking one included.
	Waiting []Waiter
	// LastGrant is when each namespace was last given a slot.
	LastGrant map[string]time.Time
}

// Verdict is the answer for one request.
type Verdict struct {
	Granted bool
	// Message says why a request waits, or which slot it took, for people.
	Message string
}

// Decide answers whether ask may take a slot now. The rule:
//
//   - the policy cap: at most PolicyLimit restarts of the policy's
//     workloads in progress; among the policy's waiters, the oldest change
//     goes first (then the request name);
//   - the cluster cap: at most ClusterLimit restarts in progress. Free
//     slots go to namespaces in turn, the one served least recently first,
//     and while other namespaces wait no namespace takes more than its
//     fair share (the cap divided by the namespaces that hold or want a
//     slot, rounded up). A namespace with 500 waiting requests therefore
//     gets no more turns than one with a single request. Waiters whose own
//     policy is full are passed over, so they never hold a cluster slot
//     back.
func Decide(s State, ask Waiter) Verdict {
	policyUsed := s.Usage.ByPolicy[ask.policyKey()]
	if ask.PolicyLimit > 0 && policyUsed >= ask.PolicyLimit {
		return Verdict{Message: fmt.Sprintf("%d of %d restarts of KickPolicy %s in progress (restart.maxConcurrent); %s",
			policyUsed, ask.PolicyLimit, ask.Policy, waitingCount(countPolicy(s.Waiting, ask.policyKey())))}
	}
	if s.ClusterLimit > 0 && s.Usage.Total >= s.ClusterLimit {
		return Verdict{Message: fmt.Sprintf("%d of %d restarts in progress in the cluster (--max-concurrent-restarts); %s",
			s.Usage.Total, s.ClusterLimit, waitingCount(len(s.Waiting)))}
	}
	eligible := eligibleWaiters(s, ask)
	if ask.PolicyLimit > 0 {
		ahead := policyQueue(eligible, ask.policyKey())
		free := ask.PolicyLimit - policyUsed
		if i := slices.IndexFunc(ahead, func(w Waiter) bool { return w.Key == ask.Key }); i >= free {
			return Verdict{Message: fmt.Sprintf("%d of %d restarts of KickPolicy %s in progress (restart.maxConcurrent); %d requests with older changes go first",
				policyUsed, ask.PolicyLimit, ask.Policy, i)}
		}
	}
	if s.ClusterLimit > 0 {
		picked := Pick(s.ClusterLimit, s.Usage, eligible, s.LastGrant)
		if !slices.Contains(picked, ask.Key) {
			return Verdict{Message: fmt.Sprintf("%d of %d restarts in progress in the cluster (--max-concurrent-restarts); slots go to namespaces in turn and namespace %s has had its share for now",
				s.Usage.Total, s.ClusterLimit, ask.Namespace)}
		}
	}
	return Verdict{Granted: true, Message: grantMessage(s, ask, policyUsed)}
}

func grantMessage(s State, ask Waiter, policyUsed int) string {
	switch {
	case ask.PolicyLimit > 0 && s.ClusterLimit > 0:
		return fmt.Sprintf("restart slot %d of %d of KickPolicy %s and %d of %d in the cluster", policyUsed+1, ask.PolicyLimit, ask.Policy, s.Usage.Total+1, s.ClusterLimit)
	case ask.PolicyLimit > 0:
		return fmt.Sprintf("restart slot %d of %d of KickPolicy %s", policyUsed+1, ask.PolicyLimit, ask.Policy)
	case s.ClusterLimit > 0:
		return fmt.Sprintf("restart slot %d of %d in the cluster", s.Usage.Total+1, s.ClusterLimit)
	}
	return "no restart budget"
}

func waitingCount(n int) string {
	if n == 1 {
		return "1 waiting"
	}
	return fmt.Sprintf("%d waiting", n)
}

func countPolicy(ws []Waiter, policy string) int {
	n := 0
	for _, w := range ws {
		if w.policyKey() == policy {
			n++
		}
	}
	return n
}

// eligibleWaiters are the waiters (ask included, once) whose own policy
// has a free slot.
func eligibleWaiters(s State, ask Waiter) []Waiter {
	out := make([]Waiter, 0, len(s.Waiting)+1)
	out = append(out, ask)
	for _, w := range s.Waiting {
		if w.Key == ask.Key {
			continue
		}
		if w.PolicyLimit > 0 && s.Usage.ByPolicy[w.policyKey()] >= w.PolicyLimit {
			continue
		}
		out = append(out, w)
	}
	return out
}

// policyQueue returns the waiters of one policy, oldest change first.
func policyQueue(ws []Waiter, policy string) []Waiter {
	var q []Waiter
	for _, w := range ws {
		if w.policyKey() == policy {
			q = append(q, w)
		}
	}
	slices.SortFunc(q, byChange)
	return q
}

func byChange(a, b Waiter) int {
	if c := a.Change.Compare(b.Change); c != 0 {
		return c
	}
	return cmp.Compare(a.Key, b.Key)
}

// Pick returns the keys of the waiters that take the cluster's free slots
// now, in order (see Decide for the rule).
func Pick(limit int, used Usage, waiting []Waiter, lastGrant map[string]time.Time) []string {
	free := limit - used.Total
	if free <= 0 || len(waiting) == 0 {
		return nil
	}
	queues := map[string][]Waiter{}
	for _, w := range waiting {
		queues[w.Namespace] = append(queues[w.Namespace], w)
	}
	namespaces := make([]string, 0, len(queues))
	for ns, q := range queues {
		slices.SortFunc(q, byChange)
		namespaces = append(namespaces, ns)
	}
	// Least recently served first; a namespace never served before goes
	// ahead of every other, the one with the oldest waiting change first.
	slices.SortFunc(namespaces, func(a, b string) int {
		if c := lastGrant[a].Compare(lastGrant[b]); c != 0 {
			return c
		}
		if c := queues[a][0].Change.Compare(queues[b][0].Change); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	active := len(namespaces)
	for ns, n := range used.ByNamespace {
		if _, waits := queues[ns]; !waits && n > 0 {
			active++
		}
	}
	share := (limit + active - 1) / active
	held := map[string]int{}
	for ns, n := range used.ByNamespace {
		held[ns] = n
	}
	var picked []string
	// Rounds of one slot per namespace, within the fair share; slots that
	// every waiting namespace is past its share for are then handed out in
	// turn all the same, rather than left idle.
	for _, fair := range []bool{true, false} {
		for progress := true; free > 0 && progress; {
			progress = false
			for _, ns := range namespaces {
				q := queues[ns]
				if free == 0 || len(q) == 0 || fair && held[ns] >= share && othersWait(queues, ns) {
					continue
				}
				picked = append(picked, q[0].Key)
				queues[ns], held[ns], free, progress = q[1:], held[ns]+1, free-1, true
			}
		}
	}
	return picked
}

func othersWait(queues map[string][]Waiter, ns string) bool {
	for other, q := range queues {
		if other != ns && len(q) > 0 {
			return true
		}
	}
	return false
}

// Heads returns the keys of the waiting requests that would be granted a
// slot now, each counted as taking its slot before the next is judged.
func Heads(s State) []string {
	s.Usage = cloneUsage(s.Usage)
	s.LastGrant = maps.Clone(s.LastGrant)
	if s.LastGrant == nil {
		s.LastGrant = map[string]time.Time{}
	}
	waiting := slices.Clone(s.Waiting)
	var heads []string
	for granted := true; granted && len(waiting) > 0; {
		granted = false
		for i, w := range waiting {
			if !Decide(State{ClusterLimit: s.ClusterLimit, Usage: s.Usage, Waiting: waiting, LastGrant: s.LastGrant}, w).Granted {
				continue
			}
			heads = append(heads, w.Key)
			s.Usage.Total++
			s.Usage.ByNamespace[w.Namespace]++
			s.Usage.ByPolicy[w.policyKey()]++
			// Served just now, after every earlier grant.
			s.LastGrant[w.Namespace] = latest(s.LastGrant).Add(time.Nanosecond)
			waiting = slices.Delete(waiting, i, i+1)
			granted = true
			break
		}
	}
	return heads
}

func cloneUsage(u Usage) Usage {
	out := Usage{Total: u.Total, ByNamespace: maps.Clone(u.ByNamespace), ByPolicy: maps.Clone(u.ByPolicy)}
	if out.ByNamespace == nil {
		out.ByNamespace = map[string]int{}
	}
	if out.ByPolicy == nil {
		out.ByPolicy = map[string]int{}
	}
	return out
}

func latest(m map[string]time.Time) time.Time {
	var t time.Time
	for _, v := range m {
		if v.After(t) {
			t = v
		}
	}
	return t
}
