package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
)

// follow watches the request, printing each phase change, until it ends,
// ctx ends or the request disappears. After a reopen it waits until KICK
// has answered the written change (status.observedChange): either the
// request reopens and runs to a new outcome, or KICK says, in the Reopened
// condition, why it did not reopen it.
func (s *session) follow(ctx context.Context, kr *kickv1alpha1.KickRequest, mark since, timeout time.Duration, stdout, stderr io.Writer) int {
	key := client.ObjectKeyFromObject(kr)
	p := &printer{out: stdout}
	observe := func(kr *kickv1alpha1.KickRequest) (int, bool) {
		if !mark.answered(kr) {
			return 0, false // the old outcome, from before the reopen
		}
		if c := mark.declinedReopen(kr); c != nil {
			return notReopened(kr, c, time.Now(), stdout, stderr), true
		}
		p.print(kr, time.Now())
		if mark.done(kr) {
			return finish(kr, stdout, stderr), true
		}
		return 0, false
	}
	if code, ok := observe(kr); ok {
		return code
	}
	last := kr
	rv := kr.ResourceVersion
	for {
		w, err := s.client.Watch(ctx, &kickv1alpha1.KickRequestList{}, &client.ListOptions{
			Namespace:     key.Namespace,
			FieldSelector: fields.OneTermEqualSelector("metadata.name", key.Name),
			Raw:           &metav1.ListOptions{ResourceVersion: rv},
		})
		if err != nil {
			if ctx.Err() != nil {
				return s.timedOut(last, !mark.answered(last), timeout, stderr)
			}
			return report(stderr, apiError("watch", key.Namespace, err))
		}
		restart := false
		for !restart {
			select {
			case <-ctx.Done():
				w.Stop()
				return s.timedOut(last, !mark.answered(last), timeout, stderr)
			case ev, ok := <-w.ResultChan():
				if !ok {
					restart = true
					break
				}
				switch ev.Type {
				case watch.Added, watch.Modified:
					cur, isKR := ev.Object.(*kickv1alpha1.KickRequest)
					if !isKR {
						continue
					}
					last = cur
					if code, done := observe(cur); done {
						w.Stop()
						return code
					}
				case watch.Deleted:
					w.Stop()
					fmt.Fprintf(stderr, "kubectl kick: kickrequest/%s was deleted while waiting for it\n", key.Name)
					return exitUsage
				case watch.Error:
					// E.g. the resource version is too old: start over.
					restart = true
				}
			}
		}
		w.Stop()
		// Re-read the request so nothing between the watches is lost.
		cur := &kickv1alpha1.KickRequest{}
		if err := s.client.Get(ctx, key, cur); err != nil {
			if ctx.Err() != nil {
				return s.timedOut(last, !mark.answered(last), timeout, stderr)
			}
			if apierrors.IsNotFound(err) {
				fmt.Fprintf(stderr, "kubectl kick: kickrequest/%s was deleted while waiting for it\n", key.Name)
				return exitUsage
			}
			return report(stderr, apiError("get", key.Namespace, err))
		}
		last, rv = cur, cur.ResourceVersion
		if code, done := observe(cur); done {
			return code
		}
	}
}

// printer prints one line per phase or gate-reason change.
type printer struct {
	out  io.Writer
	last string
}

func (p *printer) print(kr *kickv1alpha1.KickRequest, now time.Time) {
	line := statusLine(kr)
	if line == p.last {
		return
	}
	p.last = line
	fmt.Fprintf(p.out, "%s %s\n", now.Format("15:04:05"), line)
}

// statusLine is "<phase> <reason>: <message>" for a request: the gate
// decision while it waits, the Completed condition once it is finished.
func statusLine(kr *kickv1alpha1.KickRequest) string {
	phase := kr.Status.Phase
	if phase == "" {
		phase = kickv1alpha1.PhasePending
	}
	reason, message := "", ""
	switch {
	case phase.IsTerminal():
		if c := meta.FindStatusCondition(kr.Status.Conditions, kickv1alpha1.ConditionCompleted); c != nil {
			reason, message = c.Reason, c.Message
		}
	case kr.Status.Gate != nil && (phase.IsWaiting() || kr.Status.Gate.Reason.Blocks()):
		reason, message = string(kr.Status.Gate.Reason), kr.Status.Gate.Message
	}
	line := fmt.Sprintf("%-15s", phase)
	switch {
	case reason != "" && message != "":
		line += " " + reason + ": " + message
	case reason != "":
		line += " " + reason
	case message != "":
		line += " " + message
	}
	return strings.TrimRight(line, " ")
}

// exitCode maps a terminal phase to the exit code of "restart --wait".
func exitCode(phase kickv1alpha1.KickRequestPhase) int {
	switch phase {
	case kickv1alpha1.PhaseSucceeded, kickv1alpha1.PhaseNoLongerRequired, kickv1alpha1.PhaseDryRun:
		return exitOK
	case kickv1alpha1.PhaseFailed:
		return exitFailed
	}
	return exitTimeout
}

func finish(kr *kickv1alpha1.KickRequest, stdout, stderr io.Writer) int {
	code := exitCode(kr.Status.Phase)
	if code == exitFailed {
		msg := "no reason recorded"
		if c := meta.FindStatusCondition(kr.Status.Conditions, kickv1alpha1.ConditionCompleted); c != nil {
			msg = c.Reason + ": " + c.Message
		}
		fmt.Fprintf(stderr, "kubectl kick: restart of %s/%s failed: %s\n", strings.ToLower(string(kr.Spec.TargetRef.Kind)), kr.Spec.TargetRef.Name, msg)
		return code
	}
	fmt.Fprintf(stdout, "kickrequest/%s finished: %s\n", kr.Name, kr.Status.Phase)
	return code
}

// timedOut reports the timeout of --wait. untouched is set when the request
// was reopened and KICK has not acted on it since. It adds the assessment
// explain gives right now, so the reader learns why the restart has not
// happened (a window, a GitOps gate, a rollout that does not finish).
func (s *session) timedOut(kr *kickv1alpha1.KickRequest, untouched bool, timeout time.Duration, stderr io.Writer) int {
	if untouched && kr.Status.Phase.IsTerminal() {
		fmt.Fprintf(stderr, "kubectl kick: gave up after %s waiting for KICK to act on the reopened kickrequest/%s; it still shows its old outcome: %s (is the manager running?)\n",
			timeout, kr.Name, statusLine(kr))
	} else {
		fmt.Fprintf(stderr, "kubectl kick: gave up after %s waiting for kickrequest/%s; it is still open: %s\n", timeout, kr.Name, statusLine(kr))
	}
	if summary := s.assessNow(kr.Spec.TargetRef.Kind, kr.Spec.TargetRef.Name); summary != "" {
		fmt.Fprintf(stderr, "kubectl kick: explain %s/%s: %s\n", strings.ToLower(string(kr.Spec.TargetRef.Kind)), kr.Spec.TargetRef.Name, summary)
	}
	return exitTimeout
}

// assessNow is the one-line assessment of a workload, read with a short
// deadline of its own (the wait's has passed); "" when it cannot be made.
func (s *session) assessNow(kind kickv1alpha1.TargetKind, name string) string {
	if s == nil || s.client == nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	f, err := s.gather(ctx, kind, name, time.Now())
	if err != nil {
		return ""
	}
	return analyze(f).Summary
}
