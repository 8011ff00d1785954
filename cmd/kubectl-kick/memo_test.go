package main

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// countingClient counts the reads that reach the client under the memo.
type countingClient struct {
	client.WithWatch
	gets, lists int
}

func (c *countingClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.gets++
	return c.WithWatch.Get(ctx, key, obj, opts...)
}

func (c *countingClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	c.lists++
	return c.WithWatch.List(ctx, list, opts...)
}

// The memo answers a repeated list, a get of an object a list returned and
// a repeated miss without reading again, and hands out copies the caller
// may change.
func TestMemoReader(t *testing.T) {
	scheme, err := newScheme()
	if err != nil {
		t.Fatal(err)
	}
	web := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", Labels: map[string]string{"app": "web"}}}
	under := &countingClient{WithWatch: fake.NewClientBuilder().WithScheme(scheme).WithObjects(web).Build()}
	m := newMemoReader(under)
	ctx := context.Background()
	for range 3 {
		var list appsv1.DeploymentList
		if err := m.List(ctx, &list, client.InNamespace("shop")); err != nil || len(list.Items) != 1 {
			t.Fatalf("list = %d items, %v", len(list.Items), err)
		}
		list.Items[0].Labels["app"] = "changed by the caller"
	}
	var got appsv1.Deployment
	if err := m.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "web"}, &got); err != nil || got.Labels["app"] != "web" {
		t.Fatalf("get = %v %v, want the listed web unchanged", got.Labels, err)
	}
	for range 2 {
		if err := m.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "gone"}, &got); !apierrors.IsNotFound(err) {
			t.Fatalf("get of a missing object = %v, want NotFound", err)
		}
	}
	if under.lists != 1 || under.gets != 1 {
		t.Errorf("%d lists and %d gets reached the client, want 1 and 1 (the miss)", under.lists, under.gets)
	}
	var other appsv1.DeploymentList
	if err := m.List(ctx, &other, client.InNamespace("other")); err != nil || under.lists != 2 {
		t.Errorf("a list of another namespace was answered from the memo (%d lists, %v)", under.lists, err)
	}
}
