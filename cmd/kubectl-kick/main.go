// Command kubectl-kick is the KICK command line for people and CI: it asks
// for a restart through a KickRequest and waits for the outcome, lists
// requests, and explains why a workload did or did not restart. It works as
// a kubectl plugin ("kubectl kick ...") and on its own.
package main

import (
	"fmt"
	"io"
	"os"
)

const help = `kubectl kick — restart workloads through KICK and see why they did or did not restart.

Usage:
  kubectl kick restart KIND/NAME [-n NAMESPACE] [--reason TEXT] [--wait] [--timeout 10m]
  kubectl kick explain KIND/NAME [-n NAMESPACE]
  kubectl kick list [-n NAMESPACE | -A]
  kubectl kick help

KIND is deployment, statefulset, daemonset or rollout.
Exit codes of "restart --wait": 0 Succeeded, NoLongerRequired or DryRun;
1 Failed; 2 timeout or bad usage.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stdout, help)
		return 0
	}
	switch args[0] {
	case "help", "-h", "--help":
		fmt.Fprint(stdout, help)
		return 0
	default:
		fmt.Fprintf(stderr, "kubectl kick: %q is not available yet in this build\n\n%s", args[0], help)
		return 2
	}
}
