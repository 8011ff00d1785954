package docs

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"unicode"
)

// page is one Markdown file under docs/.
type page struct {
	// rel is the path relative to the repository root, e.g. docs/quickstart.md.
	rel  string
	abs  string
	text string
}

// block is one fenced code block.
type block struct {
	page *page
	// line is the 1-based line of the opening fence.
	line int
	// lang is the first word of the info string ("yaml"), tags the rest.
	lang string
	tags []string
	body string
}

func (b block) String() string { return fmt.Sprintf("%s:%d", b.page.rel, b.line) }

// readPages reads every .md file below root/docs, sorted by path.
func readPages(t *testing.T, root string) []*page {
	t.Helper()
	var pages []*page
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".md") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		pages = append(pages, &page{rel: filepath.ToSlash(rel), abs: path, text: string(data)})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(pages, func(i, j int) bool { return pages[i].rel < pages[j].rel })
	if len(pages) == 0 {
		t.Fatal("no Markdown files under docs/")
	}
	return pages
}

var fenceRE = regexp.MustCompile("^ {0,3}(`{3,}|~{3,})\\s*([^`]*)$")

// blocks returns the fenced code blocks of a page. An unclosed fence is an
// error: it would silently swallow the rest of the page.
func blocks(p *page) ([]block, error) {
	var out []block
	var cur *block
	var fence string
	var body strings.Builder
	sc := bufio.NewScanner(strings.NewReader(p.text))
	sc.Buffer(make([]byte, 0, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		m := fenceRE.FindStringSubmatch(line)
		if cur == nil {
			if m == nil {
				continue
			}
			fields := strings.Fields(m[2])
			b := block{page: p, line: n}
			if len(fields) > 0 {
				b.lang, b.tags = strings.ToLower(fields[0]), fields[1:]
			}
			cur, fence = &b, m[1]
			body.Reset()
			continue
		}
		if m != nil && strings.TrimSpace(m[2]) == "" && m[1][0] == fence[0] && len(m[1]) >= len(fence) {
			cur.body = body.String()
			out = append(out, *cur)
			cur = nil
			continue
		}
		body.WriteString(line)
		body.WriteByte('\n')
	}
	if cur != nil {
		return nil, fmt.Errorf("%s: the code block opened at line %d is never closed", p.rel, cur.line)
	}
	return out, sc.Err()
}

// prose returns the page with code blocks and inline code blanked out, so
// link checks see only real links. Line structure is kept.
func prose(text string) string {
	lines := strings.Split(withoutFences(text), "\n")
	for i, line := range lines {
		lines[i] = inlineCodeRE.ReplaceAllString(line, "``")
	}
	return strings.Join(lines, "\n")
}

// withoutFences returns the page with fenced code blocks blanked out (their
// lines kept, empty).
func withoutFences(text string) string {
	var b strings.Builder
	in := ""
	for _, line := range strings.Split(text, "\n") {
		m := fenceRE.FindStringSubmatch(line)
		switch {
		case in == "" && m != nil:
			in = m[1]
			b.WriteByte('\n')
			continue
		case in != "":
			if m != nil && strings.TrimSpace(m[2]) == "" && m[1][0] == in[0] && len(m[1]) >= len(in) {
				in = ""
			}
			b.WriteByte('\n')
			continue
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.String()
}

var (
	inlineCodeRE = regexp.MustCompile("(`+)[^`]*?(`+)")
	// linkRE matches inline links and images: [text](target) and
	// [text](target "title").
	linkRE = regexp.MustCompile(`\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	// refLinkRE matches reference definitions: [name]: target
	refLinkRE = regexp.MustCompile(`(?m)^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$`)
	headingRE = regexp.MustCompile(`(?m)^ {0,3}#{1,6}\s+(.+?)\s*#*\s*$`)
	// htmlAnchorRE finds explicit anchors: <a id="x"> or <a name="x">.
	htmlAnchorRE = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
)

// links returns the link targets of a page, with their line numbers.
func links(p *page) []struct {
	line   int
	target string
} {
	var out []struct {
		line   int
		target string
	}
	for n, line := range strings.Split(prose(p.text), "\n") {
		for _, m := range linkRE.FindAllStringSubmatch(line, -1) {
			out = append(out, struct {
				line   int
				target string
			}{n + 1, m[1]})
		}
		for _, m := range refLinkRE.FindAllStringSubmatch(line, -1) {
			out = append(out, struct {
				line   int
				target string
			}{n + 1, m[1]})
		}
	}
	return out
}

// anchors returns the anchors GitHub generates for a page's headings, plus
// explicit HTML anchors.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, m := range headingRE.FindAllStringSubmatch(withoutFences(text), -1) {
		slug := slugify(m[1])
		if n := seen[slug]; n > 0 {
			out[fmt.Sprintf("%s-%d", slug, n)] = true
		} else {
			out[slug] = true
		}
		seen[slug]++
	}
	for _, m := range htmlAnchorRE.FindAllStringSubmatch(text, -1) {
		out[m[1]] = true
	}
	return out
}

// slugify turns a heading into its GitHub anchor: lower case, inline
// Markdown removed, letters, digits, '-' and '_' kept, spaces to '-'.
func slugify(heading string) string {
	heading = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`).ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
