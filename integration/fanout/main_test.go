// Package fanout proves the restart budget on the local control plane with
// the real kick-manager binary: a fan-out of one Secret change to many
// Deployments never has more rollouts in progress than the policy's
// restart.maxConcurrent or the manager's --max-concurrent-restarts allow,
// counted from the Deployments' own status, and the cluster's slots go to
// namespaces in turn.
package fanout

import (
	"strings"
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

// leads reports whether a replica's /metrics say it leads.
func leads(metrics string) bool {
	return strings.Contains(metrics, `leader_election_master_status{name="kick-manager.kick.corewire.io"} 1`)
}
