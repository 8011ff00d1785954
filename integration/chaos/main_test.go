// Package chaos injects faults into KICK and its control plane while
// Secrets change — the manager SIGKILLed at random moments, the leader
// replica killed, kube-apiserver stopped, etcd restarted — and counts, per
// Deployment, the restarts against the changes: every change must restart
// its workload exactly once. Each scenario logs its figures as one line
// starting with "chaos:" (docs/operations/reliability.md keeps the table).
//
// The short form runs in `make test`; KICK_CHAOS=full (`make chaos`) runs
// the long form. The package has its own control plane, since it stops
// parts of it.
package chaos

import (
	"os"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/integration/cluster"
)

func TestMain(m *testing.M) {
	cluster.Main(m, cluster.TestOptions{
		KickCRDs:    true,
		AddToScheme: []func(*runtime.Scheme) error{kickv1alpha1.AddToScheme},
	})
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
