package controlplane

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// kwokNodeAnnotation marks the nodes kwok manages.
const kwokNodeAnnotation = "kwok.x-k8s.io/node"

// probeNamespace holds the Deployment that proves the cluster can run pods.
const probeNamespace = "kick-devcluster-probe"

func (c *Cluster) bootstrap(ctx context.Context) error {
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	c.progress("creating %d kwok node(s)", c.opts.Nodes)
	for i := 0; i < c.opts.Nodes; i++ {
		if err := createNode(ctx, cs, fmt.Sprintf("kwok-node-%d", i)); err != nil {
			return err
		}
	}
	if err := c.waitNodesSchedulable(ctx, cs); err != nil {
		return err
	}
	dirs := append([]string(nil), c.opts.CRDDirs...)
	if c.opts.UpstreamCRDs {
		dirs = append(dirs, filepath.Join(c.opts.BinDir, "crds"))
	}
	if len(dirs) > 0 {
		c.progress("installing CRDs from %s", strings.Join(dirs, ", "))
		if err := InstallCRDs(ctx, c.Config, dirs...); err != nil {
			return err
		}
	}
	c.progress("waiting until a Deployment becomes Available")
	return c.probeDeployment(ctx, cs)
}

func createNode(ctx context.Context, cs kubernetes.Interface, name string) error {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{kwokNodeAnnotation: "fake"},
			Labels: map[string]string{
				"kubernetes.io/hostname": name,
				"kubernetes.io/os":       "linux",
				"kubernetes.io/arch":     "amd64",
				"type":                   "kwok",
			},
		},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{},
			Capacity:    corev1.ResourceList{},
		},
	}
	_, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create node %s: %w", name, err)
	}
	return nil
}

// waitNodesSchedulable waits for every node to be Ready and free of the
// not-ready taint, which the node-lifecycle controller removes.
func (c *Cluster) waitNodesSchedulable(ctx context.Context, cs kubernetes.Interface) error {
	return WaitFor(ctx, 90*time.Second, nil, "kwok nodes to become Ready and untainted", func() (bool, error) {
		for _, p := range c.procs {
			if done, err := p.Exited(); done {
				return false, fmt.Errorf("%s exited: %v", p.name, err)
			}
		}
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		ready := 0
		for _, n := range nodes.Items {
			if nodeReady(&n) && !hasTaint(&n, corev1.TaintNodeNotReady) {
				ready++
			}
		}
		return ready >= c.opts.Nodes, nil
	})
}

func nodeReady(n *corev1.Node) bool {
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

func hasTaint(n *corev1.Node, key string) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}

func (c *Cluster) probeDeployment(ctx context.Context, cs kubernetes.Interface) error {
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: probeNamespace}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create probe namespace: %w", err)
	}
	labels := map[string]string{"app": "probe"}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: probeNamespace},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}},
			},
		},
	}
	if _, err := cs.AppsV1().Deployments(probeNamespace).Create(ctx, dep, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create probe deployment: %w", err)
	}
	err = WaitFor(ctx, 120*time.Second, nil, "the probe Deployment to become Available", func() (bool, error) {
		d, err := cs.AppsV1().Deployments(probeNamespace).Get(ctx, "probe", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		return DeploymentAvailable(d), nil
	})
	if err != nil {
		return err
	}
	return cs.CoreV1().Namespaces().Delete(ctx, probeNamespace, metav1.DeleteOptions{})
}

// DeploymentAvailable reports whether the controller has observed the
// Deployment's current generation and every replica is updated and available.
func DeploymentAvailable(d *appsv1.Deployment) bool {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	return d.Status.ObservedGeneration >= d.Generation &&
		d.Status.UpdatedReplicas == want && d.Status.AvailableReplicas == want && d.Status.Replicas == want
}
