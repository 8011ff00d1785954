// Command floor is the smallest restart controller that still does the
// benchmark's job, used as a lower bound when reading `make bench` results:
// it watches the Deployments of one namespace and its Secrets through
// client-go informers and, when a consumed Secret's content changes, patches
// the restartedAt annotation of every Deployment that consumes it. With
// -cache metadata (the default, as KICK does) Secrets are watched
// metadata-only and a consumed one is read when its resourceVersion moves;
// with -cache full they are watched whole and their data hashed at
// transform time. It keeps no records, creates no
// requests, has no gates and survives nothing: whatever time or memory KICK
// spends above this floor is the price of those guarantees; whatever the
// floor itself needs is the price of the cluster and of client-go.
//
//	go run ./integration/bench -controller "bin/bench-floor --kubeconfig {kubeconfig} --namespace {namespace}" -setup "" -ready-url "" -metrics-url ""
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"sync"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/workqueue"
)

const hashAnnotation = "bench-floor/hash"

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the cluster")
	namespace := flag.String("namespace", "bench", "namespace of the workloads and Secrets")
	workers := flag.Int("workers", 8, "concurrent restarts")
	mode := flag.String("cache", "metadata", "how Secrets are watched: metadata or full")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *kubeconfig, *namespace, *workers, *mode == "full"); err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, kubeconfig, namespace string, workers int, full bool) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = -1, -1 // no client-side throttling, like KICK
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(namespace))
	deployments := factory.Apps().V1().Deployments().Informer()
	if err := deployments.AddIndexers(cache.Indexers{"secret": secretsOf}); err != nil {
		return err
	}
	consumed := func(key string) bool {
		d, _ := deployments.GetIndexer().ByIndex("secret", key)
		return len(d) > 0
	}
	queue := workqueue.NewTyped[types.NamespacedName]()
	// hashes holds the content hash of consumed Secrets (metadata mode).
	var mu sync.Mutex
	hashes := map[types.NamespacedName]string{}
	changed := func(key types.NamespacedName) bool { return true }

	var secrets cache.SharedIndexInformer
	if full {
		secrets = factory.Core().V1().Secrets().Informer()
		if err := secrets.SetTransform(hashData); err != nil {
			return err
		}
		_, err = secrets.AddEventHandler(cache.ResourceEventHandlerFuncs{
			UpdateFunc: func(oldObj, newObj any) {
				o, n := oldObj.(*corev1.Secret), newObj.(*corev1.Secret)
				if o.Annotations[hashAnnotation] != n.Annotations[hashAnnotation] && consumed(n.Namespace+"/"+n.Name) {
					queue.Add(types.NamespacedName{Namespace: n.Namespace, Name: n.Name})
				}
			},
		})
	} else {
		mc, merr := metadata.NewForConfig(cfg)
		if merr != nil {
			return merr
		}
		mf := metadatainformer.NewFilteredSharedInformerFactory(mc, 0, namespace, nil)
		secrets = mf.ForResource(corev1.SchemeGroupVersion.WithResource("secrets")).Informer()
		if err := secrets.SetTransform(keepIdentity); err != nil {
			return err
		}
		remember := func(obj any) {
			m := obj.(*metav1.PartialObjectMetadata)
			if consumed(m.Namespace + "/" + m.Name) {
				queue.Add(types.NamespacedName{Namespace: m.Namespace, Name: m.Name})
			}
		}
		_, err = secrets.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: remember,
			UpdateFunc: func(oldObj, newObj any) {
				if oldObj.(*metav1.PartialObjectMetadata).ResourceVersion != newObj.(*metav1.PartialObjectMetadata).ResourceVersion {
					remember(newObj)
				}
			},
		})
		// A consumed Secret is read when it moves; only a new content hash
		// restarts (the first read is the baseline).
		changed = func(key types.NamespacedName) bool {
			rv := ""
			if m, ok, _ := secrets.GetIndexer().GetByKey(key.String()); ok {
				rv = m.(*metav1.PartialObjectMetadata).ResourceVersion
			}
			s, err := cs.CoreV1().Secrets(key.Namespace).Get(ctx, key.Name, metav1.GetOptions{ResourceVersion: rv})
			if err != nil {
				return false
			}
			h, _ := hashData(s)
			sum := h.(*corev1.Secret).Annotations[hashAnnotation]
			mu.Lock()
			defer mu.Unlock()
			prev, seen := hashes[key]
			hashes[key] = sum
			return seen && prev != sum
		}
		// Deployments first: the initial Secret events ask who consumes them.
		factory.Start(ctx.Done())
		factory.WaitForCacheSync(ctx.Done())
		mf.Start(ctx.Done())
		mf.WaitForCacheSync(ctx.Done())
	}
	if err != nil {
		return err
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	fmt.Println("floor: caches synced")

	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				key, shutdown := queue.Get()
				if shutdown {
					return
				}
				if changed(key) {
					restart(ctx, cs, deployments, key)
				}
				queue.Done(key)
			}
		}()
	}
	<-ctx.Done()
	queue.ShutDown()
	wg.Wait()
	return nil
}

// restart patches every Deployment consuming the Secret.
func restart(ctx context.Context, cs kubernetes.Interface, deployments cache.SharedIndexInformer, key types.NamespacedName) {
	consumers, _ := deployments.GetIndexer().ByIndex("secret", key.String())
	for _, obj := range consumers {
		d := obj.(*appsv1.Deployment)
		stamp := time.Now().UTC().Format(time.RFC3339Nano)
		patch := fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":%q}}}}}`, stamp)
		if _, err := cs.AppsV1().Deployments(d.Namespace).Patch(ctx, d.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			fmt.Fprintln(os.Stderr, "floor: patch:", err)
		}
	}
}

// keepIdentity cuts cached Secret metadata down to its identity.
func keepIdentity(obj any) (any, error) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return obj, nil
	}
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		Namespace: m.Namespace, Name: m.Name, UID: m.UID, ResourceVersion: m.ResourceVersion,
	}}, nil
}

// hashData replaces a Secret's data with a hash of it, so the cache holds
// no Secret content.
func hashData(obj any) (any, error) {
	s, ok := obj.(*corev1.Secret)
	if !ok {
		return obj, nil
	}
	keys := make([]string, 0, len(s.Data))
	for k := range s.Data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	for _, k := range keys {
		fmt.Fprintf(h, "%d:%s%d:", len(k), k, len(s.Data[k]))
		h.Write(s.Data[k])
	}
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	s.Annotations[hashAnnotation] = hex.EncodeToString(h.Sum(nil))
	s.Data, s.StringData, s.ManagedFields = nil, nil, nil
	return s, nil
}

// secretsOf indexes a Deployment by the Secrets its containers read
// through envFrom, env and volumes.
func secretsOf(obj any) ([]string, error) {
	d, ok := obj.(*appsv1.Deployment)
	if !ok {
		return nil, nil
	}
	var out []string
	add := func(name string) { out = append(out, d.Namespace+"/"+name) }
	spec := d.Spec.Template.Spec
	for _, c := range append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...) {
		for _, e := range c.EnvFrom {
			if e.SecretRef != nil {
				add(e.SecretRef.Name)
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				add(e.ValueFrom.SecretKeyRef.Name)
			}
		}
	}
	for _, v := range spec.Volumes {
		if v.Secret != nil {
			add(v.Secret.SecretName)
		}
	}
	return out, nil
}
