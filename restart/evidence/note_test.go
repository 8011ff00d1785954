package evidence

import (
	"strings"
	"testing"
	"time"
)

func TestNoteRoundTrip(t *testing.T) {
	change := time.Date(2026, 12, 1, 23, 0, 0, 123456789, time.UTC)
	for _, n := range []Note{
		{Stamp: "2026-12-01T23:00:00.1234568Z", Change: change, Sources: []Source{{"Secret", "db", "812"}, {"ConfigMap", "app-settings", "9"}}},
		{Stamp: "2026-12-01T23:00:00.1234568Z", Change: change},
		{Stamp: "2026-12-01T23:00:01Z"},
	} {
		got, err := Parse(n.String())
		if err != nil {
			t.Fatalf("Parse(%q): %v", n.String(), err)
		}
		if got.Stamp != n.Stamp || !got.Change.Equal(n.Change) || len(got.Sources) != len(n.Sources) {
			t.Fatalf("Parse(%q) = %+v, want %+v", n.String(), got, n)
		}
		for _, s := range n.Sources {
			if !got.Covers(s.Kind, s.Name, s.ResourceVersion) {
				t.Errorf("%q does not cover %+v", n.String(), s)
			}
		}
	}
}

func TestCoversOnlyTheNamedVersion(t *testing.T) {
	n := Note{Stamp: "s", Sources: []Source{{"Secret", "db", "812"}}}
	for _, c := range [][3]string{{"Secret", "db", "813"}, {"ConfigMap", "db", "812"}, {"Secret", "dbx", "812"}} {
		if n.Covers(c[0], c[1], c[2]) {
			t.Errorf("covers %v", c)
		}
	}
}

// TestParseRefusesWhatTheManagerNeverWrites: the note is tenant-writable
// input; anything but the manager's format is refused, not half-read.
func TestParseRefusesWhatTheManagerNeverWrites(t *testing.T) {
	for _, s := range []string{
		"",
		"stamp",
		";2026-12-01T23:00:00Z;",
		"stamp;yesterday;",
		"stamp;;Secret/db",
		"stamp;;Secret/@1",
		"stamp;;Pod/db@1",
		"stamp;;Secret/db@1,",
		"stamp;;Secret/d/b@1",
		"stamp;;Secret/db@1@2",
		"stamp;;;",
		"st,amp;;",
		"stamp;;" + strings.Repeat("Secret/db@1,", 400) + "Secret/db@1",
	} {
		if n, err := Parse(s); err == nil {
			t.Errorf("Parse(%q) = %+v, want an error", s, n)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add("2026-12-01T23:00:00.1Z;2026-12-01T23:00:00Z;Secret/db@812,ConfigMap/x@9")
	f.Fuzz(func(t *testing.T, s string) {
		n, err := Parse(s)
		if err != nil {
			return
		}
		again, err := Parse(n.String())
		if err != nil || again.String() != n.String() {
			t.Fatalf("%q parsed to %+v, which does not read back: %v", s, n, err)
		}
	})
}
