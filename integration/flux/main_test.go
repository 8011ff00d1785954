// Package flux proves the Flux gate end to end: the real kick-manager on
// the local control plane with the upstream Kustomization and HelmRelease
// CRDs, whose status the tests write through the status subresource the
// way kustomize-controller and helm-controller do.
package flux

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	fluxgate "github.com/kick-operator/kick/gitops/flux"
	"github.com/kick-operator/kick/integration/cluster"
)

func TestMain(m *testing.M) {
	cluster.Main(m, cluster.TestOptions{
		KickCRDs:     true,
		UpstreamCRDs: true,
		AddToScheme:  []func(*runtime.Scheme) error{kickv1alpha1.AddToScheme, fluxgate.AddToScheme},
	})
}
