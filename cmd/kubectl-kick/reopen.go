package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/freshness"
)

// reopenGrace is how long "restart --wait" lets KICK act on a reopened
// request before it checks, itself, whether KICK declines to reopen it.
// KICK writes nothing when it declines (the request keeps its old outcome),
// so the check is the CLI's own: the manager's reopen rule evaluated on
// live reads. It is repeated every reopenGrace while nothing happens.
const reopenGrace = 3 * time.Second

// declined is KICK's answer to a reopen it does not act on.
type declined struct {
	// code is the exit code: 0 when the workload already carries the
	// change (nothing to restart), 1 when KICK will not restart it.
	code int
	why  string
}

// predictReopen evaluates the manager's rule for a finished request whose
// change annotation the CLI just advanced: KICK reopens it only when the
// target exists, exactly one KickPolicy selects it and its running pods do
// not provably carry the latest change (the records' and the request's
// annotation); a dry-run request reopens only for a change newer than the
// one it reported. It returns nil when KICK reopens the request or when
// the CLI cannot tell (missing permissions, an unsupported kind), so the
// caller keeps waiting.
func (s *session) predictReopen(ctx context.Context, kr *kickv1alpha1.KickRequest) *declined {
	kind, name := kr.Spec.TargetRef.Kind, kr.Spec.TargetRef.Name
	if _, err := newWorkload(kind); err != nil {
		return nil
	}
	sess := *s
	sess.namespace = kr.Namespace
	f, err := sess.gather(ctx, kind, name, time.Now())
	if err != nil {
		var nf *notFoundError
		if errors.As(err, &nf) {
			return &declined{code: exitFailed, why: nf.Error()}
		}
		return nil
	}
	return decideReopen(analyze(f), kr)
}

// decideReopen is the pure part of predictReopen.
func decideReopen(e *explanation, kr *kickv1alpha1.KickRequest) *declined {
	target := string(kr.Spec.TargetRef.Kind) + "/" + kr.Spec.TargetRef.Name
	switch e.Policy.Selection {
	case selectionNotSelected:
		return &declined{code: exitFailed, why: fmt.Sprintf("no KickPolicy in namespace %s selects %s", kr.Namespace, target)}
	case selectionAmbiguous:
		return &declined{code: exitFailed, why: fmt.Sprintf("KickPolicies %s all select %s; KICK restarts a workload only when exactly one policy selects it",
			strings.Join(e.Policy.Candidates, ", "), target)}
	}
	if e.unknown != "" {
		return nil
	}
	changed := e.recorded.Max(changeAnnotation(kr))
	if kr.Status.Phase == kickv1alpha1.PhaseDryRun && !changed.Latest.After(microTime(kr.Status.LatestObservedDependencyChange)) {
		return &declined{code: exitOK, why: fmt.Sprintf("no change newer than the one the dry run already reported (%s)",
			formatTime(microTime(kr.Status.LatestObservedDependencyChange)))}
	}
	r := e.rollout
	if !alreadyCarried(changed, r) {
		return nil
	}
	if r.Complete {
		return &declined{code: exitOK, why: fmt.Sprintf("%s already carries the requested change: its rollout started at %s, not before the change at %s; nothing to restart",
			target, formatTime(r.Start), changeString(changed))}
	}
	return &declined{code: exitOK, why: fmt.Sprintf("%s is rolling out pods created after the requested change at %s (since %s); nothing to restart",
		target, changeString(changed), formatTime(r.Since))}
}

// alreadyCarried reports whether the running pods provably carry every
// change up to c (the manager's rule): the rollout is complete and fresh,
// or it is in progress and every pod of its template was created after c.
func alreadyCarried(c freshness.Change, r freshness.Rollout) bool {
	switch freshness.Decide(c, r) {
	case freshness.Fresh:
		return true
	case freshness.InProgress:
		return !r.Since.IsZero() && !freshness.Newer(c, r.Since)
	}
	return false
}

func changeString(c freshness.Change) string {
	if c.IsZero() {
		return "(none)"
	}
	if c.Latest.After(c.Earliest) {
		return formatTime(c.Earliest) + "–" + formatTime(c.Latest)
	}
	return formatTime(c.Earliest)
}

func microTime(t *metav1.MicroTime) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.Time
}

// notReopened reports a reopen KICK declined, with its exit code.
func notReopened(kr *kickv1alpha1.KickRequest, d *declined, now time.Time, stdout, stderr io.Writer) int {
	target := strings.ToLower(string(kr.Spec.TargetRef.Kind)) + "/" + kr.Spec.TargetRef.Name
	if d.code != exitOK {
		fmt.Fprintf(stderr, "kubectl kick: restart of %s failed: KICK did not reopen kickrequest/%s (it stays %s): %s\n",
			target, kr.Name, kr.Status.Phase, d.why)
		return d.code
	}
	fmt.Fprintf(stdout, "%s %-15s %s\n", now.Format("15:04:05"), "NotReopened", d.why)
	fmt.Fprintf(stdout, "kickrequest/%s finished: not reopened, nothing to restart (it stays %s)\n", kr.Name, kr.Status.Phase)
	return d.code
}
