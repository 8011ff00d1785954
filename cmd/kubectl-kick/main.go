// Command kubectl-kick is the KICK command line for people and CI: it asks
// for a restart through a KickRequest and waits for the outcome, lists
// requests, and explains why a workload did or did not restart. It works as
// a kubectl plugin ("kubectl kick ...") and on its own.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
)

const help = `kubectl kick — restart workloads through KICK and see why they did or did not restart.

Usage:
  kubectl kick restart KIND/NAME [-n NAMESPACE] [--reason TEXT] [--wait] [--timeout 10m]
  kubectl kick explain KIND/NAME [-n NAMESPACE] [-o json]
  kubectl kick list [-n NAMESPACE | -A]
  kubectl kick timeline KIND/NAME [-n NAMESPACE] [--since 2h] [-o json]
  kubectl kick preview -f FILE [-n NAMESPACE] [--delete]
  kubectl kick help

KIND is deployment (deploy), statefulset (sts), daemonset (ds) or rollout.
"restart" asks KICK to restart the workload through the KickRequest KICK
itself uses for it ("<kind>-<name>"): it creates the request, reopens it
when it is finished, or follows it when it is still open. KICK only
restarts workloads a KickPolicy selects, within the policy's schedule.

"explain" says what KICK sees for a workload: the KickPolicy selecting it,
each dependency with its last relevant change, the rollout start, the
verdict (fresh, stale, rollout in progress, cannot assess), what the gate
says now and the workload's KickRequest. It only reads, and never shows
Secret values, keys or fingerprints. Kinds: deployment, statefulset,
daemonset.

"timeline" prints what happened to a workload, one line each, oldest
first: source changes, gate waits with their reasons, requests, restarts
and completions, and the Kubernetes Events about the workload and its
KickRequests, with durations ("restarted 0.8 s after the change; waited
3h12m for ..."). It reads KickRequests, SourceObservations and Events
through the API server (no port-forward); the manager's timeline UI shows
the same entries with more history.

"preview" asks the API server to apply (or with --delete, delete) the
Secrets and ConfigMaps of FILE as a dry run and prints what KICK's
admission preflight answers: which workloads it will restart, and when.
Nothing is written. It needs the preflight enabled in the manager
(--preflight); "kubectl apply --dry-run=server" shows the same warnings.

Kubeconfig flags (--kubeconfig, --context, -n/--namespace, --as, ...) work as
in kubectl; the request is made with your own permissions.

Exit codes of "restart --wait": 0 Succeeded, NoLongerRequired or DryRun
(or not reopened because the workload already carries the change); 1 Failed
(or not reopened because KICK will not restart it); 2 timeout or bad usage.
Exit codes of "explain": 0 explained; 1 the workload or a permission is
missing; 2 bad usage. Exit codes of "preview": 0 answered; 1 the API server
refused a dry run; 2 bad usage.
`

// Exit codes.
const (
	exitOK      = 0
	exitFailed  = 1
	exitUsage   = 2
	exitTimeout = 2
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := runContext(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(args []string, stdout, stderr io.Writer) int {
	return runContext(context.Background(), args, stdout, stderr)
}

func runContext(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stdout, help)
		return exitOK
	}
	switch args[0] {
	case "help", "-h", "--help":
		fmt.Fprint(stdout, help)
		return exitOK
	case "restart":
		return runRestart(ctx, args[1:], stdout, stderr)
	case "list", "ls":
		return runList(ctx, args[1:], stdout, stderr)
	case "explain":
		return runExplain(ctx, args[1:], stdout, stderr)
	case "timeline":
		return runTimeline(ctx, args[1:], stdout, stderr)
	case "preview":
		return runPreview(ctx, args[1:], stdout, stderr)
	default:
		fmt.Fprintf(stderr, "kubectl kick: unknown command %q\n\n%s", args[0], help)
		return exitUsage
	}
}

// usageError is a mistake in the command line: exit code 2, with a hint.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return usageError{fmt.Sprintf(format, a...)} }

// newFlagSet returns a flag set for a subcommand with the kubeconfig flags.
func newFlagSet(name string) (*pflag.FlagSet, *genericclioptions.ConfigFlags) {
	fs := pflag.NewFlagSet("kubectl kick "+name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported by the caller
	cf := genericclioptions.NewConfigFlags(true)
	cf.AddFlags(fs)
	return fs, cf
}

// parseFlags parses args; -h/--help prints help and reports done.
func parseFlags(fs *pflag.FlagSet, args []string) (helpRequested bool, err error) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return true, nil
		}
		return false, usageError{err.Error()}
	}
	return false, nil
}

// begin parses a subcommand's arguments with parse and connects to the
// cluster. ok false means the command is over (help printed, or a usage or
// connection error reported) with exit code code.
func begin[O any](args []string, parse func([]string) (O, *genericclioptions.ConfigFlags, bool, error), stdout, stderr io.Writer) (o O, s *session, code int, ok bool) {
	o, cf, helpRequested, err := parse(args)
	if helpRequested {
		fmt.Fprint(stdout, help)
		return o, nil, exitOK, false
	}
	if err != nil {
		return o, nil, report(stderr, err), false
	}
	if s, err = connect(cf); err != nil {
		return o, nil, report(stderr, err), false
	}
	return o, s, exitOK, true
}

// session is a connection to the cluster with the caller's credentials.
type session struct {
	client    client.WithWatch
	namespace string
}

func newScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, kickv1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	return scheme, nil
}

func connect(cf *genericclioptions.ConfigFlags) (*session, error) {
	cfg, err := cf.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	ns, _, err := cf.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	scheme, err := newScheme()
	if err != nil {
		return nil, err
	}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("connect to the cluster: %w", err)
	}
	return &session{client: c, namespace: ns}, nil
}

// report prints err to stderr and returns the exit code it maps to.
func report(stderr io.Writer, err error) int {
	var ue usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(stderr, "kubectl kick: %s\nRun \"kubectl kick help\" for usage.\n", ue.msg)
		return exitUsage
	}
	fmt.Fprintf(stderr, "kubectl kick: %v\n", err)
	return exitUsage
}
