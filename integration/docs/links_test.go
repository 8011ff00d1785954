package docs

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kick-operator/kick/integration/cluster"
)

// TestRelativeLinks checks that every relative link in docs/**/*.md points
// to an existing file and, for #fragments into Markdown, to an existing
// heading.
func TestRelativeLinks(t *testing.T) {
	env := cluster.Get(t)
	pages := readPages(t, env.RepoRoot)
	byPath := map[string]*page{}
	for _, p := range pages {
		byPath[p.abs] = p
	}
	checked := 0
	for _, p := range pages {
		for _, l := range links(p) {
			target := l.target
			if strings.HasPrefix(target, "http://") || strings.HasPrefix(target, "https://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			if strings.Contains(target, "://") {
				t.Errorf("%s:%d: unsupported link scheme in %q", p.rel, l.line, target)
				continue
			}
			file, frag, _ := strings.Cut(target, "#")
			if u, err := url.PathUnescape(file); err == nil {
				file = u
			}
			dest := p.abs
			if file != "" {
				if strings.HasPrefix(file, "/") {
					t.Errorf("%s:%d: %q is absolute; use a path relative to the page", p.rel, l.line, target)
					continue
				}
				dest = filepath.Join(filepath.Dir(p.abs), filepath.FromSlash(file))
				rel, err := filepath.Rel(env.RepoRoot, dest)
				if err != nil || strings.HasPrefix(rel, "..") {
					t.Errorf("%s:%d: %q leaves the repository", p.rel, l.line, target)
					continue
				}
				if _, err := os.Stat(dest); err != nil {
					t.Errorf("%s:%d: %q points to %s, which does not exist", p.rel, l.line, target, filepath.ToSlash(rel))
					continue
				}
			}
			checked++
			if frag == "" || !strings.HasSuffix(dest, ".md") {
				continue
			}
			text := ""
			if tp, ok := byPath[dest]; ok {
				text = tp.text
			} else {
				data, err := os.ReadFile(dest)
				if err != nil {
					t.Errorf("%s:%d: %v", p.rel, l.line, err)
					continue
				}
				text = string(data)
			}
			if !anchors(text)[frag] {
				t.Errorf("%s:%d: %q: no heading with anchor #%s in %s", p.rel, l.line, target, frag, filepath.Base(dest))
			}
		}
	}
	if checked == 0 {
		t.Fatal("no relative links found under docs/; the link extractor is broken")
	}
}

// TestIndexLinksEveryPage checks that docs/README.md links every page, so
// nothing is written that nobody can find.
func TestIndexLinksEveryPage(t *testing.T) {
	env := cluster.Get(t)
	pages := readPages(t, env.RepoRoot)
	index := filepath.Join(env.RepoRoot, "docs", "README.md")
	linked := map[string]bool{}
	for _, p := range pages {
		if p.abs != index {
			continue
		}
		for _, l := range links(p) {
			file, _, _ := strings.Cut(l.target, "#")
			if file != "" && !strings.Contains(file, "://") {
				linked[filepath.Join(filepath.Dir(index), filepath.FromSlash(file))] = true
			}
		}
	}
	if len(linked) == 0 {
		t.Fatal("docs/README.md links nothing")
	}
	for _, p := range pages {
		if p.abs != index && !linked[p.abs] {
			t.Errorf("docs/README.md does not link %s", p.rel)
		}
	}
}

// TestExtractor checks the Markdown helpers on a small page, so a change
// to them cannot make the other tests pass vacuously.
func TestExtractor(t *testing.T) {
	p := &page{rel: "x.md", text: strings.Join([]string{
		"# Title",
		"See [a](a.md#part-two) and `[not](code.md)`.",
		"```yaml values",
		"a: 1",
		"```",
		"````markdown",
		"```yaml",
		"inner: true",
		"```",
		"````",
		"## Part two: `σ` and Λ",
		"[ref]: other.md",
		"```yaml",
		"kind: X",
		"```",
	}, "\n")}
	bs, err := blocks(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) != 3 || bs[0].lang != "yaml" || strings.Join(bs[0].tags, " ") != "values" || bs[0].body != "a: 1\n" ||
		bs[1].lang != "markdown" || bs[2].line != 13 || bs[2].body != "kind: X\n" {
		t.Fatalf("blocks: %+v", bs)
	}
	var targets []string
	for _, l := range links(p) {
		targets = append(targets, l.target)
	}
	if strings.Join(targets, ",") != "a.md#part-two,other.md" {
		t.Errorf("links: %v", targets)
	}
	a := anchors(p.text)
	if !a["title"] || !a["part-two-σ-and-λ"] {
		t.Errorf("anchors: %v", a)
	}
	if _, err := blocks(&page{rel: "y.md", text: "```yaml\na: 1\n"}); err == nil {
		t.Error("an unclosed fence must be an error")
	}
	for row, want := range map[string]int{"| a | `b\\|c` | d |": 3, "| | |": 2, "|---|---|---|": 3, "| a | b | c": 3} {
		if got := tableCells(row); got != want {
			t.Errorf("tableCells(%q) = %d, want %d", row, got, want)
		}
	}
}

// TestTablesWellFormed checks that every row of a Markdown table has as
// many cells as its header: an unescaped "|" (even inside `code`) splits a
// cell and breaks the rendered table.
func TestTablesWellFormed(t *testing.T) {
	env := cluster.Get(t)
	for _, p := range readPages(t, env.RepoRoot) {
		header := -1
		for n, line := range strings.Split(withoutFences(p.text), "\n") {
			if !strings.HasPrefix(strings.TrimSpace(line), "|") {
				header = -1
				continue
			}
			cells := tableCells(line)
			if header < 0 {
				header = cells
				continue
			}
			if cells != header {
				t.Errorf("%s:%d: %d cells in a table of %d columns (escape | as \\|): %s", p.rel, n+1, cells, header, line)
			}
		}
	}
}

// tableCells counts the cells of a table row: pipes not escaped with a
// backslash separate cells; a leading and a trailing pipe do not.
func tableCells(line string) int {
	row := strings.TrimSpace(line)
	row = strings.TrimPrefix(row, "|")
	if strings.HasSuffix(row, "|") && !strings.HasSuffix(row, `\|`) {
		row = row[:len(row)-1]
	}
	cells := 1
	for i := 0; i < len(row); i++ {
		switch row[i] {
		case '\\':
			i++ // skip the escaped character
		case '|':
			cells++
		}
	}
	return cells
}
