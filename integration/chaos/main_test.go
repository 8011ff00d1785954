// Package chaos injects faults into KICK and its control plane while
// Secrets change — the manager SIGKILLed at random moments, the leader
// replica killed, kube-apiserver stopped, etcd restarted — and counts, per
// Deployment and per round, the restarts against the changes from what the
// cluster shows (generations, restart stamps, ReplicaSets), never from
// KICK's own records: every change must restart its workload exactly once.
// Each scenario logs its figures as one line starting with "chaos:"
// (docs/operations/reliability.md keeps the table).
//
// The short form runs in `make test`; KICK_CHAOS=full (`make chaos`) runs
// the long form. The package has its own control plane, since it stops
// parts of it. The random choices come from one seed (-seed or
// KICK_CHAOS_SEED), printed so that a failure can be replayed, and the
// whole log of every manager of a failed test is kept under bin/chaos-logs
// (or $KICK_TEST_LOG_DIR).
package chaos

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/integration/cluster"
)

func TestMain(m *testing.M) {
	flag.Parse()
	seed, err := resolveSeed()
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(2)
	}
	suiteSeed = seed
	fmt.Printf("chaos: seed %d (replay with KICK_CHAOS_SEED=%d or -seed %d)\n", seed, seed, seed)
	if err := keepManagerLogs(); err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(2)
	}
	cluster.Main(m, cluster.TestOptions{
		KickCRDs:    true,
		AddToScheme: []func(*runtime.Scheme) error{kickv1alpha1.AddToScheme},
	})
}

// keepManagerLogs makes the harness keep the whole log of every manager of
// a failed test in bin/chaos-logs, unless $KICK_TEST_LOG_DIR names another
// directory: the failure output shows only each log's tail and the path.
func keepManagerLogs() error {
	if os.Getenv("KICK_TEST_LOG_DIR") != "" {
		return nil
	}
	root, err := cluster.RepoRoot()
	if err != nil {
		return err
	}
	return os.Setenv("KICK_TEST_LOG_DIR", filepath.Join(root, "bin", "chaos-logs"))
}

// full reports whether the long form was asked for (KICK_CHAOS=full).
func full() bool { return os.Getenv("KICK_CHAOS") == "full" }

// pick returns short in the short form and long in the long form.
func pick[T any](short, long T) T {
	if full() {
		return long
	}
	return short
}
