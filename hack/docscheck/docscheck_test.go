package docscheck

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// Table finds the first table of the named section only, skips fenced
// code, and splits cells at unescaped pipes, so the checks built on it
// cannot pass by reading the wrong rows or none.
func TestTable(t *testing.T) {
	page := "# Title\n\n## Other\n\n| a | b |\n|---|---|\n| `x` | 1 |\n\n" +
		"## Wanted\n\nText.\n\n```\n| fenced | row |\n```\n\n" +
		"| name | default |\n|---|---|\n| `--one`, `--two` | `1` |\n| `a \\| b` | text `c` |\n\n" +
		"| second | table |\n|---|---|\n| `no` | 2 |\n\n## Next\n\n| `late` | 3 |\n\n## Empty\n\nNo table.\n"
	path := filepath.Join(t.TempDir(), "page.md")
	if err := os.WriteFile(path, []byte(page), 0o600); err != nil {
		t.Fatal(err)
	}
	rows, err := Table(path, "Wanted")
	if err != nil {
		t.Fatal(err)
	}
	var got [][]string
	for _, r := range rows {
		got = append(got, r.Cells)
	}
	want := [][]string{{"`--one`, `--two`", "`1`"}, {"`a | b`", "text `c`"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("rows %q, want %q", got, want)
	}
	if rows[0].Line != 19 {
		t.Errorf("first row on line %d, want 19", rows[0].Line)
	}
	if c := Code(rows[0].Cells[0]); !reflect.DeepEqual(c, []string{"--one", "--two"}) {
		t.Errorf("Code = %q", c)
	}
	if _, err := Table(path, "Missing"); err == nil {
		t.Error("no error for a missing heading")
	}
	if _, err := Table(path, "Empty"); err == nil {
		t.Error("no error for a section without a table")
	}
}
