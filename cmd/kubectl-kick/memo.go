package main

import (
	"context"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// memoReader answers each distinct read once: explaining a source explains
// each of its consumers, which read the same policies, requests, records
// and ReplicaSets. Objects a list returned answer later gets of them too.
// It lives for one command, so it never serves stale answers for long.
type memoReader struct {
	client.WithWatch
	answers map[string]memoAnswer
}

type memoAnswer struct {
	obj runtime.Object
	err error
}

func newMemoReader(c client.WithWatch) *memoReader {
	return &memoReader{WithWatch: c, answers: map[string]memoAnswer{}}
}

func getKey(obj runtime.Object, key client.ObjectKey) string {
	return fmt.Sprintf("get %T %s %s", obj, kindOfUntyped(obj), key)
}

// kindOfUntyped is the kind a metadata-only object stands for; a typed
// object's type says its kind (and its TypeMeta may be empty or not).
func kindOfUntyped(obj runtime.Object) string {
	switch obj.(type) {
	case *metav1.PartialObjectMetadata, *metav1.PartialObjectMetadataList:
		return obj.GetObjectKind().GroupVersionKind().String()
	}
	return ""
}

// Get answers from an earlier read of the same object, else reads it.
func (m *memoReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	k := getKey(obj, key)
	if a, ok := m.answers[k]; ok {
		return a.copyInto(obj)
	}
	err := m.WithWatch.Get(ctx, key, obj, opts...)
	m.answers[k] = memoAnswer{obj: obj.DeepCopyObject(), err: err}
	return err
}

// List answers from an earlier identical list, else lists and remembers
// each item for Get.
func (m *memoReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	var o client.ListOptions
	o.ApplyOptions(opts)
	k := fmt.Sprintf("list %T %s %s label=%v field=%v", list, kindOfUntyped(list), o.Namespace, o.LabelSelector, o.FieldSelector)
	if a, ok := m.answers[k]; ok {
		return a.copyInto(list)
	}
	err := m.WithWatch.List(ctx, list, opts...)
	m.answers[k] = memoAnswer{obj: list.DeepCopyObject(), err: err}
	if err != nil {
		return err
	}
	items, _ := meta.ExtractList(list)
	for _, item := range items {
		if obj, ok := item.(client.Object); ok {
			m.answers[getKey(obj, client.ObjectKeyFromObject(obj))] = memoAnswer{obj: obj.DeepCopyObject()}
		}
	}
	return nil
}

// copyInto gives the caller its own copy of the remembered answer.
func (a memoAnswer) copyInto(dst runtime.Object) error {
	if a.err != nil {
		return a.err
	}
	src := reflect.ValueOf(a.obj.DeepCopyObject())
	d := reflect.ValueOf(dst)
	if src.Type() != d.Type() {
		return fmt.Errorf("memo: %T remembered for %T", a.obj, dst)
	}
	d.Elem().Set(src.Elem())
	return nil
}
