package observe

import (
	"context"
	"errors"
	"maps"
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

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/restart/discovery"
	"github.com/kick-operator/kick/restart/indexed"
	"github.com/kick-operator/kick/restart/workload"
)

// fakeInformers hands out informers (never started: only their indexers
// are read) and counts the calls.
type fakeInformers struct {
	informer toolscache.SharedIndexInformer
	err      error
	calls    int
}

func (f *fakeInformers) GetInformer(context.Context, client.Object, ...cache.InformerGetOption) (cache.Informer, error) {
	f.calls++
	if f.err != nil {
		return nil, f.err
	}
	return f.informer, nil
}

// informerWithSourceIndex is an informer indexed the way the manager's
// cache indexes discovery.SourceIndex: "NAMESPACE/VALUE" under
// "field:NAME".
func informerWithSourceIndex(t *testing.T, withIndex bool, objs ...*appsv1.Deployment) toolscache.SharedIndexInformer {
	t.Helper()
	indexers := toolscache.Indexers{}
	if withIndex {
		indexers[indexed.IndexName(discovery.SourceIndex)] = func(obj any) ([]string, error) {
			d := obj.(*appsv1.Deployment)
			var keys []string
			for _, dep := range discovery.FromWorkload(d) {
				keys = append(keys, indexed.Key(d.Namespace, discovery.IndexKey(dep.Kind, dep.Name)))
			}
			return keys, nil
		}
	}
	inf := toolscache.NewSharedIndexInformer(&toolscache.ListWatch{}, &appsv1.Deployment{}, 0, indexers)
	for _, d := range objs {
		if err := inf.GetIndexer().Add(d); err != nil {
			t.Fatal(err)
		}
	}
	return inf
}

func TestConsumerIndex(t *testing.T) {
	ctx := context.Background()
	kind, _ := workload.Builtin().Lookup(kickv1alpha1.TargetDeployment)
	web := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}}
	web.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "db", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "db"}}}}
	db := discovery.IndexKey(discovery.KindSecret, "db")

	t.Run("indexed", func(t *testing.T) {
		f := &fakeInformers{informer: informerWithSourceIndex(t, true, web)}
		c := &consumerIndex{indexes: indexed.NewIndexes(f)}
		for _, tc := range []struct {
			namespace, key string
			want           bool
		}{
			{"shop", db, true},
			{"other", db, false}, // same name, another namespace
			{"shop", discovery.IndexKey(discovery.KindSecret, "unused"), false},
			{"shop", discovery.IndexKey(discovery.KindConfigMap, "db"), false}, // a ConfigMap of the same name
		} {
			consumed, answered := c.consumed(ctx, *kind, tc.namespace, tc.key)
			if !answered || consumed != tc.want {
				t.Errorf("%s %s: consumed %v, answered %v; want %v, answered", tc.namespace, tc.key, consumed, answered, tc.want)
			}
		}
		if f.calls != 1 {
			t.Errorf("the informer was looked up %d times, want once", f.calls)
		}
	})
	t.Run("no such index", func(t *testing.T) {
		c := &consumerIndex{indexes: indexed.NewIndexes(&fakeInformers{informer: informerWithSourceIndex(t, false, web)})}
		if _, answered := c.consumed(ctx, *kind, "shop", db); answered {
			t.Error("answered without the index; want the List to answer")
		}
	})
	t.Run("informer not available yet", func(t *testing.T) {
		f := &fakeInformers{err: errors.New("cache not started")}
		c := &consumerIndex{indexes: indexed.NewIndexes(f)}
		if _, answered := c.consumed(ctx, *kind, "shop", db); answered {
			t.Error("answered without an informer")
		}
		f.err, f.informer = nil, informerWithSourceIndex(t, true, web)
		if consumed, answered := c.consumed(ctx, *kind, "shop", db); !answered || !consumed {
			t.Errorf("after the informer came: consumed %v, answered %v; want both", consumed, answered)
		}
	})
	t.Run("no cache", func(t *testing.T) {
		var c *consumerIndex
		if _, answered := c.consumed(ctx, *kind, "shop", db); answered {
			t.Error("a nil index answered")
		}
	})
}

// TestConsumerIndexReadsControllerRuntimesIndex holds consumerIndex to the
// index controller-runtime itself builds: its informer cache (created but
// never started, so no API server is involved) gets discovery.SourceIndex
// registered the way the manager registers it, and a Deployment in the
// informer's store must be found directly. If controller-runtime renamed
// its field indexes or changed their key format, followed would quietly
// fall back to the slow List (or miss consumers); this test fails instead.
func TestConsumerIndexReadsControllerRuntimesIndex(t *testing.T) {
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
	if err := discovery.RegisterIndexesFor(ctx, c, &appsv1.Deployment{}); err != nil {
		t.Fatal(err)
	}
	inf, err := c.GetInformer(ctx, &appsv1.Deployment{}, cache.BlockUntilSynced(false))
	if err != nil {
		t.Fatal(err)
	}
	web := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}}
	web.Spec.Template.Spec.Containers = []corev1.Container{{Name: "app", EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}}}}}}
	store, ok := inf.(interface{ GetIndexer() toolscache.Indexer })
	if !ok {
		t.Fatalf("controller-runtime's informer %T exposes no indexer", inf)
	}
	if err := store.GetIndexer().Add(web); err != nil {
		t.Fatal(err)
	}

	kind, _ := workload.Builtin().Lookup(kickv1alpha1.TargetDeployment)
	idx := &consumerIndex{indexes: indexed.NewIndexes(c)}
	if consumed, answered := idx.consumed(ctx, *kind, "shop", discovery.IndexKey(discovery.KindSecret, "db")); !answered || !consumed {
		t.Fatalf("consumed %v, answered %v; want both: controller-runtime's index is not where consumerIndex reads it (indexes: %v)",
			consumed, answered, slices.Collect(maps.Keys(store.GetIndexer().GetIndexers())))
	}
	if consumed, answered := idx.consumed(ctx, *kind, "other", discovery.IndexKey(discovery.KindSecret, "db")); !answered || consumed {
		t.Errorf("another namespace: consumed %v, answered %v; want not consumed, answered", consumed, answered)
	}
}

// consumed reports whether consumers found any.
func (c *consumerIndex) consumed(ctx context.Context, wk workload.Kind, namespace, key string) (consumed, answered bool) {
	objs, answered := c.consumers(ctx, wk, namespace, key)
	return len(objs) > 0, answered
}
