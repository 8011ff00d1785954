// Package tracing tests the manager's OpenTelemetry traces against a real
// OTLP/gRPC receiver on loopback, with the local control plane.
package tracing

import (
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
