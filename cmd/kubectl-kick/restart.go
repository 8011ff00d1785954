package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/assess"
)

const requestsResource = "kickrequests.kick.corewire.io"

// kindAliases maps the accepted spellings (lower case) to a target kind.
var kindAliases = map[string]kickv1alpha1.TargetKind{
	"deployment": kickv1alpha1.TargetDeployment, "deployments": kickv1alpha1.TargetDeployment, "deploy": kickv1alpha1.TargetDeployment,
	"statefulset": kickv1alpha1.TargetStatefulSet, "statefulsets": kickv1alpha1.TargetStatefulSet, "sts": kickv1alpha1.TargetStatefulSet,
	"daemonset": kickv1alpha1.TargetDaemonSet, "daemonsets": kickv1alpha1.TargetDaemonSet, "ds": kickv1alpha1.TargetDaemonSet,
	"rollout": kickv1alpha1.TargetRollout, "rollouts": kickv1alpha1.TargetRollout,
}

// parseKind resolves a kind or alias, case-insensitively.
func parseKind(s string) (kickv1alpha1.TargetKind, error) {
	if k, ok := kindAliases[strings.ToLower(s)]; ok {
		return k, nil
	}
	return "", usagef("unknown kind %q: use deployment (deploy), statefulset (sts), daemonset (ds) or rollout", s)
}

// parseTarget parses KIND/NAME.
// targetArg reads the one KIND/NAME argument of a command.
func targetArg(fs *pflag.FlagSet, command string) (kickv1alpha1.TargetKind, string, error) {
	switch fs.NArg() {
	case 0:
		return "", "", usagef("%s needs KIND/NAME, e.g. kubectl kick %s deployment/web", command, command)
	case 1:
		return parseTarget(fs.Arg(0))
	}
	return "", "", usagef("%s takes one KIND/NAME, got %q", command, fs.Args())
}

func parseTarget(s string) (kickv1alpha1.TargetKind, string, error) {
	kindStr, name, ok := strings.Cut(s, "/")
	if !ok {
		return "", "", usagef("%q is not KIND/NAME, e.g. deployment/web", s)
	}
	kind, err := parseKind(kindStr)
	if err != nil {
		return "", "", err
	}
	if name == "" {
		return "", "", usagef("missing name in %q, e.g. %s/web", s, strings.ToLower(string(kind)))
	}
	if strings.Contains(name, "/") {
		return "", "", usagef("%q is not KIND/NAME, e.g. deployment/web", s)
	}
	return kind, name, nil
}

// restartOptions is the parsed command line of "restart".
type restartOptions struct {
	kind    kickv1alpha1.TargetKind
	name    string
	reason  string
	wait    bool
	timeout time.Duration
}

func parseRestart(args []string) (*restartOptions, *genericclioptions.ConfigFlags, bool, error) {
	fs, cf := newFlagSet("restart")
	o := &restartOptions{}
	fs.StringVar(&o.reason, "reason", "", "why the restart is needed (copied into events and notifications; no secrets)")
	fs.BoolVar(&o.wait, "wait", false, "follow the request until it finishes; the exit code reports the outcome")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Minute, "how long --wait waits before giving up (exit code 2)")
	helpRequested, err := parseFlags(fs, args)
	if err != nil || helpRequested {
		return nil, nil, helpRequested, err
	}
	if o.kind, o.name, err = targetArg(fs, "restart"); err != nil {
		return nil, nil, false, err
	}
	if o.timeout <= 0 {
		return nil, nil, false, usagef("--timeout must be positive, got %s", o.timeout)
	}
	return o, cf, false, nil
}

func runRestart(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, s, code, ok := begin(args, parseRestart, stdout, stderr)
	if !ok {
		return code
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	return s.restart(ctx, o, stdout, stderr)
}

func (s *session) restart(ctx context.Context, o *restartOptions, stdout, stderr io.Writer) int {
	key := client.ObjectKey{Namespace: s.namespace, Name: kickv1alpha1.RequestName(o.kind, o.name)}
	target := fmt.Sprintf("%s/%s", strings.ToLower(string(o.kind)), o.name)
	kr := &kickv1alpha1.KickRequest{}
	var mark since
	err := s.client.Get(ctx, key, kr)
	if err == nil && (kr.Spec.TargetRef.Kind != o.kind || kr.Spec.TargetRef.Name != o.name) {
		// The usual name is taken by a request for another workload: a name
		// never proves a target. Create a request of our own next to it.
		fresh := newRequest(key, o)
		fresh.Name, fresh.GenerateName = "", key.Name+"-"
		if err := s.client.Create(ctx, fresh); err != nil {
			return report(stderr, apiError("create", key.Namespace, err))
		}
		fmt.Fprintf(stdout, "kickrequest/%s created for %s in namespace %s (kickrequest/%s targets %s/%s)\n",
			fresh.Name, target, key.Namespace, key.Name, strings.ToLower(string(kr.Spec.TargetRef.Kind)), kr.Spec.TargetRef.Name)
		kr = fresh
		if !o.wait {
			return exitOK
		}
		return s.follow(ctx, kr, mark, o.timeout, stdout, stderr)
	}
	switch {
	case apierrors.IsNotFound(err):
		kr = newRequest(key, o)
		if err := s.client.Create(ctx, kr); err != nil {
			if apierrors.IsAlreadyExists(err) {
				// KICK created it meanwhile: follow it.
				if err := s.client.Get(ctx, key, kr); err != nil {
					return report(stderr, apiError("get", key.Namespace, err))
				}
				fmt.Fprintf(stdout, "kickrequest/%s for %s is already open (created by KICK)\n", key.Name, target)
				break
			}
			return report(stderr, apiError("create", key.Namespace, err))
		}
		fmt.Fprintf(stdout, "kickrequest/%s created for %s in namespace %s\n", key.Name, target, key.Namespace)
	case err != nil:
		return report(stderr, apiError("get", key.Namespace, err))
	case kr.Status.Phase.IsTerminal():
		old := kr.Status.Phase
		patch, change := reopenPatch(kr, o.reason, time.Now())
		if err := s.client.Patch(ctx, kr, client.RawPatch(types.MergePatchType, patch)); err != nil {
			return report(stderr, apiError("patch", key.Namespace, err))
		}
		mark = since{change: change}
		fmt.Fprintf(stdout, "kickrequest/%s reopened for %s in namespace %s (was %s)\n", key.Name, target, key.Namespace, old)
	default:
		phase := kr.Status.Phase
		if phase == "" {
			phase = kickv1alpha1.PhasePending
		}
		fmt.Fprintf(stdout, "kickrequest/%s for %s is already open (%s)", key.Name, target, phase)
		if !o.wait {
			fmt.Fprint(stdout, "; use --wait to follow it")
		}
		fmt.Fprintln(stdout)
	}
	if !o.wait {
		return exitOK
	}
	return s.follow(ctx, kr, mark, o.timeout, stdout, stderr)
}

func newRequest(key client.ObjectKey, o *restartOptions) *kickv1alpha1.KickRequest {
	apiVersion := kickv1alpha1.AppsV1APIVersion
	if o.kind == kickv1alpha1.TargetRollout {
		apiVersion = kickv1alpha1.ArgoRolloutsAPIVersion
	}
	// No managed-by label: KICK treats the request as a person's and
	// restarts even when the pods carry every recorded change.
	return &kickv1alpha1.KickRequest{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name},
		Spec: kickv1alpha1.KickRequestSpec{
			TargetRef: kickv1alpha1.TargetRef{APIVersion: apiVersion, Kind: o.kind, Name: o.name},
			Reason:    o.reason,
		},
	}
}

// reopenPatch is the merge patch that reopens a finished request: a change
// at now in kickv1alpha1.ChangeAnnotation (never earlier than the one already
// there, in the reconciler's format: RFC 3339 with nanoseconds, UTC) and
// the new reason (or none). It drops the previous cycle's traceparent: a
// person's restart is a trace of its own.
func reopenPatch(kr *kickv1alpha1.KickRequest, reason string, now time.Time) ([]byte, string) {
	change := now.UTC()
	if known := assess.AnnotatedChange(kr); known.Latest.After(change) {
		// Never earlier than the change already there.
		change = known.Latest
	}
	var r any
	if reason != "" {
		r = reason
	}
	value := change.Format(time.RFC3339Nano)
	patch := map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{kickv1alpha1.ChangeAnnotation: value, kickv1alpha1.TraceparentAnnotation: nil}},
		"spec":     map[string]any{"reason": r},
	}
	b, _ := json.Marshal(patch)
	return b, value
}

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
	if s == nil || s.client == nil || kind == kickv1alpha1.TargetRollout {
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

// apiError explains an API error; for Forbidden it names the permission
// the caller lacks.
func apiError(verb, namespace string, err error) error {
	switch {
	case apierrors.IsForbidden(err):
		where := "in namespace " + namespace
		if namespace == "" {
			where = "cluster-wide"
		}
		return fmt.Errorf("permission denied: you need %q on %s %s (ask for a Role granting it)\n  %v", verb, requestsResource, where, err)
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("not authenticated to the cluster; check your kubeconfig and credentials: %v", err)
	case meta.IsNoMatchError(err) || isMissingResource(err):
		return fmt.Errorf("the KickRequest API (%s) is not installed in this cluster; install KICK first: %v", kickv1alpha1.GroupVersion, err)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("the API server did not answer in time: %v", err)
	}
	return fmt.Errorf("%s %s: %v", verb, requestsResource, err)
}

func isMissingResource(err error) bool {
	var se apierrors.APIStatus
	if !errors.As(err, &se) {
		return false
	}
	d := se.Status().Details
	return apierrors.IsNotFound(err) && (d == nil || d.Name == "")
}
