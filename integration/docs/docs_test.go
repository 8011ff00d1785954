// Package docs keeps the user documentation honest: every ```yaml block
// in docs/**/*.md is applied to the local control plane (KICK's and the
// upstream CRDs installed) with a server-side dry run and strict field
// validation, Helm values blocks are rendered with the chart, kustomize
// overlays are built, and every relative link must point to an existing
// file and heading.
//
// Info strings of YAML blocks:
//
//	```yaml                Kubernetes objects (one or more documents); applied
//	```yaml values         Helm values for deploy/chart/kick: every key must exist
//	                       in values.yaml, the chart's schema must accept them and
//	                       the chart must render with them
//	```yaml kustomization  a kustomize overlay of deploy/: paths ending in
//	                       deploy/... are pointed at this checkout, built and applied
//	```yaml ci             a CI pipeline definition: parsed only
//
// Objects keep their names; each namespace an example names (shop, argocd,
// kick-system, ...) is replaced by a fresh namespace created for that
// block, so examples need not avoid each other.
package docs

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	kickv1alpha1 "github.com/kick-operator/kick/api/v1alpha1"
	"github.com/kick-operator/kick/integration/cluster"
)

func TestMain(m *testing.M) {
	cluster.Main(m, cluster.TestOptions{
		KickCRDs:     true,
		UpstreamCRDs: true,
		AddToScheme:  []func(*runtime.Scheme) error{kickv1alpha1.AddToScheme},
	})
}

// yamlBlocks returns every YAML block of the docs.
func yamlBlocks(t *testing.T, root string) []block {
	t.Helper()
	var out []block
	for _, p := range readPages(t, root) {
		bs, err := blocks(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range bs {
			if b.lang == "yaml" || b.lang == "yml" {
				out = append(out, b)
			}
		}
	}
	return out
}

// TestYAMLExamples applies every YAML example of the docs.
func TestYAMLExamples(t *testing.T) {
	env := cluster.Get(t)
	all := yamlBlocks(t, env.RepoRoot)
	// A broken extractor must not pass by finding nothing.
	if len(all) < 20 {
		t.Fatalf("found only %d YAML blocks under docs/; the extractor is broken or the examples are gone", len(all))
	}
	counts := map[string]int{}
	for _, b := range all {
		kind := strings.Join(b.tags, " ")
		counts[kind]++
		t.Run(b.String(), func(t *testing.T) {
			if strings.TrimSpace(b.body) == "" {
				t.Fatal("empty YAML block")
			}
			switch kind {
			case "":
				applyObjects(t, env, b)
			case "values":
				checkValues(t, env, b)
			case "kustomization":
				buildOverlay(t, env, b)
			case "ci":
				var v map[string]any
				if err := yaml.UnmarshalStrict([]byte(b.body), &v); err != nil || len(v) == 0 {
					t.Fatalf("not a YAML mapping: %v", err)
				}
			default:
				t.Fatalf("unknown info string %q: use ```yaml, ```yaml values, ```yaml kustomization or ```yaml ci", "yaml "+kind)
			}
		})
	}
	t.Logf("YAML blocks by kind: %v", counts)
	if counts[""] == 0 || counts["values"] == 0 {
		t.Errorf("expected Kubernetes and Helm values examples, got %v", counts)
	}
}

// splitDocs parses a multi-document YAML stream into objects.
func splitDocs(t *testing.T, body string) []*unstructured.Unstructured {
	t.Helper()
	var objs []*unstructured.Unstructured
	r := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(body)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("invalid YAML: %v", err)
		}
		obj := map[string]any{}
		if err := yaml.UnmarshalStrict(doc, &obj); err != nil {
			t.Fatalf("invalid YAML document: %v\n%s", err, doc)
		}
		if len(obj) == 0 {
			continue // only comments, or an empty document
		}
		u := &unstructured.Unstructured{Object: obj}
		if u.GetAPIVersion() == "" || u.GetKind() == "" || u.GetName() == "" {
			t.Fatalf("every document of a ```yaml block must be a Kubernetes object with apiVersion, kind and metadata.name (mark other YAML with an info string such as ```yaml values):\n%s", doc)
		}
		objs = append(objs, u)
	}
	if len(objs) == 0 {
		t.Fatal("no object in the block")
	}
	return objs
}

// applyObjects moves the block's objects into fresh namespaces and applies
// them with a server-side dry run and strict field validation.
func applyObjects(t *testing.T, env *cluster.Env, b block) {
	objs := splitDocs(t, b.body)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	fresh := map[string]string{}
	rename := func(ns string) string {
		if n, ok := fresh[ns]; ok {
			return n
		}
		n := freshNamespace(t, env, ns)
		fresh[ns] = n
		return n
	}
	var out bytes.Buffer
	for _, u := range objs {
		if u.GetKind() == "Namespace" && u.GetAPIVersion() == "v1" {
			u.SetName(rename(u.GetName()))
		} else {
			namespaced, err := env.Client.IsObjectNamespaced(u)
			if err != nil {
				t.Fatalf("%s %s: the API server does not serve this kind: %v", u.GetAPIVersion(), u.GetKind(), err)
			}
			switch {
			case namespaced && u.GetNamespace() == "":
				t.Fatalf("%s %s has no metadata.namespace: name one, so readers know where it goes", u.GetKind(), u.GetName())
			case namespaced:
				u.SetNamespace(rename(u.GetNamespace()))
			case u.GetNamespace() != "":
				t.Fatalf("%s %s is cluster-scoped but names namespace %s", u.GetKind(), u.GetName(), u.GetNamespace())
			}
		}
		data, err := yaml.Marshal(u.Object)
		if err != nil {
			t.Fatal(err)
		}
		out.WriteString("---\n")
		out.Write(data)
	}
	dryRunApply(ctx, t, env, out.Bytes())
}

// dryRunApply applies a manifest the way a user would, as a server-side
// dry run with strict field validation (unknown fields are errors).
func dryRunApply(ctx context.Context, t *testing.T, env *cluster.Env, manifest []byte) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "example.yaml")
	if err := os.WriteFile(file, manifest, 0o644); err != nil {
		t.Fatal(err)
	}
	kubectl := filepath.Join(cluster.K8sBinDir(t), "kubectl")
	out, err := exec.CommandContext(ctx, kubectl, "--kubeconfig", env.Cluster.Kubeconfig,
		"apply", "--server-side", "--dry-run=server", "--validate=strict", "--field-manager=kick-docs", "-f", file).CombinedOutput()
	if err != nil {
		t.Fatalf("the API server rejects the example: %v\n%s\nas applied (namespaces replaced):\n%s", err, out, manifest)
	}
}

var nonName = regexp.MustCompile(`[^a-z0-9-]+`)

// freshNamespace creates a namespace standing in for the example's
// namespace ns, deleted when the test ends.
func freshNamespace(t *testing.T, env *cluster.Env, ns string) string {
	t.Helper()
	base := strings.Trim(nonName.ReplaceAllString(strings.ToLower(ns), "-"), "-")
	if len(base) > 40 {
		base = base[:40]
	}
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	name := "docs-" + base + "-" + hex.EncodeToString(suffix)
	obj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := env.Client.Create(context.Background(), obj); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), obj) })
	return name
}

// checkValues checks a Helm values example against deploy/chart/kick:
// every key exists in values.yaml, values.schema.json accepts the values,
// and the chart renders with them.
func checkValues(t *testing.T, env *cluster.Env, b block) {
	var user map[string]any
	if err := yaml.UnmarshalStrict([]byte(b.body), &user); err != nil {
		t.Fatalf("invalid YAML: %v", err)
	}
	if len(user) == 0 {
		t.Fatal("no values in the block")
	}
	chrt, err := loader.Load(filepath.Join(env.RepoRoot, "deploy", "chart", "kick"))
	if err != nil {
		t.Fatalf("load the chart: %v", err)
	}
	for _, problem := range unknownKeys("", user, chrt.Values) {
		t.Error(problem)
	}
	vals, err := chartutil.ToRenderValues(chrt, user,
		chartutil.ReleaseOptions{Name: "kick", Namespace: "kick-system", IsInstall: true, Revision: 1}, nil)
	if err != nil {
		t.Fatalf("the chart does not accept these values: %v", err)
	}
	if _, err := (engine.Engine{}).Render(chrt, vals); err != nil {
		t.Fatalf("the chart does not render with these values: %v", err)
	}
}

// unknownKeys lists the keys of user that values.yaml (defaults) does not
// have. Below a key whose default is not a non-empty map (resources,
// podLabels, ...) anything goes.
func unknownKeys(prefix string, user, defaults map[string]any) []string {
	var out []string
	keys := make([]string, 0, len(user))
	for k := range user {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		def, ok := defaults[k]
		if !ok {
			out = append(out, fmt.Sprintf("values key %s%s does not exist in deploy/chart/kick/values.yaml", prefix, k))
			continue
		}
		sub, userIsMap := user[k].(map[string]any)
		defMap, defIsMap := def.(map[string]any)
		if userIsMap && defIsMap && len(defMap) > 0 {
			out = append(out, unknownKeys(prefix+k+".", sub, defMap)...)
		}
	}
	return out
}

// buildOverlay builds a kustomize overlay example against this checkout's
// deploy/ and applies the result as a server-side dry run.
func buildOverlay(t *testing.T, env *cluster.Env, b block) {
	var k map[string]any
	if err := yaml.UnmarshalStrict([]byte(b.body), &k); err != nil {
		t.Fatalf("invalid YAML: %v", err)
	}
	if k["kind"] != "Kustomization" {
		t.Fatalf("a ```yaml kustomization block must be a Kustomization, got kind %v", k["kind"])
	}
	dir := t.TempDir()
	deploy := filepath.Join(env.RepoRoot, "deploy")
	rel, err := filepath.Rel(dir, deploy)
	if err != nil {
		t.Fatal(err)
	}
	// Point every path (or remote URL) that contains a deploy/ segment at
	// this checkout's deploy/.
	for _, field := range []string{"resources", "components"} {
		list, _ := k[field].([]any)
		for i, v := range list {
			s, _ := v.(string)
			s, _, _ = strings.Cut(s, "?")
			segs := strings.Split(s, "/")
			at := -1
			for j, seg := range segs {
				if seg == "deploy" {
					at = j
				}
			}
			if at < 0 {
				continue
			}
			local := filepath.Join(append([]string{rel}, segs[at+1:]...)...)
			if _, err := os.Stat(filepath.Join(dir, local)); err != nil {
				t.Fatalf("%s entry %q: %s does not exist in this checkout", field, v, path.Join(append([]string{"deploy"}, segs[at+1:]...)...))
			}
			list[i] = filepath.ToSlash(local)
		}
	}
	data, err := yaml.Marshal(k)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	kubectl := filepath.Join(cluster.K8sBinDir(t), "kubectl")
	built, err := exec.CommandContext(ctx, kubectl, "kustomize", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl kustomize: %v\n%s\n%s", err, built, data)
	}
	// The overlay installs into kick-system; a dry run does not create the
	// Namespace it declares.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kick-system"}}
	if err := env.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	dryRunApply(ctx, t, env, built)
}
