package discovery

import (
	"context"
	"errors"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func template(spec *corev1.PodSpec) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "x"}}, Spec: *spec}
}

func deployment(spec *corev1.PodSpec) *appsv1.Deployment {
	return &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Template: template(spec)}}
}

func TestPodTemplate(t *testing.T) {
	spec := &corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}
	d := deployment(spec)
	s := &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{Template: template(spec)}}
	ds := &appsv1.DaemonSet{Spec: appsv1.DaemonSetSpec{Template: template(spec)}}
	tests := []struct {
		name   string
		obj    client.Object
		want   *corev1.PodTemplateSpec
		wantOK bool
	}{
		{"deployment", d, &d.Spec.Template, true},
		{"statefulset", s, &s.Spec.Template, true},
		{"daemonset", ds, &ds.Spec.Template, true},
		{"typed nil deployment", (*appsv1.Deployment)(nil), nil, false},
		{"typed nil statefulset", (*appsv1.StatefulSet)(nil), nil, false},
		{"typed nil daemonset", (*appsv1.DaemonSet)(nil), nil, false},
		{"nil interface", nil, nil, false},
		{"replicaset is not a managed workload", &appsv1.ReplicaSet{Spec: appsv1.ReplicaSetSpec{Template: template(spec)}}, nil, false},
		{"pod is not a workload", &corev1.Pod{Spec: *spec}, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := PodTemplate(tt.obj)
			if ok != tt.wantOK || got != tt.want {
				t.Fatalf("PodTemplate() = %p, %v; want %p, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestIndexFunc(t *testing.T) {
	spec := &corev1.PodSpec{
		ImagePullSecrets: []corev1.LocalObjectReference{{Name: "registry"}},
		Containers:       []corev1.Container{{Env: []corev1.EnvVar{secretEnv("db"), configMapEnv("settings")}}},
		Volumes: []corev1.Volume{
			secretVolume("db"),
			csiVolume("secrets-store.csi.k8s.io", map[string]string{"secretProviderClass": "vault"}),
		},
	}
	want := []string{"ConfigMap/settings", "Secret/db", "SecretProviderClass/vault"}
	tests := []struct {
		name string
		obj  client.Object
		want []string
	}{
		{"deployment", deployment(spec), want},
		{"statefulset", &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{Template: template(spec)}}, want},
		{"daemonset", &appsv1.DaemonSet{Spec: appsv1.DaemonSetSpec{Template: template(spec)}}, want},
		{"workload without dependencies", deployment(&corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}), nil},
		{"unsupported object", &corev1.Secret{}, nil},
		{"typed nil", (*appsv1.Deployment)(nil), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IndexFunc(tt.obj); !slices.Equal(got, tt.want) {
				t.Fatalf("IndexFunc() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestIndexKey(t *testing.T) {
	if got := IndexKey("Secret", "db"); got != "Secret/db" {
		t.Fatalf("IndexKey = %q", got)
	}
	// The key a controller builds for a changed source must match what
	// IndexFunc files the consumer under.
	d := deployment(&corev1.PodSpec{Volumes: []corev1.Volume{configMapVolume("nginx")}})
	if !slices.Contains(IndexFunc(d), IndexKey(KindConfigMap, "nginx")) {
		t.Fatalf("IndexFunc(%v) lacks %q", IndexFunc(d), IndexKey(KindConfigMap, "nginx"))
	}
}

// recordingIndexer is a client.FieldIndexer that records registrations.
type recordingIndexer struct {
	objs   []client.Object
	fields []string
	funcs  []client.IndexerFunc
	err    error
}

func (r *recordingIndexer) IndexField(_ context.Context, obj client.Object, field string, fn client.IndexerFunc) error {
	if r.err != nil {
		return r.err
	}
	r.objs, r.fields, r.funcs = append(r.objs, obj), append(r.fields, field), append(r.funcs, fn)
	return nil
}

func TestRegisterIndexes(t *testing.T) {
	var rec recordingIndexer
	if err := RegisterIndexes(context.Background(), &rec); err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for i, obj := range rec.objs {
		if rec.fields[i] != SourceIndex {
			t.Errorf("registered field %q, want %q", rec.fields[i], SourceIndex)
		}
		switch obj.(type) {
		case *appsv1.Deployment:
			kinds = append(kinds, "Deployment")
		case *appsv1.StatefulSet:
			kinds = append(kinds, "StatefulSet")
		case *appsv1.DaemonSet:
			kinds = append(kinds, "DaemonSet")
		default:
			t.Errorf("unexpected object %T", obj)
		}
		if _, ok := PodTemplate(obj); !ok {
			t.Errorf("registered %T, which PodTemplate does not support", obj)
		}
		if got := rec.funcs[i](deployment(&corev1.PodSpec{Volumes: []corev1.Volume{secretVolume("x")}})); !slices.Equal(got, []string{"Secret/x"}) {
			t.Errorf("registered func returned %q", got)
		}
	}
	if !slices.Equal(kinds, []string{"Deployment", "StatefulSet", "DaemonSet"}) {
		t.Fatalf("registered %v", kinds)
	}

	boom := errors.New("boom")
	if err := RegisterIndexes(context.Background(), &recordingIndexer{err: boom}); !errors.Is(err, boom) {
		t.Fatalf("RegisterIndexes error = %v, want wrapping %v", err, boom)
	}
}
