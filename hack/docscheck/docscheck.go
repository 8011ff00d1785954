// Package docscheck reads the reference tables of KICK's Markdown docs, so
// that unit tests can hold them to the code: the manager's flag table
// (cmd/kick-manager), the Helm values tables and the Event reasons
// (this package's tests).
package docscheck

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// Row is one body row of a Markdown table.
type Row struct {
	// Line is the row's 1-based line in its file.
	Line int
	// Cells are the row's cells, trimmed.
	Cells []string
}

// Table returns the body rows of the first table in the section under
// heading (the heading's text, e.g. "Manager flags"), which ends at the next
// heading of the same or a higher level. It fails when the heading or its
// table is missing, so a renamed section cannot make a check pass vacuously.
func Table(path, heading string) ([]Row, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 1<<20)
	level := 0 // level of the matched heading; 0 until found
	var rows []Row
	inFence, inTable := false, false
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		if l, text := headingOf(line); l > 0 {
			if level > 0 && l <= level {
				break
			}
			if level == 0 && text == heading {
				level = l
			}
			continue
		}
		if level == 0 {
			continue
		}
		if !strings.HasPrefix(strings.TrimSpace(line), "|") {
			if inTable {
				break // the first table ended
			}
			continue
		}
		if !inTable { // the header row; the delimiter row follows
			inTable = true
			sc.Scan()
			n++
			continue
		}
		rows = append(rows, Row{Line: n, Cells: cells(line)})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	switch {
	case level == 0:
		return nil, fmt.Errorf("%s: no heading %q", path, heading)
	case len(rows) == 0:
		return nil, fmt.Errorf("%s: no table under %q", path, heading)
	}
	return rows, nil
}

// headingOf returns an ATX heading's level and text, or 0.
func headingOf(line string) (int, string) {
	l := len(line) - len(strings.TrimLeft(line, "#"))
	if l == 0 || l > 6 || !strings.HasPrefix(line[l:], " ") {
		return 0, ""
	}
	return l, strings.TrimSpace(line[l:])
}

// cells splits a table row at its pipes; a pipe escaped with a backslash
// (as in a code span, "`a \| b`") separates nothing.
func cells(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimPrefix(line, "|")
	if strings.HasSuffix(line, "|") && !strings.HasSuffix(line, `\|`) {
		line = line[:len(line)-1]
	}
	var out []string
	var cur strings.Builder
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line) && line[i+1] == '|':
			cur.WriteByte('|')
			i++
			continue
		case line[i] == '|':
			out = append(out, strings.TrimSpace(cur.String()))
			cur.Reset()
			continue
		}
		cur.WriteByte(line[i])
	}
	return append(out, strings.TrimSpace(cur.String()))
}

var codeRE = regexp.MustCompile("`([^`]+)`")

// Code returns the code spans of a cell, in order: "`a`, `.b`" gives a, .b.
func Code(cell string) []string {
	var out []string
	for _, m := range codeRE.FindAllStringSubmatch(cell, -1) {
		out = append(out, m[1])
	}
	return out
}
