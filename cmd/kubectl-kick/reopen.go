package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
)

// since marks where a wait starts: only outcomes after it count.
type since struct {
	// change is the change annotation this command wrote to reopen a
	// finished request; empty when it created the request or found it open.
	change string
}

// answered reports whether KICK has taken the written change into account.
func (m since) answered(kr *kickv1alpha1.KickRequest) bool {
	return m.change == "" || kr.Status.ObservedChange == m.change
}

// declinedReopen returns KICK's Reopened=False condition when it answered
// the written change by not reopening the request.
func (m since) declinedReopen(kr *kickv1alpha1.KickRequest) *metav1.Condition {
	if m.change == "" || !m.answered(kr) {
		return nil
	}
	c := meta.FindStatusCondition(kr.Status.Conditions, kickv1alpha1.ConditionReopened)
	if c == nil || c.Status != "False" {
		return nil
	}
	return c
}

// done reports whether kr holds the outcome this command waits for.
func (m since) done(kr *kickv1alpha1.KickRequest) bool {
	return m.answered(kr) && kr.Status.Phase.IsTerminal()
}

// notReopened reports a reopen KICK declined: exit 0 when there was
// nothing to restart (the pods already carry the change, or a dry run
// already reported it), 1 when KICK will not restart the target.
func notReopened(kr *kickv1alpha1.KickRequest, c *metav1.Condition, now time.Time, stdout, stderr io.Writer) int {
	target := strings.ToLower(string(kr.Spec.TargetRef.Kind)) + "/" + kr.Spec.TargetRef.Name
	switch c.Reason {
	case kickv1alpha1.ReasonAlreadyCarried, kickv1alpha1.ReasonNoNewerChange:
		fmt.Fprintf(stdout, "%s %-15s %s\n", now.Format("15:04:05"), "NotReopened", c.Message)
		fmt.Fprintf(stdout, "kickrequest/%s finished: not reopened, nothing to restart (it stays %s)\n", kr.Name, kr.Status.Phase)
		return exitOK
	}
	fmt.Fprintf(stderr, "kubectl kick: restart of %s failed: KICK did not reopen kickrequest/%s (it stays %s): %s: %s\n",
		target, kr.Name, kr.Status.Phase, c.Reason, c.Message)
	return exitFailed
}
