// Command kubectl-kick is the KICK command line for people and CI: it asks
// for a restart through a KickRequest and waits for the outcome, lists
// requests, and explains why a workload did or did not restart. It works as
// a kubectl plugin ("kubectl kick ...") and on its own.
//
// The commands are built with cobra and the kubeconfig flags of
// k8s.io/cli-runtime, as kubectl plugins conventionally are: root.go holds
// the command tree, and each subcommand lives in a file of its own.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

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

// runContext runs the command line args and returns the exit code. A
// subcommand reports its own outcome through the code it sets; an error
// that reaches here is a mistake in the command line (exit code 2).
func runContext(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	code := exitOK
	root := newRootCommand(&code)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return code
	}
	path := root.CommandPath()
	if cmd != nil {
		path = cmd.CommandPath()
	}
	fmt.Fprintf(stderr, "kubectl kick: %s\nRun \"%s --help\" for usage.\n", err, path)
	return exitUsage
}

// usageError is a mistake in the command line: exit code 2, with a hint.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return usageError{fmt.Sprintf(format, a...)} }

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
