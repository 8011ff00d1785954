package indexed

import (
	"context"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// imageIndex indexes Deployments by their containers' images.
const imageIndex = "test.kick.corewire.io/image"

func imagesOf(obj client.Object) []string {
	var out []string
	for _, c := range obj.(*appsv1.Deployment).Spec.Template.Spec.Containers {
		out = append(out, c.Image)
	}
	return out
}

func deployment(namespace, name, image string) *appsv1.Deployment {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "app", Image: image}}
	return d
}

func newDeploymentList() client.ObjectList { return &appsv1.DeploymentList{} }

func names(objs []*appsv1.Deployment) []string {
	out := []string{}
	for _, o := range objs {
		out = append(out, o.Namespace+"/"+o.Name)
	}
	slices.Sort(out)
	return out
}

var fixture = []*appsv1.Deployment{
	deployment("shop", "web", "web:v1"),
	deployment("shop", "api", "api:v1"),
	deployment("shop", "worker", "web:v1"),
	deployment("blog", "web", "web:v1"),
}

// queries every read must answer the same, directly or through a List.
var queries = []struct {
	name, namespace, image string
	want                   []string
}{
	{"one namespace", "shop", "web:v1", []string{"shop/web", "shop/worker"}},
	{"another namespace", "blog", "web:v1", []string{"blog/web"}},
	{"every namespace", "", "web:v1", []string{"blog/web", "shop/web", "shop/worker"}},
	{"no match", "shop", "db:v1", []string{}},
}

// TestIndexesReadControllerRuntimesIndex holds the direct reads to the
// index controller-runtime itself builds: its informer cache (created but
// never started, so no API server is involved) gets a field index
// registered the way the manager registers its own, and the objects put in
// the informer's store must be found, the very same objects. If
// controller-runtime renamed its field indexes or changed their keys, the
// reads would quietly fall back to the List (or miss objects); this test
// fails instead.
func TestIndexesReadControllerRuntimesIndex(t *testing.T) {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(appsv1.SchemeGroupVersion.WithKind("Deployment"), meta.RESTScopeNamespace)
	// Nothing listens on the discard port: the cache is never started.
	c, err := cache.New(&rest.Config{Host: "http://127.0.0.1:9"}, cache.Options{Scheme: scheme, Mapper: mapper})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.IndexField(ctx, &appsv1.Deployment{}, imageIndex, imagesOf); err != nil {
		t.Fatal(err)
	}
	inf, err := c.GetInformer(ctx, &appsv1.Deployment{}, cache.BlockUntilSynced(false))
	if err != nil {
		t.Fatal(err)
	}
	store := inf.(interface{ GetIndexer() toolscache.Indexer }).GetIndexer()
	for _, d := range fixture {
		if err := store.Add(d); err != nil {
			t.Fatal(err)
		}
	}
	// No List may answer: the embedded client is nil and would panic.
	r := &Client{Indexes: NewIndexes(c)}
	for _, q := range queries {
		got, err := ByField[appsv1.Deployment](ctx, r, newDeploymentList, q.namespace, imageIndex, q.image)
		if err != nil {
			t.Fatalf("%s: %v", q.name, err)
		}
		if !slices.Equal(names(got), q.want) {
			t.Errorf("%s: got %v, want %v", q.name, names(got), q.want)
		}
	}
	got, err := InNamespace[appsv1.Deployment](ctx, r, newDeploymentList, "blog")
	if err != nil || !slices.Equal(names(got), []string{"blog/web"}) {
		t.Fatalf("InNamespace(blog) = %v, %v; want [blog/web]", names(got), err)
	}
	if got[0] != fixture[3] {
		t.Error("the read returned a copy; want the cache's own object")
	}
}

// TestReadsWithoutIndexesList: a reader that is not a Client, or a Client
// whose cache cannot hand out the index, is answered by a List with the
// same result.
func TestReadsWithoutIndexesList(t *testing.T) {
	ctx := context.Background()
	objs := make([]client.Object, len(fixture))
	for i, d := range fixture {
		objs[i] = d.DeepCopy()
	}
	listing := fake.NewClientBuilder().WithObjects(objs...).WithIndex(&appsv1.Deployment{}, imageIndex, imagesOf).Build()
	for name, r := range map[string]client.Reader{
		"a plain reader":           listing,
		"a Client without a cache": &Client{Client: listing, Indexes: NewIndexes(nil)},
		"a Client, no such index":  &Client{Client: listing, Indexes: NewIndexes(unindexed{})},
	} {
		for _, q := range queries {
			got, err := ByField[appsv1.Deployment](ctx, r, newDeploymentList, q.namespace, imageIndex, q.image)
			if err != nil {
				t.Fatalf("%s, %s: %v", name, q.name, err)
			}
			if !slices.Equal(names(got), q.want) {
				t.Errorf("%s, %s: got %v, want %v", name, q.name, names(got), q.want)
			}
		}
		got, err := InNamespace[appsv1.Deployment](ctx, r, newDeploymentList, "shop")
		if want := []string{"shop/api", "shop/web", "shop/worker"}; err != nil || !slices.Equal(names(got), want) {
			t.Errorf("%s: InNamespace(shop) = %v, %v; want %v", name, names(got), err, want)
		}
	}
}

// unindexed hands out informers without the test's field index.
type unindexed struct{}

func (unindexed) GetInformer(context.Context, client.Object, ...cache.InformerGetOption) (cache.Informer, error) {
	return toolscache.NewSharedIndexInformer(&toolscache.ListWatch{}, &appsv1.Deployment{}, 0, toolscache.Indexers{}), nil
}
