package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
)

const rootLong = `kubectl kick — restart workloads through KICK and see why they did or did not restart.

  kubectl kick restart KIND/NAME [-n NAMESPACE] [--reason TEXT] [--wait] [--timeout 10m]
  kubectl kick explain KIND/NAME [-n NAMESPACE] [-o json]
  kubectl kick list [-n NAMESPACE | -A]
  kubectl kick timeline KIND/NAME [-n NAMESPACE] [--since 2h] [-o json]
  kubectl kick preview -f FILE [-n NAMESPACE] [--delete]
  kubectl kick hold TARGET --reason TEXT [-n NAMESPACE] [--for 2h]
  kubectl kick release TARGET [-n NAMESPACE]
  kubectl kick version [-o json]
  kubectl kick completion bash|zsh|fish
  kubectl kick help [COMMAND]

KIND is deployment (deploy), statefulset (sts), daemonset (ds) or rollout.
TARGET of hold and release is namespace, secret/NAME, configmap/NAME,
secretproviderclass/NAME or KIND/NAME.
"kubectl kick COMMAND --help" describes a command and its flags.

Kubeconfig flags (--kubeconfig, --context, -n/--namespace, --as, ...) work as
in kubectl; every request is made with your own permissions.

Exit codes of "restart --wait": 0 Succeeded, NoLongerRequired or DryRun
(or not reopened because the workload already carries the change); 1 Failed
(or not reopened because KICK will not restart it); 2 timeout or bad usage.
Exit codes of "explain": 0 explained; 1 the workload or a permission is
missing; 2 bad usage. Exit codes of "preview": 0 answered; 1 the API server
refused a dry run; 2 bad usage.`

// newRootCommand builds the command tree. A subcommand that runs stores its
// exit code in *code; an error returned from executing the tree is a usage
// error.
func newRootCommand(code *int) *cobra.Command {
	cf := genericclioptions.NewConfigFlags(true)
	root := &cobra.Command{
		Use:   "kubectl-kick",
		Short: "Restart workloads through KICK and see why they did or did not restart",
		Long:  rootLong,
		// The plugin is run as "kubectl kick": help and usage say so.
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl kick"},
		Version:       version,
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err.Error()} })
	cf.AddFlags(root.PersistentFlags())
	registerNamespaceCompletion(root, cf)
	root.AddCommand(
		newRestartCommand(cf, code),
		newExplainCommand(cf, code),
		newListCommand(cf, code),
		newTimelineCommand(cf, code),
		newPreviewCommand(cf, code),
		newHoldCommand(cf, code),
		newReleaseCommand(cf, code),
		newVersionCommand(cf, code),
	)
	return root
}

// options is the command line of one subcommand: its own flags, and the
// checks of its arguments once they are parsed.
type options interface {
	addFlags(fs *pflag.FlagSet)
	validate(args []string, cf *genericclioptions.ConfigFlags) error
}

// runFunc runs a subcommand with its validated options and returns the exit
// code.
type runFunc[O options] func(ctx context.Context, o O, cf *genericclioptions.ConfigFlags, stdout, stderr io.Writer) int

// subcommand completes cmd with the flags of o and a RunE that validates
// the arguments and runs run, storing its exit code in *code.
func subcommand[O options](cmd *cobra.Command, cf *genericclioptions.ConfigFlags, code *int, o O, run runFunc[O]) *cobra.Command {
	o.addFlags(cmd.Flags())
	cmd.RunE = func(c *cobra.Command, args []string) error {
		if err := o.validate(args, cf); err != nil {
			return err
		}
		*code = run(c.Context(), o, cf, c.OutOrStdout(), c.ErrOrStderr())
		return nil
	}
	return cmd
}

// begin connects to the cluster; on failure it reports the error and
// returns the exit code with ok false.
func begin(cf *genericclioptions.ConfigFlags, stderr io.Writer) (s *session, code int, ok bool) {
	s, err := connect(cf)
	if err != nil {
		return nil, report(stderr, err), false
	}
	return s, exitOK, true
}

// noArgs is the argument check of a command that takes none.
func noArgs(command string, args []string, hint string) error {
	if len(args) > 0 {
		return usagef("%s takes no arguments, got %q%s", command, args, hint)
	}
	return nil
}

// checkOutput accepts the -o values of a command with text and JSON output.
func checkOutput(output string) error {
	switch output {
	case "", "text", "json":
		return nil
	}
	return usagef("unknown output format %q: use -o json, or leave -o out for text", output)
}

// printJSON prints v indented (-o json).
func printJSON(stdout, stderr io.Writer, v any) int {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		fmt.Fprintf(stderr, "kubectl kick: %v\n", err)
		return exitFailed
	}
	fmt.Fprintf(stdout, "%s\n", b)
	return exitOK
}
