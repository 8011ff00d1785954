package main

import (
	"bytes"
	"context"
	"crypto/rand"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/kick-operator/kick/cmd/kick-devcluster/controlplane"
)

//go:embed kick-setup.yaml
var kickSetup string

// fixture is the cluster under test and the objects the benchmark created.
type fixture struct {
	c          *config
	logf       func(string, ...any)
	cluster    *controlplane.Cluster // nil with -kubeconfig
	kubeconfig string
	rest       *rest.Config
	cs         kubernetes.Interface
	dyn        dynamic.Interface
	meta       metadata.Interface
	disco      discovery.CachedDiscoveryInterface
	createdNS  bool
}

// newFixture starts the local control plane (or connects to -kubeconfig).
// The caller must close a non-nil fixture even when an error is returned.
func newFixture(ctx context.Context, c *config, logf func(string, ...any)) (*fixture, error) {
	fx := &fixture{c: c, logf: logf, kubeconfig: c.kubeconfig}
	if c.kubeconfig == "" {
		logf("starting the local control plane (%d kwok nodes)", c.nodes)
		started := time.Now()
		cl, err := controlplane.Start(ctx, controlplane.Options{BinDir: c.binDir, Nodes: c.nodes, CRDDirs: c.crdDirs, UpstreamCRDs: c.upstreamCRDs, APIServerFlags: c.serverFlags, Progress: prefixWriter{logf}})
		if err != nil {
			return nil, err
		}
		logf("control plane ready in %s at %s", time.Since(started).Round(time.Second), cl.Config.Host)
		fx.cluster, fx.kubeconfig, fx.rest = cl, cl.Kubeconfig, rest.CopyConfig(cl.Config)
	} else {
		rc, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
		if err != nil {
			return nil, err
		}
		fx.rest = rc
	}
	fx.rest.QPS, fx.rest.Burst = -1, 0 // the harness must never be the bottleneck
	// Typed calls speak protobuf: at 10x the fixture is 100,000s of 4 KiB
	// objects, and protobuf spares the API server (and the harness, on the
	// same cores) base64 and JSON for each.
	pb := rest.CopyConfig(fx.rest)
	pb.ContentType = "application/vnd.kubernetes.protobuf"
	pb.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	var err error
	if fx.cs, err = kubernetes.NewForConfig(pb); err != nil {
		return fx, err
	}
	if fx.dyn, err = dynamic.NewForConfig(fx.rest); err != nil {
		return fx, err
	}
	if fx.meta, err = metadata.NewForConfig(fx.rest); err != nil {
		return fx, err
	}
	fx.disco = memory.NewMemCacheClient(fx.cs.Discovery())
	return fx, nil
}

// close deletes the benchmark namespace of an existing cluster, or stops the
// local control plane.
func (fx *fixture) close() {
	if fx.cluster != nil {
		fx.logf("stopping the local control plane")
		fx.cluster.Stop()
		return
	}
	if fx.createdNS {
		fx.logf("deleting namespace %s", fx.c.namespace)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = fx.cs.CoreV1().Namespaces().Delete(ctx, fx.c.namespace, metav1.DeleteOptions{})
	}
}

func consumedName(i int) string { return fmt.Sprintf("app-%04d", i) }

// sharedName is the one Secret every Deployment consumes with -shared-secret.
const sharedName = "shared"

// consumedSecret is the Secret a Deployment consumes: its own, or the
// shared one.
func (fx *fixture) consumedSecret(deployment string) string {
	if fx.c.shared {
		return sharedName
	}
	return deployment
}
func unusedName(i int) string { return fmt.Sprintf("unused-%05d", i) }

// build creates the namespace, the consumed Secrets and their Deployments,
// the unconsumed Secrets, waits until every Deployment is Available and
// applies the -setup manifests.
func (fx *fixture) build(ctx context.Context) error {
	c := fx.c
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c.namespace}}
	if _, err := fx.cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("namespace %s already exists: delete it or pick another with -namespace", c.namespace)
		}
		return err
	}
	fx.createdNS = true
	started := time.Now()
	if c.shared {
		if _, err := fx.cs.CoreV1().Secrets(c.namespace).Create(ctx, fx.secret(sharedName), metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	err := parallel(ctx, c.deployments, c.createWorker, "Deployments and their Secrets", fx.logf, func(i int) error {
		name := consumedName(i)
		if !c.shared {
			if _, err := fx.cs.CoreV1().Secrets(c.namespace).Create(ctx, fx.secret(name), metav1.CreateOptions{}); err != nil {
				return err
			}
		}
		_, err := fx.cs.AppsV1().Deployments(c.namespace).Create(ctx, fx.deployment(name), metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return err
	}
	// One pool for both kinds, so the API server always has -create-workers
	// creates in flight.
	err = parallel(ctx, c.unused+c.unusedCMs, c.createWorker, "unconsumed Secrets and ConfigMaps", fx.logf, func(i int) error {
		if i < c.unused {
			_, err := fx.cs.CoreV1().Secrets(c.namespace).Create(ctx, fx.secret(unusedName(i)), metav1.CreateOptions{})
			return err
		}
		_, err := fx.cs.CoreV1().ConfigMaps(c.namespace).Create(ctx, fx.configMap(unusedName(i-c.unused)), metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return err
	}
	if err := fx.waitAllAvailable(ctx, 5*time.Minute); err != nil {
		return err
	}
	consumed := c.deployments
	if c.shared {
		consumed = 1
	}
	fx.logf("fixture ready in %s: %d Deployments Available, %d Secrets, %d ConfigMaps", time.Since(started).Round(time.Second), c.deployments, consumed+c.unused, c.unusedCMs)
	return fx.applySetup(ctx)
}

// payload returns fresh random Secret data.
func (fx *fixture) payload() map[string][]byte {
	b := make([]byte, fx.c.secretSize)
	_, _ = rand.Read(b)
	return map[string][]byte{"payload": b}
}

func (fx *fixture) secret(name string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kick-bench": "true"}},
		Data:       fx.payload(),
	}
}

// configMap is an unconsumed ConfigMap of -secret-size bytes (printable,
// as ConfigMap data must be UTF-8).
func (fx *fixture) configMap(name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kick-bench": "true"}},
		Data:       map[string]string{"payload": rand.Text() + strings.Repeat("x", max(fx.c.secretSize-26, 0))},
	}
}

func (fx *fixture) deployment(name string) *appsv1.Deployment {
	sel := map[string]string{"app": name}
	labels := map[string]string{"app": name, "kick-bench": "true"}
	for k, v := range fx.c.labels {
		labels[k] = v
	}
	annotations := map[string]string{}
	for k, v := range fx.c.annotations {
		annotations[k] = v
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: annotations},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: sel},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name:    "app",
					Image:   fx.c.image,
					EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: fx.consumedSecret(name)}}}},
				}}},
			},
		},
	}
}

// waitAllAvailable polls until every benchmark Deployment is Available. It
// is only used while no measurement runs.
func (fx *fixture) waitAllAvailable(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	lastLog := time.Time{}
	for {
		list, err := fx.cs.AppsV1().Deployments(fx.c.namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		ready := 0
		for i := range list.Items {
			if controlplane.DeploymentAvailable(&list.Items[i]) {
				ready++
			}
		}
		if ready == fx.c.deployments {
			return nil
		}
		if time.Since(lastLog) > 5*time.Second {
			fx.logf("waiting for Deployments to become Available: %d/%d", ready, fx.c.deployments)
			lastLog = time.Now()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d Deployments became Available within %s", ready, fx.c.deployments, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// applySetup server-side applies every -setup manifest, with {namespace}
// replaced; namespaced objects without a namespace land in the benchmark
// namespace.
func (fx *fixture) applySetup(ctx context.Context) error {
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(fx.disco)
	for _, src := range fx.c.setup {
		text := kickSetup
		if src != builtinKickSetup {
			data, err := os.ReadFile(fx.c.abs(src))
			if err != nil {
				return err
			}
			text = string(data)
		}
		text = strings.ReplaceAll(text, "{namespace}", fx.c.namespace)
		dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(text), 4096)
		for {
			var obj unstructured.Unstructured
			if err := dec.Decode(&obj.Object); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				return fmt.Errorf("setup %s: %w", src, err)
			}
			if len(obj.Object) == 0 {
				continue
			}
			gvk := obj.GroupVersionKind()
			m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			if err != nil {
				return fmt.Errorf("setup %s: %s: %w", src, gvk, err)
			}
			var ri dynamic.ResourceInterface = fx.dyn.Resource(m.Resource)
			if m.Scope.Name() == meta.RESTScopeNameNamespace {
				if obj.GetNamespace() == "" {
					obj.SetNamespace(fx.c.namespace)
				}
				ri = fx.dyn.Resource(m.Resource).Namespace(obj.GetNamespace())
			}
			body, err := obj.MarshalJSON()
			if err != nil {
				return err
			}
			if _, err := ri.Patch(ctx, obj.GetName(), types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: "kick-bench", Force: ptr.To(true)}); err != nil {
				return fmt.Errorf("setup %s: apply %s %s: %w", src, gvk.Kind, obj.GetName(), err)
			}
			fx.logf("setup: applied %s %s", gvk.Kind, objectKey(obj.GetNamespace(), obj.GetName()))
		}
	}
	return nil
}

func objectKey(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

// parallel runs fn(0..n-1) on a bounded worker pool, logging progress every
// few seconds, and stops at the first error.
func parallel(ctx context.Context, n, workers int, what string, logf func(string, ...any), fn func(int) error) error {
	if n == 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		next, done atomic.Int64
		firstErr   error
		once       sync.Once
		wg         sync.WaitGroup
	)
	fail := func(err error) { once.Do(func() { firstErr = err; cancel() }) }
	for range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := fn(i); err != nil {
					fail(fmt.Errorf("%s #%d: %w", what, i, err))
					return
				}
				done.Add(1)
			}
		}()
	}
	stop := make(chan struct{})
	go func() {
		tick := time.NewTicker(3 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				logf("creating %s: %d/%d", what, done.Load(), n)
			}
		}
	}()
	wg.Wait()
	close(stop)
	if firstErr == nil && ctx.Err() != nil {
		return ctx.Err()
	}
	if firstErr == nil {
		logf("created %s: %d/%d", what, n, n)
	}
	return firstErr
}

// prefixWriter turns the control plane's progress lines into log lines.
type prefixWriter struct{ logf func(string, ...any) }

func (w prefixWriter) Write(p []byte) (int, error) {
	for _, line := range bytes.Split(bytes.TrimRight(p, "\n"), []byte("\n")) {
		w.logf("control plane: %s", line)
	}
	return len(p), nil
}
