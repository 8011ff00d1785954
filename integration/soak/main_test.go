// Package soak is the hostile-tenant soak of the fault suite (make
// soak-hostile): one kick-manager under a 256 MiB memory limit, a bystander
// tenant changing its Secrets every few seconds, first alone and then while
// an attacker tenant and a noisy namespace run every attack of issue 32 at
// once. It reports the manager's peak memory, the bystander's
// change→restart latency in both runs and the restarts lost or duplicated,
// counted from the Deployments.
//
// It runs only when KICK_SOAK names the length of each run (a Go duration,
// e.g. KICK_SOAK=3m); otherwise its test skips without starting a control
// plane, so `make test` only compiles and vets it. The lines of figures
// start with "soak:".
//
// Everyone sends as who they would be in a real cluster: the tenants and
// KICK as ServiceAccounts (identities_test.go), against an API server
// running API Priority and Fairness (KICK_SOAK_APF=false turns it off;
// KICK_SOAK_APISERVER_FLAGS adds kube-apiserver flags, e.g. in-flight
// limits).
package soak

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/integration/cluster"
	"github.com/kick-operator/kick/integration/fixture"
)

// apiServerPKI is the client certificate the API server presents to the
// preflight.
var apiServerPKI *fixture.WebhookClientPKI

func TestMain(m *testing.M) {
	if os.Getenv("KICK_SOAK") == "" {
		os.Exit(m.Run()) // the test skips itself; no control plane
	}
	if _, err := soakDuration(); err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(2)
	}
	// cluster.Main exits the process: the certificate files stay in their
	// temporary directory.
	pki, flags, _, err := fixture.WebhookClientCert()
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak: webhook client certificate:", err)
		os.Exit(1)
	}
	apiServerPKI = pki
	// The test process logs nothing through controller-runtime; say so
	// before its client warns.
	ctrllog.SetLogger(logr.Discard())
	cluster.Main(m, cluster.TestOptions{
		KickCRDs:            true,
		AddToScheme:         []func(*runtime.Scheme) error{kickv1alpha1.AddToScheme},
		APIServerFlags:      append(flags, strings.Fields(os.Getenv("KICK_SOAK_APISERVER_FLAGS"))...),
		PriorityAndFairness: priorityAndFairness(),
	})
}

// priorityAndFairness: the soak's API server runs API Priority and
// Fairness, as every real one does, unless KICK_SOAK_APF=false (to
// compare with the other suites' control plane).
func priorityAndFairness() bool { return os.Getenv("KICK_SOAK_APF") != "false" }

// soakDuration is the length of each run, from KICK_SOAK.
func soakDuration() (time.Duration, error) {
	d, err := time.ParseDuration(os.Getenv("KICK_SOAK"))
	if err != nil || d < 10*time.Second {
		return 0, fmt.Errorf("KICK_SOAK=%q: want a duration of at least 10s, e.g. 3m", os.Getenv("KICK_SOAK"))
	}
	return d, nil
}
