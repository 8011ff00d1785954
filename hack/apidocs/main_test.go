package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func renderDir(t *testing.T, dir string) string {
	t.Helper()
	crds, err := readCRDs(dir)
	if err != nil {
		t.Fatal(err)
	}
	out, err := render(crds, dir)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// tableRow returns the table row of a field path, failing when there is
// none.
func tableRow(t *testing.T, doc, path string) string {
	t.Helper()
	prefix := "| `" + path + "` |"
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, prefix) {
			return line
		}
	}
	t.Fatalf("no row for %s in:\n%s", path, doc)
	return ""
}

func TestRenderFields(t *testing.T) {
	doc := renderDir(t, "testdata/crds")

	for _, c := range []struct {
		path string
		want []string
	}{
		{"spec.name", []string{"| string, *required* |", "Name is a &lt;name&gt; with a \\| pipe.",
			"Limits: length ≥ 1, length ≤ 63.", "Pattern: `` ^[a-z`\\|]+$ ``."}},
		{"spec.size", []string{"| int32 |", "Default: `3`.", "Limits: ≥ 1, ≤ 10."}},
		{"spec.color", []string{"Default: `red`.", "One of: `red`, `green`."}},
		{"spec.selector", []string{"| label selector |"}},
		{"spec.labels", []string{"| map[string]string |"}},
		{"spec.parts", []string{"| []object |", "Limits: items ≤ 4.", "Items are unique by `id`."}},
		{"spec.parts[].id", []string{"| string, *required* |", "ID of the part."}},
		{"spec.parts[].since", []string{"| time (RFC 3339) |"}},
		{"status.conditions", []string{"| []Condition |"}},
	} {
		r := tableRow(t, doc, c.path)
		for _, w := range c.want {
			if !strings.Contains(r, w) {
				t.Errorf("row %s lacks %q:\n%s", c.path, w, r)
			}
		}
	}

	// Well-known types are one row, not expanded.
	for _, hidden := range []string{"spec.selector.matchLabels", "status.conditions[].reason"} {
		if strings.Contains(doc, "`"+hidden+"`") {
			t.Errorf("%s should not be expanded", hidden)
		}
	}
	// apiVersion, kind and metadata are not documented per kind.
	if strings.Contains(doc, "### Widget.metadata") || strings.Contains(doc, "### Widget.apiVersion") {
		t.Error("object metadata fields must not get a section")
	}
	for _, want := range []string{
		"## Widget\n\nWidget is a test object spread over two lines.\n",
		"| Short names | `wg` |",
		"| Status subresource | yes |",
		"| `kubectl get` columns | Size (`.spec.size`) |",
		"### Widget.spec\n\nSpec is the desired widget. *Required.* Rule: set at most one of a and b.\n",
		"API group and version: `example.com/v1`.",
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("the page lacks %q:\n%s", want, doc)
		}
	}
	// KICK's kinds come first, in their fixed order; others follow.
	if strings.Index(doc, "## KickPolicy") > strings.Index(doc, "## Widget") {
		t.Error("KickPolicy must come before other kinds")
	}
	if !strings.HasSuffix(doc, " |\n") || strings.HasSuffix(doc, "\n\n") {
		t.Error("the page must end with exactly one newline")
	}
}

func TestRenderIsDeterministic(t *testing.T) {
	first := renderDir(t, "testdata/crds")
	for i := 0; i < 5; i++ {
		if again := renderDir(t, "testdata/crds"); again != first {
			t.Fatal("two renders of the same CRDs differ")
		}
	}
}

func TestReadCRDsErrors(t *testing.T) {
	if _, err := readCRDs(t.TempDir()); err == nil {
		t.Error("an empty directory must be an error")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nspec: {bogus: 1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readCRDs(dir); err == nil {
		t.Error("an unknown CRD field must be an error (the reader is strict)")
	}
}

// TestCommittedReferenceIsCurrent fails when docs/reference/api.md no
// longer matches the CRDs in deploy/crds: run
// `go run ./hack/apidocs -out docs/reference/api.md` (part of make generate).
func TestCommittedReferenceIsCurrent(t *testing.T) {
	root := filepath.Join("..", "..")
	crds, err := readCRDs(filepath.Join(root, "deploy", "crds"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := render(crds, "deploy/crds")
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(root, "docs", "reference", "api.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("docs/reference/api.md is stale: run `go run ./hack/apidocs -out docs/reference/api.md` (make generate)")
	}
	for _, kind := range []string{"KickPolicy", "KickRequest", "NotificationPolicy", "SourceObservation"} {
		if !bytes.Contains(got, []byte("## "+kind+"\n")) {
			t.Errorf("the reference lacks %s", kind)
		}
	}
}
