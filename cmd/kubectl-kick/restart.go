package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/assess"
)

const restartLong = `Ask KICK to restart a workload through the KickRequest KICK itself uses for
it ("<kind>-<name>", e.g. deployment-web): create the request, reopen it when
it is finished, or follow it when it is still open. KICK only restarts
workloads a KickPolicy selects, within the policy's schedule. See the
requests with "kubectl kick list".

KIND is deployment (deploy), statefulset (sts), daemonset (ds) or rollout.

Exit codes with --wait: 0 Succeeded, NoLongerRequired or DryRun (or not
reopened because the workload already carries the change); 1 Failed (or not
reopened because KICK will not restart it); 2 timeout, bad usage or an API
error. Without --wait: 0 the request was created, reopened or is open; 2
bad usage or an API error.`

const restartExample = `  # Ask for a restart of the Deployment web in namespace shop
  kubectl kick restart deployment/web -n shop --reason "rotated the DB password"

  # In CI: wait for the outcome, at most 5 minutes; the exit code reports it
  kubectl kick restart sts/db --wait --timeout 5m`

// restartOptions is the parsed command line of "restart".
type restartOptions struct {
	kind    kickv1alpha1.TargetKind
	name    string
	reason  string
	wait    bool
	timeout time.Duration
}

func (o *restartOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.reason, "reason", "", "why the restart is needed (copied into events and notifications; no secrets)")
	fs.BoolVar(&o.wait, "wait", false, "follow the request until it finishes; the exit code reports the outcome")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Minute, "how long --wait waits before giving up (exit code 2)")
}

func (o *restartOptions) validate(args []string, _ *genericclioptions.ConfigFlags) (err error) {
	if o.kind, o.name, err = targetArg(args, "restart"); err != nil {
		return err
	}
	if o.timeout <= 0 {
		return usagef("--timeout must be positive, got %s", o.timeout)
	}
	return nil
}

func newRestartCommand(cf *genericclioptions.ConfigFlags, code *int) *cobra.Command {
	return subcommand(&cobra.Command{
		Use:               "restart KIND/NAME",
		Short:             "Ask KICK to restart a workload, and optionally wait for the outcome",
		Long:              restartLong,
		Example:           restartExample,
		ValidArgsFunction: completeTarget(cf, allKinds),
	}, cf, code, &restartOptions{}, runRestart)
}

func runRestart(ctx context.Context, o *restartOptions, cf *genericclioptions.ConfigFlags, stdout, stderr io.Writer) int {
	s, code, ok := begin(cf, stderr)
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
