package evidence

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// maxLen bounds a note read back: a workload annotation is tenant-written
// input, and a real note names a handful of sources.
const maxLen = 4096

// Source is one Secret or ConfigMap version a restart answered.
type Source struct {
	Kind            string // "Secret" or "ConfigMap"
	Name            string
	ResourceVersion string
}

// Note is what a restart applied ahead of its bookkeeping answered.
type Note struct {
	// Stamp is the restart value written with the note (the workload's
	// restartedAt); the note speaks for that restart only.
	Stamp string
	// Change is the newest change the restart answered.
	Change time.Time
	// Sources are the versions whose records were still being written.
	Sources []Source
}

// String formats n as "<stamp>;<change>;<Kind>/<name>@<rv>,...".
func (n Note) String() string {
	var b strings.Builder
	b.WriteString(n.Stamp)
	b.WriteByte(';')
	if !n.Change.IsZero() {
		b.WriteString(n.Change.UTC().Format(time.RFC3339Nano))
	}
	b.WriteByte(';')
	for i, s := range n.Sources {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(s.Kind + "/" + s.Name + "@" + s.ResourceVersion)
	}
	return b.String()
}

var errMalformed = errors.New("not a restart note")

// Parse reads a note written by String. Anything else (a note edited by
// hand, or one too long to be the manager's) is an error.
func Parse(s string) (Note, error) {
	if len(s) > maxLen {
		return Note{}, fmt.Errorf("%w: %d bytes", errMalformed, len(s))
	}
	parts := strings.Split(s, ";")
	if len(parts) != 3 || parts[0] == "" || strings.ContainsAny(parts[0], ",@/") {
		return Note{}, errMalformed
	}
	n := Note{Stamp: parts[0]}
	if parts[1] != "" {
		t, err := time.Parse(time.RFC3339Nano, parts[1])
		if err != nil {
			return Note{}, fmt.Errorf("%w: change: %v", errMalformed, err)
		}
		n.Change = t
	}
	if parts[2] == "" {
		return n, nil
	}
	for _, item := range strings.Split(parts[2], ",") {
		kind, rest, ok1 := strings.Cut(item, "/")
		name, rv, ok2 := strings.Cut(rest, "@")
		if !ok1 || !ok2 || (kind != "Secret" && kind != "ConfigMap") || name == "" || rv == "" || strings.ContainsAny(name+rv, "/@") {
			return Note{}, fmt.Errorf("%w: source %q", errMalformed, item)
		}
		n.Sources = append(n.Sources, Source{Kind: kind, Name: name, ResourceVersion: rv})
	}
	return n, nil
}

// Covers reports whether the note names the version resourceVersion of
// Secret or ConfigMap kind/name.
func (n Note) Covers(kind, name, resourceVersion string) bool {
	for _, s := range n.Sources {
		if s.Kind == kind && s.Name == name && s.ResourceVersion == resourceVersion {
			return true
		}
	}
	return false
}
