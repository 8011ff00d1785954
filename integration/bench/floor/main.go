// Command floor is the smallest restart controller that still does the
// benchmark's job, used as a lower bound when reading `make bench` results:
// it watches the Secrets and Deployments of one namespace through client-go
// informers (Secret data replaced by a hash at transform time, as KICK does),
// and when a Secret's content changes it patches the restartedAt annotation
// of every Deployment that consumes it. It keeps no records, creates no
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
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/workqueue"
)

const hashAnnotation = "bench-floor/hash"

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the cluster")
	namespace := flag.String("namespace", "bench", "namespace of the workloads and Secrets")
	workers := flag.Int("workers", 8, "concurrent restarts")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *kubeconfig, *namespace, *workers); err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, kubeconfig, namespace string, workers int) error {
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
	secrets := factory.Core().V1().Secrets().Informer()
	if err := secrets.SetTransform(hashData); err != nil {
		return err
	}
	deployments := factory.Apps().V1().Deployments().Informer()
	if err := deployments.AddIndexers(cache.Indexers{"secret": secretsOf}); err != nil {
		return err
	}
	queue := workqueue.NewTyped[types.NamespacedName]()
	_, err = secrets.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(oldObj, newObj any) {
			o, n := oldObj.(*corev1.Secret), newObj.(*corev1.Secret)
			if o.Annotations[hashAnnotation] != n.Annotations[hashAnnotation] {
				queue.Add(types.NamespacedName{Namespace: n.Namespace, Name: n.Name})
			}
		},
	})
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
				consumers, _ := deployments.GetIndexer().ByIndex("secret", key.String())
				for _, obj := range consumers {
					d := obj.(*appsv1.Deployment)
					stamp := time.Now().UTC().Format(time.RFC3339Nano)
					patch := fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":%q}}}}}`, stamp)
					if _, err := cs.AppsV1().Deployments(d.Namespace).Patch(ctx, d.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
						fmt.Fprintln(os.Stderr, "floor: patch:", err)
					}
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
