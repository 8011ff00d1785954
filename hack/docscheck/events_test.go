package docscheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const eventsPage = "../../docs/reference/events.md"

// The Event reasons docs/reference/events.md lists are the ones the code
// emits: on KickRequests the reasons restart/request passes to its Events,
// on KickPolicies and NotificationPolicies the reasons of their Ready
// condition, which their Events carry.
func TestEventReasons(t *testing.T) {
	api := stringConsts(t, "../../api/v1alpha1", nil, nil)
	for _, c := range []struct {
		heading string
		want    []string
	}{
		{"On KickRequests", requestEventReasons(t, "../../restart/request")},
		{"On KickPolicies", values(stringConsts(t, "../../restart/policy", api, isExportedReason))},
		{"On NotificationPolicies", values(stringConsts(t, "../../sinks", api, isReasonIn("reasons.go")))},
	} {
		t.Run(c.heading, func(t *testing.T) {
			if len(c.want) == 0 {
				t.Fatal("found no reasons in the code; the scan is broken")
			}
			rows, err := Table(eventsPage, c.heading)
			if err != nil {
				t.Fatal(err)
			}
			listed := map[string]int{}
			for _, r := range rows {
				for _, reason := range Code(r.Cells[0]) {
					if _, dup := listed[reason]; dup {
						t.Errorf("%s:%d: `%s` is listed twice", eventsPage, r.Line, reason)
					}
					listed[reason] = r.Line
				}
			}
			for _, w := range c.want {
				if _, ok := listed[w]; !ok {
					t.Errorf("%s: the code emits reason `%s`, the table under %q lacks it", eventsPage, w, c.heading)
				}
				delete(listed, w)
			}
			for reason, line := range listed {
				t.Errorf("%s:%d: `%s` is listed under %q but the code never emits it", eventsPage, line, reason, c.heading)
			}
		})
	}
}

// parseDir parses the non-test Go files of dir.
func parseDir(t *testing.T, dir string) map[string]*ast.File {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]*ast.File{}
	fset := token.NewFileSet()
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, n, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files[filepath.Base(n)] = f
	}
	if len(files) == 0 {
		t.Fatalf("no Go files in %s", dir)
	}
	return files
}

// requestEventReasons returns the reasons restart/request gives its
// Events: the second argument of emit calls, the reason field of eventSpec
// literals, and the strings returned by the functions that map a phase or
// gate reason to an Event reason (named ...EventReason).
func requestEventReasons(t *testing.T, dir string) []string {
	found := map[string]bool{}
	add := func(e ast.Expr) {
		if s, ok := stringLit(e); ok {
			found[s] = true
		}
	}
	for _, f := range parseDir(t, dir) {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "emit" && len(n.Args) >= 2 {
					add(n.Args[1])
				}
			case *ast.CompositeLit:
				if id, ok := n.Type.(*ast.Ident); ok && id.Name == "eventSpec" {
					for _, el := range n.Elts {
						if kv, ok := el.(*ast.KeyValueExpr); ok {
							if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "reason" {
								add(kv.Value)
							}
						}
					}
				}
			case *ast.FuncDecl:
				if strings.HasSuffix(n.Name.Name, "EventReason") && n.Body != nil {
					ast.Inspect(n.Body, func(m ast.Node) bool {
						if r, ok := m.(*ast.ReturnStmt); ok && len(r.Results) == 1 {
							add(r.Results[0])
						}
						return true
					})
				}
			}
			return true
		})
	}
	var out []string
	for s := range found {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

func isExportedReason(file, name string) bool { return strings.HasPrefix(name, "Reason") }

func isReasonIn(file string) func(string, string) bool {
	return func(f, name string) bool {
		return f == file && strings.HasPrefix(strings.ToLower(name), "reason")
	}
}

// stringConsts returns the string constants of the package in dir that keep
// says to keep, by name. A constant defined by another constant (of this
// package, or of api/v1alpha1 through a selector, string(...) conversions
// included) is resolved through ext and the package's own constants.
func stringConsts(t *testing.T, dir string, ext map[string]string, keep func(file, name string) bool) map[string]string {
	t.Helper()
	type entry struct {
		file string
		expr ast.Expr
	}
	all := map[string]entry{}
	for file, f := range parseDir(t, dir) {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if i < len(vs.Values) {
						all[n.Name] = entry{file, vs.Values[i]}
					}
				}
			}
		}
	}
	var resolve func(e ast.Expr, depth int) (string, bool)
	resolve = func(e ast.Expr, depth int) (string, bool) {
		if depth > 8 {
			return "", false
		}
		switch e := e.(type) {
		case *ast.BasicLit:
			return stringLit(e)
		case *ast.Ident:
			if c, ok := all[e.Name]; ok {
				return resolve(c.expr, depth+1)
			}
		case *ast.SelectorExpr:
			v, ok := ext[e.Sel.Name]
			return v, ok
		case *ast.CallExpr: // string(X)
			if id, ok := e.Fun.(*ast.Ident); ok && id.Name == "string" && len(e.Args) == 1 {
				return resolve(e.Args[0], depth+1)
			}
		case *ast.ParenExpr:
			return resolve(e.X, depth+1)
		}
		return "", false
	}
	out := map[string]string{}
	for name, c := range all {
		if keep != nil && !keep(c.file, name) {
			continue
		}
		v, ok := resolve(c.expr, 0)
		if !ok {
			if keep != nil {
				t.Fatalf("%s: cannot resolve the value of constant %s", dir, name)
			}
			continue
		}
		out[name] = v
	}
	return out
}

func stringLit(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}

// values returns the distinct values of m, sorted.
func values(m map[string]string) []string {
	seen := map[string]bool{}
	var out []string
	for _, v := range m {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	sort.Strings(out)
	return out
}
