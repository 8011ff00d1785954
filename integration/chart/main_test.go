// Package chart_test checks the Helm chart in deploy/chart/kick and the
// Grafana dashboard in deploy/grafana: the chart renders with the Helm
// library as `helm install` would, its objects match the generated RBAC and
// CRDs and the kustomize install, and the API server of the local control
// plane accepts them; the dashboard queries only metrics KICK registers.
package chart_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/integration/cluster"
)

func TestMain(m *testing.M) {
	cluster.Main(m, cluster.TestOptions{
		// The dashboard test sets up the real controllers on an unstarted
		// manager, whose indexes need KICK's kinds served.
		KickCRDs:    true,
		AddToScheme: []func(*runtime.Scheme) error{kickv1alpha1.AddToScheme},
	})
}
