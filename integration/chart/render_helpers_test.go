package chart_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/releaseutil"
	"helm.sh/helm/v3/pkg/strvals"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/kick-operator/kick/integration/cluster"
)

// chartDir is the chart's directory in the repository.
func chartDir(t testing.TB) string {
	t.Helper()
	root, err := cluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "deploy", "chart", "kick")
}

// repoPath joins parts to the repository root.
func repoPath(t testing.TB, parts ...string) string {
	t.Helper()
	root, err := cluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(append([]string{root}, parts...)...)
}

// release is what the chart rendered for one release.
type release struct {
	Name, Namespace string
	// Objects are the rendered templates' objects, sorted by kind and name.
	Objects []*unstructured.Unstructured
	// CRDs are the chart's crds/ files, which helm installs before the
	// templates (and never upgrades).
	CRDs  []chart.CRD
	Notes string
}

// render renders the chart as `helm install NAME --namespace NS --set S...`
// would, with the Helm library: user values coalesced with values.yaml and
// checked against values.schema.json, then every template executed.
func render(t testing.TB, name, namespace string, sets ...string) (*release, error) {
	t.Helper()
	return renderWith(t, engine.Engine{}, name, namespace, sets...)
}

func renderWith(t testing.TB, eng engine.Engine, name, namespace string, sets ...string) (*release, error) {
	t.Helper()
	chrt, err := loader.Load(chartDir(t))
	if err != nil {
		t.Fatalf("load the chart: %v", err)
	}
	user := map[string]any{}
	for _, s := range sets {
		if err := strvals.ParseInto(s, user); err != nil {
			t.Fatalf("--set %s: %v", s, err)
		}
	}
	vals, err := chartutil.ToRenderValues(chrt, user,
		chartutil.ReleaseOptions{Name: name, Namespace: namespace, IsInstall: true, Revision: 1}, nil)
	if err != nil {
		return nil, err
	}
	files, err := eng.Render(chrt, vals)
	if err != nil {
		return nil, err
	}
	rel := &release{Name: name, Namespace: namespace, CRDs: chrt.CRDObjects()}
	names := make([]string, 0, len(files))
	for f := range files {
		names = append(names, f)
	}
	sort.Strings(names)
	for _, f := range names {
		switch {
		case strings.HasSuffix(f, "NOTES.txt"):
			rel.Notes = files[f]
			continue
		case strings.HasPrefix(filepath.Base(f), "_"):
			continue
		}
		for _, doc := range releaseutil.SplitManifests(files[f]) {
			obj := map[string]any{}
			if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
				t.Fatalf("%s renders invalid YAML: %v\n%s", f, err, doc)
			}
			if len(obj) == 0 {
				continue
			}
			rel.Objects = append(rel.Objects, &unstructured.Unstructured{Object: obj})
		}
	}
	sort.Slice(rel.Objects, func(i, j int) bool { return key(rel.Objects[i]) < key(rel.Objects[j]) })
	return rel, nil
}

// mustRender is render for values that must be accepted.
func mustRender(t testing.TB, name, namespace string, sets ...string) *release {
	t.Helper()
	rel, err := render(t, name, namespace, sets...)
	if err != nil {
		t.Fatalf("render with %v: %v", sets, err)
	}
	return rel
}

func key(u *unstructured.Unstructured) string { return u.GetKind() + "/" + u.GetName() }

// keys lists "Kind/name" of objects.
func keys(objs []*unstructured.Unstructured) []string {
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		out = append(out, key(o))
	}
	sort.Strings(out)
	return out
}

// get returns the object of kind and name, or nil.
func (r *release) get(kind, name string) *unstructured.Unstructured {
	for _, o := range r.Objects {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

func (r *release) mustGet(t testing.TB, kind, name string) *unstructured.Unstructured {
	t.Helper()
	o := r.get(kind, name)
	if o == nil {
		t.Fatalf("the chart rendered no %s %s; it rendered %v", kind, name, keys(r.Objects))
	}
	return o
}

// ofKind returns the objects of kind.
func (r *release) ofKind(kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range r.Objects {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// managerArgs are the manager container's args.
func (r *release) managerArgs(t testing.TB) []string {
	t.Helper()
	c := managerContainer(t, r.mustGet(t, "Deployment", r.manager()))
	args, _, err := unstructured.NestedStringSlice(c, "args")
	if err != nil {
		t.Fatal(err)
	}
	return args
}

// manager is the name the chart gives the manager's objects.
func (r *release) manager() string {
	if strings.Contains(r.Name, "kick") {
		return r.Name + "-manager"
	}
	return r.Name + "-kick-manager"
}

func managerContainer(t testing.TB, d *unstructured.Unstructured) map[string]any {
	t.Helper()
	cs, _, err := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	if err != nil || len(cs) != 1 {
		t.Fatalf("%s has not exactly one container (%v): %v", key(d), err, cs)
	}
	return cs[0].(map[string]any)
}

// manifest writes objects as one multi-document YAML stream, CRDs first.
func (r *release) manifest(t testing.TB, skip func(*unstructured.Unstructured) bool) []byte {
	t.Helper()
	var b bytes.Buffer
	for _, crd := range r.CRDs {
		b.WriteString("---\n")
		b.Write(crd.File.Data)
		b.WriteString("\n")
	}
	for _, o := range r.Objects {
		if skip != nil && skip(o) {
			continue
		}
		data, err := yaml.Marshal(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString("---\n")
		b.Write(data)
	}
	return b.Bytes()
}

// readDocs parses a multi-document YAML file into objects (empty documents,
// such as the one before controller-gen's leading "---", are dropped).
func readDocs(t testing.TB, data []byte) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		obj := map[string]any{}
		if err := yaml.Unmarshal(doc, &obj); err != nil {
			t.Fatal(err)
		}
		if len(obj) > 0 {
			out = append(out, &unstructured.Unstructured{Object: obj})
		}
	}
}

// generated returns the document of kind in a generated RBAC file under
// deploy/rbac (not the chart's copy, so a stale copy is caught too).
func generated(t testing.TB, kind string, path ...string) *unstructured.Unstructured {
	t.Helper()
	file := repoPath(t, append([]string{"deploy", "rbac"}, path...)...)
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range readDocs(t, data) {
		if o.GetKind() == kind {
			return o
		}
	}
	t.Fatalf("%s holds no %s", file, kind)
	return nil
}

// sameJSON compares two values by their JSON encoding.
func sameJSON(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}

// kubectl runs the control plane's kubectl against the test cluster.
func kubectl(t testing.TB, stdin []byte, args ...string) (string, error) {
	t.Helper()
	env := cluster.Get(t)
	cmd := exec.Command(filepath.Join(cluster.K8sBinDir(t), "kubectl"), append([]string{"--kubeconfig", env.Cluster.Kubeconfig}, args...)...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// kustomize builds a kustomization directory with kubectl.
func kustomize(t testing.TB, dir string) []*unstructured.Unstructured {
	t.Helper()
	out, err := exec.Command(filepath.Join(cluster.K8sBinDir(t), "kubectl"), "kustomize", dir).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("kubectl kustomize %s: %v\n%s", dir, err, ee.Stderr)
		}
		t.Fatalf("kubectl kustomize %s: %v", dir, err)
	}
	return readDocs(t, out)
}

// integrations maps the chart's values keys to the integration names used
// for deploy/rbac/NAME, the chart's ClusterRole suffix and the manager flag.
var integrations = []struct {
	key, name, flag string
	defaultOn       bool
}{
	{"argocd", "argocd", "--enable-argocd", true},
	{"flux", "flux", "--enable-flux", true},
	{"kargo", "kargo", "--enable-kargo", false},
	{"argoRollouts", "argo-rollouts", "--enable-argo-rollouts", false},
	{"secretsStoreCSI", "secrets-store-csi", "--enable-csi-integration", false},
}

// enabledSet returns the integration names that are on after sets.
func enabledSet(sets ...string) map[string]bool {
	on := map[string]bool{}
	for _, in := range integrations {
		on[in.name] = in.defaultOn
		for _, s := range sets {
			switch s {
			case "integrations." + in.key + ".enabled=true":
				on[in.name] = true
			case "integrations." + in.key + ".enabled=false":
				on[in.name] = false
			}
		}
	}
	return on
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
