package request

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/assess"
	"github.com/kick-operator/kick/restart/discovery"
	"github.com/kick-operator/kick/restart/policy"
)

// metadataOnlyReader is the manager's cache as this package may read it: a typed Secret or
// ConfigMap read would start an informer holding every one of them in full.
type metadataOnlyReader struct {
	client.Reader
	t *testing.T
}

func (r metadataOnlyReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*metav1.PartialObjectMetadata); !ok {
		r.t.Errorf("%T %s read through the cache, want metadata only", obj, key)
	}
	return r.Reader.Get(ctx, key, obj, opts...)
}

func TestDependencyLabelsAreReadMetadataOnly(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "in", Labels: map[string]string{"kick": "yes"}}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "out"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "in", Labels: map[string]string{"kick": "yes"}}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "out"}},
	).Build()
	p := &kickv1alpha1.KickPolicy{Spec: kickv1alpha1.KickPolicySpec{Discovery: &kickv1alpha1.DiscoverySpec{
		DependencySelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kick": "yes"}}}}}
	r := metadataOnlyReader{Reader: c, t: t}
	for _, kind := range []string{discovery.KindSecret, discovery.KindConfigMap} {
		for name, want := range map[string]bool{"in": true, "out": false, "missing": false} {
			dep := discovery.Dependency{APIVersion: discovery.CoreAPIVersion, Kind: kind, Name: name}
			d := assess.Dependency{Kind: kind, Name: name, Counted: true}
			if err := readLabels(context.Background(), r, "ns", dep, &d); err != nil {
				t.Fatal(err)
			}
			if got := policy.DependencyInScope(p, d.Labels) && !d.Missing; got != want {
				t.Errorf("%s %s: in scope = %v (labels %v, missing %v); want %v", kind, name, got, d.Labels, d.Missing, want)
			}
			if name == "missing" && !d.Missing {
				t.Errorf("%s %s: not reported missing", kind, name)
			}
		}
	}
}
