package docscheck

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

const valuesFile = "../../deploy/chart/kick/values.yaml"

// The tables of Helm values, in the configuration reference and in the
// chart's README, name every key of values.yaml (a map's key covers what is
// below it), name no key values.yaml lacks, and state a scalar's or an empty
// collection's default as values.yaml has it.
func TestHelmValuesTables(t *testing.T) {
	data, err := os.ReadFile(valuesFile)
	if err != nil {
		t.Fatal(err)
	}
	var values map[string]any
	if err := yaml.Unmarshal(data, &values); err != nil {
		t.Fatal(err)
	}
	paths := map[string]any{} // every key path, maps included
	var leaves []string
	flatten("", values, paths, &leaves)

	for _, doc := range []struct{ path, heading string }{
		{"../../docs/reference/configuration.md", "Helm values"},
		{"../../deploy/chart/kick/README.md", "Values"},
	} {
		t.Run(doc.path, func(t *testing.T) {
			rows, err := Table(doc.path, doc.heading)
			if err != nil {
				t.Fatal(err)
			}
			documented := map[string]bool{}
			for _, r := range rows {
				keys := helmKeys(r.Cells[0])
				if len(keys) == 0 {
					t.Errorf("%s:%d: the first cell names no key in backticks: %q", doc.path, r.Line, r.Cells[0])
				}
				for _, k := range keys {
					v, ok := paths[k]
					switch {
					case !ok:
						t.Errorf("%s:%d: `%s` is not a key of %s; remove the row or fix the name", doc.path, r.Line, k, valuesFile)
					case documented[k]:
						t.Errorf("%s:%d: `%s` is listed twice", doc.path, r.Line, k)
					}
					documented[k] = true
					if ok && len(keys) == 1 && len(r.Cells) > 1 {
						// Only a default written as one code span is compared;
						// prose ("chart `appVersion`") explains rather than quotes.
						got := Code(r.Cells[1])
						if want, comparable := formatDefault(v); comparable && len(got) == 1 && "`"+got[0]+"`" == r.Cells[1] {
							if got[0] != want {
								t.Errorf("%s:%d: `%s` defaults to `%s` in %s, the table says %s", doc.path, r.Line, k, want, valuesFile, r.Cells[1])
							}
						}
					}
				}
			}
			for _, leaf := range leaves {
				if !coveredBy(leaf, documented) {
					t.Errorf("%s: `%s` (in %s) is missing from the table under %q", doc.path, leaf, valuesFile, doc.heading)
				}
			}
		})
	}
}

// helmKeys returns the keys a table cell names: "`a.b.c`, `.d`" names
// a.b.c and a.b.d (a leading dot is relative to the first key's parent).
func helmKeys(cell string) []string {
	var out []string
	parent := ""
	for _, k := range Code(cell) {
		if strings.HasPrefix(k, ".") {
			out = append(out, parent+k)
			continue
		}
		if i := strings.LastIndex(k, "."); i >= 0 {
			parent = k[:i]
		} else {
			parent = ""
		}
		out = append(out, k)
	}
	return out
}

// flatten records every key path below prefix in paths and the leaves
// (values that are not maps, and empty maps) in leaves.
func flatten(prefix string, v any, paths map[string]any, leaves *[]string) {
	m, ok := v.(map[string]any)
	if prefix != "" {
		paths[prefix] = v
		if !ok || len(m) == 0 {
			*leaves = append(*leaves, prefix)
			return
		}
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p := k
		if prefix != "" {
			p = prefix + "." + k
		}
		flatten(p, m[k], paths, leaves)
	}
}

func coveredBy(leaf string, documented map[string]bool) bool {
	for p := leaf; ; {
		if documented[p] {
			return true
		}
		i := strings.LastIndex(p, ".")
		if i < 0 {
			return false
		}
		p = p[:i]
	}
}

// formatDefault renders a scalar or an empty list or map as the tables
// write defaults; comparable is false for anything else.
func formatDefault(v any) (s string, comparable bool) {
	switch v := v.(type) {
	case string:
		if v == "" {
			return `""`, true
		}
		return v, true
	case bool, float64:
		return fmt.Sprint(v), true
	case []any:
		return "[]", len(v) == 0
	case map[string]any:
		return "{}", len(v) == 0
	}
	return "", false
}
