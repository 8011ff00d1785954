package admission

import (
	"context"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// memReader is a client.Reader over objects held in memory with field
// indexes, reading like the informer cache does (a deep copy per object
// returned unless the list asks for none, an index lookup for
// MatchingFields), for the benchmark.
type memReader struct {
	scheme  *runtime.Scheme
	objects map[schema.GroupVersionKind]map[client.ObjectKey]client.Object
	// index[gvk][field][namespace/value] lists keys.
	index   map[schema.GroupVersionKind]map[string]map[string][]client.ObjectKey
	indexFn map[schema.GroupVersionKind]map[string]client.IndexerFunc
}

func newMemReader(s *runtime.Scheme) *memReader {
	return &memReader{scheme: s, objects: map[schema.GroupVersionKind]map[client.ObjectKey]client.Object{},
		index: map[schema.GroupVersionKind]map[string]map[string][]client.ObjectKey{}, indexFn: map[schema.GroupVersionKind]map[string]client.IndexerFunc{}}
}

func (m *memReader) gvk(o runtime.Object) schema.GroupVersionKind {
	gvk, err := m.gvkErr(o)
	if err != nil {
		panic(err)
	}
	return gvk
}

func (m *memReader) gvkErr(o runtime.Object) (schema.GroupVersionKind, error) {
	gvks, _, err := m.scheme.ObjectKinds(o)
	if err != nil {
		return schema.GroupVersionKind{}, err
	}
	return gvks[0], nil
}

func (m *memReader) addIndex(o client.Object, field string, fn client.IndexerFunc) {
	g := m.gvk(o)
	if m.indexFn[g] == nil {
		m.indexFn[g] = map[string]client.IndexerFunc{}
	}
	m.indexFn[g][field] = fn
}

func (m *memReader) add(objs ...client.Object) {
	for _, o := range objs {
		g := m.gvk(o)
		if m.objects[g] == nil {
			m.objects[g] = map[client.ObjectKey]client.Object{}
		}
		k := client.ObjectKeyFromObject(o)
		m.objects[g][k] = o
		for field, fn := range m.indexFn[g] {
			if m.index[g] == nil {
				m.index[g] = map[string]map[string][]client.ObjectKey{}
			}
			if m.index[g][field] == nil {
				m.index[g][field] = map[string][]client.ObjectKey{}
			}
			for _, v := range fn(o) {
				m.index[g][field][o.GetNamespace()+"/"+v] = append(m.index[g][field][o.GetNamespace()+"/"+v], k)
			}
		}
	}
}

func (m *memReader) Get(_ context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	var gopts client.GetOptions
	gopts.ApplyOptions(opts)
	g, err := m.gvkErr(obj)
	if err != nil {
		return err
	}
	o, ok := m.objects[g][key]
	if !ok {
		return errors.NewNotFound(schema.GroupResource{Resource: g.Kind}, key.Name)
	}
	if gopts.UnsafeDisableDeepCopy == nil || !*gopts.UnsafeDisableDeepCopy {
		o = o.DeepCopyObject().(client.Object)
	}
	reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(o).Elem())
	return nil
}

func (m *memReader) List(_ context.Context, list client.ObjectList, opts ...client.ListOption) error {
	lo := (&client.ListOptions{}).ApplyOptions(opts)
	lg, err := m.gvkErr(list)
	if err != nil {
		return err
	}
	g := lg.GroupVersion().WithKind(lg.Kind[:len(lg.Kind)-len("List")])
	var items []runtime.Object
	copyOf := func(o client.Object) runtime.Object {
		if lo.UnsafeDisableDeepCopy != nil && *lo.UnsafeDisableDeepCopy {
			return o
		}
		return o.DeepCopyObject()
	}
	if lo.FieldSelector != nil && !lo.FieldSelector.Empty() {
		reqs := lo.FieldSelector.Requirements()
		if len(reqs) != 1 || reqs[0].Operator != "=" && reqs[0].Operator != "==" {
			return fmt.Errorf("unsupported field selector %s", lo.FieldSelector)
		}
		for _, k := range m.index[g][reqs[0].Field][lo.Namespace+"/"+reqs[0].Value] {
			items = append(items, copyOf(m.objects[g][k]))
		}
	} else {
		for k, o := range m.objects[g] {
			if lo.Namespace == "" || k.Namespace == lo.Namespace {
				items = append(items, copyOf(o))
			}
		}
	}
	_ = fields.Everything
	return meta.SetList(list, items)
}
